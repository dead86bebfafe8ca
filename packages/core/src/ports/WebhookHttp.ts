/**
 * Outbound HTTP to addresses users give: webhook deliveries (one POST of
 * exact bytes, the first 1 KB of the answer kept for the log), the workflow
 * `webhook` node (any method, the answer's headers and its body up to a cap
 * the caller sets), and the name resolution the registration check needs.
 * The Node host provides the real adapter (`@parley/http-node`); tests
 * provide a scripted receiver.
 *
 * An adapter follows no redirect (a 3xx is an answer like any other), and
 * unless `allowPrivate` is set it refuses to connect to a private, loopback,
 * link-local or otherwise reserved address (`shared/PrivateAddress.ts`),
 * connecting to the very address it checked, so DNS cannot re-point a name
 * between the check and the connection.
 */
import { Context, type Effect, Schema } from "effect"

export interface WebhookHttpRequest {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  /** Sent exactly as given. */
  readonly body: Uint8Array
  /**
   * The whole exchange (connecting, waiting, reading) ends after this long with a `timeout` failure,
   * `Timed out after <seconds> s`; an adapter with no real network (the memory one) measures it on the `Clock`.
   */
  readonly timeoutMs: number
  /** Connect to private and loopback addresses too (`PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS=true`). */
  readonly allowPrivate: boolean
}

export interface WebhookHttpResponse {
  readonly status: number
  /** At most the first 1,024 bytes of the answer's body, as text. */
  readonly body: string
}

export type WebhookHttpMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE"

/** One request of any method; the same address rules and timeout as `WebhookHttpRequest`. */
export interface WebhookHttpCall {
  readonly method: WebhookHttpMethod
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  /** Sent exactly as given; none sends no body (and no Content-Length). */
  readonly body?: Uint8Array | undefined
  readonly timeoutMs: number
  readonly allowPrivate: boolean
  /** The answer's body is read up to this many bytes; the rest is dropped and `truncated` set. */
  readonly maxBodyBytes: number
}

export interface WebhookHttpAnswer {
  readonly status: number
  /** Header names in lowercase; repeated headers joined with `, `. */
  readonly headers: Readonly<Record<string, string>>
  /** The body read (at most `maxBodyBytes`), as UTF-8 text. */
  readonly body: string
  /** The body was longer than `maxBodyBytes`. */
  readonly truncated: boolean
}

/** A GET whose answer is kept as bytes (media ingest); the same address rules and timeout as `WebhookHttpRequest`. */
export interface WebhookHttpFetch {
  readonly url: string
  readonly timeoutMs: number
  readonly allowPrivate: boolean
  /**
   * At most this many bytes of the body are ever held; past it reading stops and `truncated` is set. A function
   * decides from the answer's headers (lowercase names), once they arrive.
   */
  readonly maxBodyBytes: number | ((headers: Readonly<Record<string, string>>) => number)
}

export interface WebhookHttpBytes {
  readonly status: number
  /** Header names in lowercase; repeated headers joined with `, `. */
  readonly headers: Readonly<Record<string, string>>
  /** At most `maxBodyBytes`. */
  readonly body: Uint8Array
  readonly truncated: boolean
}

/** No answer: refused address, DNS failure, connection error, timeout. `message` goes to the delivery log. */
export class WebhookHttpError extends Schema.TaggedError<WebhookHttpError>()("WebhookHttpError", {
  reason: Schema.Literals(["private_address", "dns", "connection", "timeout", "invalid_url"]),
  message: Schema.String
}) {}

export class WebhookHttp extends Context.Service<WebhookHttp, {
  readonly post: (request: WebhookHttpRequest) => Effect.Effect<WebhookHttpResponse, WebhookHttpError>
  /** One request of any method, its answer's status, headers and body (up to `maxBodyBytes`). */
  readonly request: (call: WebhookHttpCall) => Effect.Effect<WebhookHttpAnswer, WebhookHttpError>
  /** One GET, its body as bytes up to `maxBodyBytes`; a redirect is an answer like any other (the caller follows it). */
  readonly fetch: (call: WebhookHttpFetch) => Effect.Effect<WebhookHttpBytes, WebhookHttpError>
  /** Every address the name resolves to (an IP literal answers itself); fails with reason `dns`. */
  readonly resolve: (hostname: string) => Effect.Effect<ReadonlyArray<string>, WebhookHttpError>
}>()("@parley/core/ports/WebhookHttp") {}
