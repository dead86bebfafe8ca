/**
 * The messaging network's error object, as the proxy answers it (decisions 7.3): read from a proxy call's failure.
 * The proxy's answers are the network's, so the contract declares no error schema for them and the Effect client
 * fails with effect's `HttpClientError` (`StatusCode error (422 ...)`); `networkErrorOf` reads the object the
 * network sent back. The Promise facade puts it in `ParleyError.network`.
 */
import { Effect, Option, Schema } from "effect"
import { HttpClientError } from "effect/http"

export const NetworkErrorObject = Schema.Struct({
  message: Schema.String,
  type: Schema.optionalKey(Schema.String),
  code: Schema.Number,
  error_subcode: Schema.optionalKey(Schema.Number),
  error_data: Schema.optionalKey(Schema.Struct({
    messaging_product: Schema.optionalKey(Schema.String),
    details: Schema.optionalKey(Schema.String)
  })),
  fbtrace_id: Schema.optionalKey(Schema.String)
})
export type NetworkErrorObject = typeof NetworkErrorObject.Type

/** `{ "error": <the network's error object> }` of an answer body, if it is one. */
export const decodeNetworkErrorBody = Schema.decodeUnknownOption(Schema.Struct({ error: NetworkErrorObject }))

/**
 * The network's error object of a failed proxy call (any failure of the Effect client's `proxy.*` methods): its
 * message, code, subcode, details; none when the failure had no answer or the answer is not the network's shape.
 *
 *   client.proxy.send(...).pipe(Effect.catch((e) => Effect.flatMap(networkErrorOf(e), ...)))
 */
export const networkErrorOf = (failure: unknown): Effect.Effect<Option.Option<NetworkErrorObject>> => {
  if (!HttpClientError.isHttpClientError(failure) || failure.response === undefined) return Effect.succeed(Option.none())
  return failure.response.json.pipe(
    Effect.option,
    Effect.map((json) => Option.map(Option.flatMap(json, decodeNetworkErrorBody), (body) => body.error))
  )
}
