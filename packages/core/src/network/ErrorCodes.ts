/**
 * The network's error objects, as the simulator answers them (decisions §7.3):
 * `{ "error": { "message": "(#<code>) <title>", "type", "code", "error_data":
 * { "messaging_product", "details" }, "error_subcode"?, "fbtrace_id" } }`
 * with the HTTP status the network uses for the code; and the simulator's own
 * `SimulatorInputError`, for what its control surface cannot carry out.
 */
import { Schema } from "effect"
import { MessagingProduct } from "./NetworkObjects.ts"

interface CodeInfo {
  readonly title: string
  readonly status: number
  readonly type?: string
}

/** Every code the simulator answers with, its title and HTTP status. */
export const networkCodes: Readonly<Record<number, CodeInfo>> = {
  0: { title: "AuthException", status: 401 },
  2: { title: "Service temporarily unavailable", status: 503 },
  10: { title: "Application does not have permission for this action", status: 403 },
  100: { title: "Invalid parameter", status: 400 },
  190: { title: "Invalid OAuth access token", status: 401 },
  130429: { title: "Rate limit hit", status: 400 },
  131008: { title: "Required parameter is missing", status: 400 },
  131009: { title: "Parameter value is not valid", status: 400 },
  131021: { title: "Recipient cannot be sender", status: 400 },
  131026: { title: "Message undeliverable", status: 400 },
  131031: { title: "Business Account locked", status: 403 },
  131047: { title: "Re-engagement message", status: 400 },
  131051: { title: "Unsupported message type", status: 400 },
  131053: { title: "Media upload error", status: 400 },
  131056: { title: "(Business Account, Consumer Account) pair rate limit hit", status: 400 },
  132000: { title: "Number of parameters does not match the expected number of params", status: 400 },
  132001: { title: "Template name does not exist in the translation", status: 404 },
  132005: { title: "Translated text too long", status: 400 },
  132012: { title: "Parameter format does not match format in the created template", status: 400 },
  132015: { title: "Template is Paused", status: 400 },
  132016: { title: "Template is Disabled", status: 400 },
  133010: { title: "Account not registered", status: 400 },
  139100: { title: "Failed to block/unblock users", status: 400 }
}

/** A refusal before it is rendered: code, details, and optionally a subcode, a status or extra top-level members. */
export interface SimError {
  readonly _tag: "SimError"
  readonly code: number
  readonly details: string
  readonly subcode?: number | undefined
  /** Overrides the code's usual HTTP status (a 404 for an absent username, ...). */
  readonly status?: number | undefined
  readonly type?: string | undefined
  /** Members added next to `error` (the `block_users` detail of a 139100). */
  readonly extra?: Readonly<Record<string, unknown>> | undefined
}

export const simError = (
  code: number,
  details: string,
  more: Omit<SimError, "_tag" | "code" | "details"> = {}
): SimError => ({
  _tag: "SimError",
  code,
  details,
  ...more
})

/** "Object does not exist, cannot be loaded due to missing permissions, or does not support this operation". */
export const unknownObject = (method: string, id: string): SimError =>
  simError(
    100,
    `Unsupported ${method.toLowerCase()} request. Object with ID '${id}' does not exist, ` +
      "cannot be loaded due to missing permissions, or does not support this operation",
    { subcode: 33, type: "GraphMethodException" }
  )

export const statusOf = (error: SimError): number => error.status ?? networkCodes[error.code]?.status ?? 400

/** The body of an error answer. */
export const errorBody = (error: SimError, traceId: string): Record<string, unknown> => {
  const info = networkCodes[error.code]
  return {
    error: {
      message: `(#${error.code}) ${info?.title ?? "Unknown error"}`,
      type: error.type ?? info?.type ?? "OAuthException",
      code: error.code,
      error_data: { messaging_product: MessagingProduct, details: error.details },
      ...(error.subcode !== undefined ? { error_subcode: error.subcode } : {}),
      fbtrace_id: traceId
    },
    ...error.extra
  }
}

/** An error inside a webhook (failed statuses): `{ code, title, message, error_data: { details } }`. */
export const webhookError = (code: number, details: string) => {
  const title = networkCodes[code]?.title ?? "Unknown error"
  return { code, title, message: title, error_data: { details } }
}

export { SimulatorInputError } from "./SimulatedNetwork.ts"
import { SimulatorInputError } from "./SimulatedNetwork.ts"

export const unknownNumber = (phoneNumberId: string) =>
  new SimulatorInputError({ message: `unknown phone_number_id ${phoneNumberId}` })
