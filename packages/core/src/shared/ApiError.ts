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

/** 400: unparsable JSON, missing envelope, undecodable cursor. */
export class BadRequest extends Schema.Error<BadRequest>("BadRequest")(fields, { httpApiStatus: 400 }) {
  readonly _tag = "BadRequest" as const
}
/** 401: missing or invalid API key. */
export class Unauthorized extends Schema.Error<Unauthorized>("Unauthorized")(fields, { httpApiStatus: 401 }) {
  readonly _tag = "Unauthorized" as const
}
/** 402: the project's plan lacks the feature or its allowance is used up. */
export class PaymentRequired
  extends Schema.Error<PaymentRequired>("PaymentRequired")(fields, { httpApiStatus: 402 })
{
  readonly _tag = "PaymentRequired" as const
}
/** 403: sandbox restrictions and refused source addresses. */
export class Forbidden extends Schema.Error<Forbidden>("Forbidden")(fields, { httpApiStatus: 403 }) {
  readonly _tag = "Forbidden" as const
}
/** 404: unknown id in the project (other projects' ids included: never 403). */
export class NotFound extends Schema.Error<NotFound>("NotFound")(fields, { httpApiStatus: 404 }) {
  readonly _tag = "NotFound" as const
}
/** 409: stale `lock_version`, work already pending. */
export class Conflict extends Schema.Error<Conflict>("Conflict")(fields, { httpApiStatus: 409 }) {
  readonly _tag = "Conflict" as const
}
/** 413: body over the size limit. */
export class PayloadTooLarge
  extends Schema.Error<PayloadTooLarge>("PayloadTooLarge")(fields, { httpApiStatus: 413 })
{
  readonly _tag = "PayloadTooLarge" as const
}
/** 431: the request line and headers together are over Node's limit (a very long query string too). */
export class HeadersTooLarge
  extends Schema.Error<HeadersTooLarge>("HeadersTooLarge")(fields, { httpApiStatus: 431 })
{
  readonly _tag = "HeadersTooLarge" as const
}
/** 422: validation and business-rule refusals. */
export class Unprocessable extends Schema.Error<Unprocessable>("Unprocessable")(fields, { httpApiStatus: 422 }) {
  readonly _tag = "Unprocessable" as const
}
/** 429: rate limits. */
export class TooManyRequests
  extends Schema.Error<TooManyRequests>("TooManyRequests")(fields, { httpApiStatus: 429 })
{
  readonly _tag = "TooManyRequests" as const
}
/** 500: unexpected failure; the detail goes to the log, never to the caller. */
export class InternalError extends Schema.Error<InternalError>("InternalError")(fields, { httpApiStatus: 500 }) {
  readonly _tag = "InternalError" as const
}
/** 502: an upstream dependency failed. */
export class BadGateway extends Schema.Error<BadGateway>("BadGateway")(fields, { httpApiStatus: 502 }) {
  readonly _tag = "BadGateway" as const
}
/** 503: temporarily unavailable. */
export class Unavailable extends Schema.Error<Unavailable>("Unavailable")(fields, { httpApiStatus: 503 }) {
  readonly _tag = "Unavailable" as const
}

/** Every error an endpoint may answer with, for contract declarations. */
export const CommonErrors = [BadRequest, Unauthorized, NotFound, Unprocessable, InternalError] as const

export const notFound = (what: string) => new NotFound({ error: `${what} not found` })
export const unprocessable = (error: string, details?: ReadonlyArray<ErrorDetail>) =>
  new Unprocessable(details === undefined || details.length === 0 ? { error } : { error, details })

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
