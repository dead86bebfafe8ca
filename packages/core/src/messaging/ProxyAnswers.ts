/**
 * What the proxy answers (decisions 7.3, 7.4): the network's own answers
 * byte for byte, and the ones the service makes in the network's error shape
 * or as its own flat refusals. Shared by the proxy's routes.
 */
import type { Withheld } from "../guardrails/Guardrail.ts"
import { Data, Effect, Option } from "effect"
import {
  type NetworkAnswer,
  type NetworkError,
  type NetworkUnavailable,
  rawAnswer,
  type RawNetworkAnswer
} from "../network/MessagingNetwork.ts"
import { parseJson as readJson } from "../shared/Json.ts"
import type { MessageConfigRecord } from "./numbers/MessageConfig.ts"

export type Json = Record<string, unknown>

/** What the proxy answers: status, content type and body bytes, as the network sent them or as the service made them. */
export type ProxyAnswer = RawNetworkAnswer

const encoder = new TextEncoder()
const decoder = new TextDecoder()

export const json = (status: number, body: unknown): ProxyAnswer => ({
  status,
  contentType: "application/json",
  body: encoder.encode(JSON.stringify(body))
})

/**
 * An error the service synthesises to mirror a network rule (decisions 7.3):
 * the network's error object, `type` `MessageError`, without a trace id.
 */
export const networkStyleError = (
  status: number,
  code: number,
  message: string,
  options: { readonly subcode?: number | undefined; readonly details?: string | undefined } = {}
): ProxyAnswer =>
  json(status, {
    error: {
      message,
      type: "MessageError",
      code,
      error_data: { messaging_product: "whatsapp", details: options.details ?? message },
      ...(options.subcode !== undefined ? { error_subcode: options.subcode } : {})
    }
  })

/** A service-specific refusal (decisions 7.4): flat `{ error, code }`. */
export const serviceRefusal = (status: number, code: string, error: string, extra: Json = {}): ProxyAnswer =>
  json(status, { error, code, ...extra })

/** 404 for a number, business account or media id that is not the project's (decisions 4.10). */
export const unknownObject = (id: string): ProxyAnswer =>
  networkStyleError(
    404,
    100,
    `(#100) Unsupported request - object with ID '${id}' does not exist, cannot be loaded due to missing permissions, or does not support this operation`,
    { details: `Object with ID '${id}' not found in this project` }
  )

/** The network could not be reached and sent nothing back. */
export const unreachable = (detail: string): ProxyAnswer =>
  networkStyleError(502, 131016, "(#131016) Service unavailable", { details: `The messaging network could not be reached: ${detail}` })

export const outsideWindow = (): ProxyAnswer =>
  networkStyleError(422, 131047, "Only template messages can be sent outside the 24-hour window", {
    subcode: 131047,
    details: "Message failed to send because more than 24 hours have passed since the customer last replied to this number."
  })

/** Decisions 7.4: the service's own refusal, flat `{ error, code }`. */
export const accountMismatch = (mediaId: string): ProxyAnswer =>
  json(422, {
    error: `Media ${mediaId} was uploaded through another business account than the sending number's`,
    code: "messaging_account_mismatch"
  })

/** The guardrails' refusal (opt-out, frequency cap): the service's own, flat `{ error, code }` with the reason as code. */
export const withheldAnswer = (withheld: Withheld): ProxyAnswer =>
  json(422, { error: withheld.message, code: withheld.reason, ...(withheld.until !== null ? { until: withheld.until } : {}) })

/** A query parameter the proxy cannot use: the network's invalid-parameter error (code 100). */
export const invalidParameter = (status: number, message: string): ProxyAnswer =>
  networkStyleError(status, 100, `(#100) ${message}`, { details: message })

/** The methods the network's Graph API serves; the proxy takes no other. */
export const PROXY_METHODS = ["GET", "POST", "DELETE"] as const

/**
 * 405 for a method the network does not serve (`PUT`, `PATCH`, ...): its error object (code 100, subcode 33, the
 * network's `Unsupported put request` words, so an SDK reads it as it reads the network's) at the status HTTP has for
 * it; the route's `Allow` names the methods taken.
 */
export const unsupportedMethod = (method: string): ProxyAnswer => {
  const reason = `Unsupported ${method.toLowerCase()} request: the proxy takes ${PROXY_METHODS.join(", ")}`
  return networkStyleError(405, 100, `(#100) ${reason}`, { subcode: 33, details: reason })
}

/** A read refused before it reached storage: its answer is ready. */
export class Refusal extends Data.TaggedError("ProxyRefusal")<{ readonly answer: ProxyAnswer }> {}

export const refuse = (answer: ProxyAnswer) => Effect.fail(new Refusal({ answer }))

export const answered = (effect: Effect.Effect<ProxyAnswer, Refusal>): Effect.Effect<ProxyAnswer> =>
  Effect.catchTag(effect, "ProxyRefusal", (r) => Effect.succeed(r.answer))

export const parseJson = (bytes: Uint8Array): unknown => Option.getOrUndefined(readJson(decoder.decode(bytes)))

export const orUnreachable = (effect: Effect.Effect<ProxyAnswer, NetworkUnavailable>) =>
  Effect.catchTag(effect, "NetworkUnavailable", (e) => Effect.succeed(unreachable(e.reason)))

/** A network call's answer as it came, or the service's unreachable answer. */
export const forwarded = <A>(call: Effect.Effect<NetworkAnswer<A>, NetworkError>) => orUnreachable(rawAnswer(call))

/** The project's live number with that network id, or the network's unknown-object refusal. */
export const ownNumberOf = (
  number: (projectId: string, phoneNumberId: string) => Effect.Effect<Option.Option<MessageConfigRecord>>
) =>
(projectId: string, phoneNumberId: string) =>
  number(projectId, phoneNumberId).pipe(
    Effect.flatMap(Option.match({
      onNone: () => refuse(unknownObject(phoneNumberId)),
      onSome: Effect.succeed
    }))
  )
