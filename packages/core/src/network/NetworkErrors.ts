/**
 * What the messaging proxy answers when it does not succeed (decisions 7.3, 7.4): the network's error object
 * (passed through unchanged, or made by the service in the network's shape: unknown ids, bad parameters, the
 * 24-hour window, an unreachable network), or the service's own flat `{ "error", "code" }` (a missing or wrong API
 * key, an unreadable or oversized body, refusals of its own). The document states it on every proxy operation, at
 * every status the network or the proxy answers (`completeDocument`). Only there: like the proxy's answers, its
 * errors pass through undecoded, so the typed client reads them as any undeclared error (status and body).
 */
import { Schema } from "effect"

/** The network's error object; it may carry more fields than these, kept as they came. */
const NetworkErrorBody = Schema.Struct({
  error: Schema.StructWithRest(
    Schema.Struct({
      message: Schema.String,
      type: Schema.String,
      code: Schema.Int,
      error_subcode: Schema.optionalKey(Schema.Int),
      error_data: Schema.optionalKey(Schema.Unknown),
      fbtrace_id: Schema.optionalKey(Schema.String)
    }),
    [Schema.Record(Schema.String, Schema.Unknown)]
  )
}).annotate({
  description: "The messaging network's error object: its own answer unchanged, or one the service made in its shape",
  examples: [{
    error: { message: "(#100) Invalid parameter", type: "OAuthException", code: 100, fbtrace_id: "AbCdEf123" }
  }]
})

/** The service's own refusal: `{ "error": "...", "code"?: "..." }`, some with facts of their own. */
const ProxyRefusal = Schema.StructWithRest(
  Schema.Struct({ error: Schema.String, code: Schema.optionalKey(Schema.String) }),
  [Schema.Record(Schema.String, Schema.Unknown)]
).annotate({ description: "The service's own refusal (a missing or wrong API key, an unreadable body, ...)" })

/** The statuses a proxied answer comes with besides success, and who answers them. */
export const PROXY_ERROR_STATUSES: ReadonlyArray<readonly [status: string, description: string]> = [
  ["400", "A bad request: the network's error (code 100 for a bad parameter or a path naming no object) or an unreadable body"],
  ["401", "A missing or wrong API key (the service), or a token the network refuses"],
  ["403", "The network refuses the number's permissions"],
  ["404", "A number, business account, media or template id that is not the project's (code 100), or the network's own 404"],
  ["413", "The request body is over the proxy's limit"],
  ["422", "Outside the 24-hour window (131047) and the service's account rules, or the network's own 422"],
  ["429", "The key's rate limit (the service: `Rate limit exceeded`, `Retry-After`), or the network's"],
  ["500", "The network's own failure, passed through"],
  ["502", "The network could not be reached (131016)"],
  ["503", "The network is unavailable, passed through"]
]

/** The JSON Schema of a proxy error body (either shape), for the document's components. */
export const proxyErrorJsonSchema = Schema.toJsonSchemaDocument(Schema.Union([NetworkErrorBody, ProxyRefusal])).schema
