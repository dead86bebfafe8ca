/**
 * The errors every capability answers with. Each one is a schema whose wire
 * form is the spec's `{ "error": "..." }` (plus optional `code` and
 * `details`), and whose HTTP status lives here, on the contract, so handlers
 * never pick a status themselves.
 */
import { Schema } from "effect"

export const ErrorDetail = Schema.Struct({ path: Schema.String, message: Schema.String })
export type ErrorDetail = typeof ErrorDetail.Type

const fields = {
  error: Schema.String,
  code: Schema.optionalKey(Schema.String),
  details: Schema.optionalKey(Schema.Array(ErrorDetail))
}

type Fields = { readonly error: string; readonly code?: string; readonly details?: ReadonlyArray<ErrorDetail> }

/** The wire form and status of each; `description` is what `/openapi.json` says of the status. */
export class BadRequest extends Schema.Error<BadRequest>("BadRequest")(fields, {
  httpApiStatus: 400,
  description: "Unparsable JSON, a missing envelope or an undecodable cursor"
}) {
  readonly _tag = "BadRequest" as const
}
export class Unauthorized extends Schema.Error<Unauthorized>("Unauthorized")(fields, {
  httpApiStatus: 401,
  description: "Missing or invalid API key"
}) {
  readonly _tag = "Unauthorized" as const
}
export class PaymentRequired extends Schema.Error<PaymentRequired>("PaymentRequired")(fields, {
  httpApiStatus: 402,
  description: "The project's plan lacks the feature, or its allowance is used up"
}) {
  readonly _tag = "PaymentRequired" as const
}
export class Forbidden extends Schema.Error<Forbidden>("Forbidden")(fields, {
  httpApiStatus: 403,
  description: "Refused by a sandbox restriction or a private source address"
}) {
  readonly _tag = "Forbidden" as const
}
export class NotFound extends Schema.Error<NotFound>("NotFound")(fields, {
  httpApiStatus: 404,
  description: "Unknown id in the project (other projects' ids included)"
}) {
  readonly _tag = "NotFound" as const
  /** Which resource was not found, for logs and callers; not on the wire (the body stays `{ error }`). */
  declare readonly resource?: string
  /** The id that was asked for, when the caller gave it; not on the wire either. */
  declare readonly id?: string
}
export class Conflict extends Schema.Error<Conflict>("Conflict")(fields, {
  httpApiStatus: 409,
  description: "Stale `lock_version`, or the same work is already pending"
}) {
  readonly _tag = "Conflict" as const
}
export class PayloadTooLarge extends Schema.Error<PayloadTooLarge>("PayloadTooLarge")(fields, {
  httpApiStatus: 413,
  description: "The body is over the route's size limit"
}) {
  readonly _tag = "PayloadTooLarge" as const
}
export class RequestTimeout extends Schema.Error<RequestTimeout>("RequestTimeout")(fields, {
  httpApiStatus: 408,
  description: "The request's headers and body did not arrive in time (Node's request timeout)"
}) {
  readonly _tag = "RequestTimeout" as const
}
export class HeadersTooLarge extends Schema.Error<HeadersTooLarge>("HeadersTooLarge")(fields, {
  httpApiStatus: 431,
  description: "The request line and headers are over the limit"
}) {
  readonly _tag = "HeadersTooLarge" as const
}
export class Unprocessable extends Schema.Error<Unprocessable>("Unprocessable")(fields, {
  httpApiStatus: 422,
  description: "A validation or business-rule refusal, naming the field where there is one"
}) {
  readonly _tag = "Unprocessable" as const
  /** The field refused (a dotted path such as `workflow.name`), for logs and callers; not on the wire. */
  declare readonly field?: string
  /** Why it was refused (`must be 1-200 characters`); not on the wire either. */
  declare readonly reason?: string
}
export class TooManyRequests extends Schema.Error<TooManyRequests>("TooManyRequests")(fields, {
  httpApiStatus: 429,
  description: "Over a rate limit (`Retry-After` says when to try again)"
}) {
  readonly _tag = "TooManyRequests" as const
}
export class InternalError extends Schema.Error<InternalError>("InternalError")(fields, {
  httpApiStatus: 500,
  description: "An unexpected failure (the detail is in the host's log, never in the answer)"
}) {
  readonly _tag = "InternalError" as const
}
export class BadGateway extends Schema.Error<BadGateway>("BadGateway")(fields, {
  httpApiStatus: 502,
  description: "An upstream dependency failed"
}) {
  readonly _tag = "BadGateway" as const
}
export class Unavailable extends Schema.Error<Unavailable>("Unavailable")(fields, {
  httpApiStatus: 503,
  description: "Temporarily unavailable (`Retry-After` says when to try again)"
}) {
  readonly _tag = "Unavailable" as const
}

/** Every error an endpoint may answer with, for contract declarations. */
export const CommonErrors = [BadRequest, Unauthorized, NotFound, Unprocessable, InternalError] as const

/** `{ "error": "<resource> not found" }`, carrying the resource and the id asked for as facts beside it. */
export const notFound = (resource: string, id: string): NotFound =>
  Object.assign(new NotFound({ error: `${resource} not found` }), { resource, id })

/** `{ "error": "<resource> <id> not found" }`: the wording of the places that name what they looked for. */
export const notFoundNamed = (resource: string, id: string): NotFound =>
  Object.assign(new NotFound({ error: `${resource} ${id} not found` }), { resource, id })

/**
 * A refusal with `error` as its text (and `details` on the wire when given). The first detail names the field and
 * the reason, carried as facts beside the body.
 */
export const unprocessable = (error: string, details?: ReadonlyArray<ErrorDetail>): Unprocessable => {
  if (details === undefined || details.length === 0) return new Unprocessable({ error })
  return Object.assign(new Unprocessable({ error, details }), { field: details[0]!.path, reason: details[0]!.message })
}

/**
 * A validation refusal of one field: `{ "error": "<field> <reason>" }` on the wire (or the `error` text the
 * domain has always answered with), with `field` and `reason` carried as facts beside it (no `details`: the body
 * clients see stays the same).
 */
export const invalid = (field: string, reason: string, error = `${field} ${reason}`): Unprocessable =>
  Object.assign(new Unprocessable({ error }), { field, reason })

export const staleLockVersion = () =>
  new Conflict({ error: "lock_version is stale; reload and retry", code: "stale_lock_version" })

export type ApiError =
  | BadRequest
  | Unauthorized
  | PaymentRequired
  | Forbidden
  | NotFound
  | Conflict
  | PayloadTooLarge
  | Unprocessable
  | TooManyRequests
  | InternalError
  | BadGateway
  | Unavailable

export type { Fields as ApiErrorFields }
