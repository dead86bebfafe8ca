/**
 * `WebhookHttp` on Node's `http`/`https`: deliveries (one POST of the exact
 * bytes, at most the first 1 KB of the answer read) and the workflow
 * `webhook` node's requests (any method, the answer's headers and body up to
 * the caller's cap), and media ingest's GETs (the body as bytes, never more
 * than the caller's cap held). No redirect is followed, and a request is abandoned on
 * timeout or interruption. Unless private targets are allowed, a literal
 * address is checked before connecting and a name is resolved by
 * `publicOnlyLookup`, so the connection goes to the address that was checked.
 */
import {
  isPrivateAddress,
  PrivateAddressRefused,
  publicOnlyLookup,
  WebhookHttp,
  WebhookHttpError,
  type WebhookHttpAnswer,
  type WebhookHttpBytes,
  type WebhookHttpCall,
  type WebhookHttpFetch,
  type WebhookHttpRequest,
  type WebhookHttpResponse
} from "@parley/core"
import { Effect, Layer } from "effect"
import * as Dns from "node:dns"
import * as Http from "node:http"
import * as Https from "node:https"
import * as Net from "node:net"

const BODY_LIMIT = 1024

// Keep-alive: deliveries to one receiver reuse their connections, one per attempt running at once (128 by default).
const agents = {
  http: new Http.Agent({ keepAlive: true, maxSockets: 128 }),
  https: new Https.Agent({ keepAlive: true, maxSockets: 128 })
}

// The webhook node's requests are never made twice (decisions 10.4), so they never ride a kept-alive connection
// the receiver may have closed: a fresh connection each, so a failure before the answer is a real failure.
const freshAgents = {
  http: new Http.Agent({ keepAlive: false }),
  https: new Https.Agent({ keepAlive: false })
}

const bareHost = (hostname: string) => hostname.startsWith("[") ? hostname.slice(1, -1) : hostname

const privateRefusal = (hostname: string) =>
  new WebhookHttpError({
    reason: "private_address",
    message: `url host ${hostname} resolves to a private, loopback or link-local address`
  })

/**
 * One POST. A kept-alive connection the receiver closed just as it was reused
 * fails before any answer (`ECONNRESET` on `reusedSocket`): the request never
 * reached the receiver, so it is made once more on a fresh connection.
 */
const post = (request: WebhookHttpRequest): Effect.Effect<WebhookHttpResponse, WebhookHttpError> => {
  const once = exchange({ ...request, method: "POST" }, agents, BODY_LIMIT).pipe(
    Effect.map(({ body, status }): WebhookHttpResponse => ({ status, body: text(body) }))
  )
  return once.pipe(
    Effect.catch((error) => error instanceof StaleConnection ? once : Effect.fail(error)),
    Effect.catch((error) =>
      error instanceof StaleConnection
        ? Effect.fail(new WebhookHttpError({ reason: "connection", message: error.message }))
        : Effect.fail(error)
    )
  )
}

const text = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8")

const fresh = <A>(effect: Effect.Effect<A, WebhookHttpError | StaleConnection>) =>
  effect.pipe(
    Effect.catch((error) =>
      error instanceof StaleConnection
        ? Effect.fail(new WebhookHttpError({ reason: "connection", message: error.message }))
        : Effect.fail(error)
    )
  )

/** One request of the webhook node: a fresh connection, no second try. */
const request = (call: WebhookHttpCall): Effect.Effect<WebhookHttpAnswer, WebhookHttpError> =>
  fresh(exchange(call, freshAgents, call.maxBodyBytes)).pipe(Effect.map((answer) => ({ ...answer, body: text(answer.body) })))

/** One GET of media ingest, its body kept as bytes. */
const fetchBytes = (call: WebhookHttpFetch): Effect.Effect<WebhookHttpBytes, WebhookHttpError> =>
  fresh(exchange({ ...call, method: "GET", headers: {} }, freshAgents, call.maxBodyBytes))

const answerHeaders = (headers: Http.IncomingHttpHeaders): Record<string, string> =>
  Object.fromEntries(
    Object.entries(headers).flatMap(([name, value]) =>
      value === undefined ? [] : [[name.toLowerCase(), Array.isArray(value) ? value.join(", ") : value]]
    )
  )

class StaleConnection extends Error {}

const exchange = (
  request: Omit<WebhookHttpCall, "maxBodyBytes">,
  pool: typeof agents,
  cap: WebhookHttpFetch["maxBodyBytes"]
): Effect.Effect<WebhookHttpBytes, WebhookHttpError | StaleConnection> =>
  Effect.callback<WebhookHttpBytes, WebhookHttpError | StaleConnection>((resume) => {
    let url: URL
    try {
      url = new URL(request.url)
    } catch {
      resume(Effect.fail(new WebhookHttpError({ reason: "invalid_url", message: `Invalid URL ${request.url}` })))
      return
    }
    if (url.protocol !== "https:" && url.protocol !== "http:") {
      resume(Effect.fail(new WebhookHttpError({ reason: "invalid_url", message: `Unsupported URL scheme ${url.protocol}` })))
      return
    }
    const hostname = bareHost(url.hostname)
    // An address literal never goes through `lookup`.
    if (!request.allowPrivate && Net.isIP(hostname) !== 0 && isPrivateAddress(hostname)) {
      resume(Effect.fail(privateRefusal(hostname)))
      return
    }
    let settled = false
    const settle = (effect: Effect.Effect<WebhookHttpBytes, WebhookHttpError | StaleConnection>) => {
      if (settled) return
      settled = true
      clearTimeout(deadline)
      resume(effect)
    }
    const https = url.protocol === "https:"
    const body = request.body
    const req = (https ? Https : Http).request(url, {
      method: request.method,
      headers: body === undefined ? { ...request.headers } : { ...request.headers, "Content-Length": String(body.byteLength) },
      agent: https ? pool.https : pool.http,
      ...(request.allowPrivate ? {} : { lookup: publicOnlyLookup as unknown as Net.LookupFunction })
    })
    req.on("response", (res) => {
      const headers = answerHeaders(res.headers)
      const maxBodyBytes = typeof cap === "number" ? cap : cap(headers)
      const chunks: Array<Buffer> = []
      let size = 0
      let kept = 0
      const finish = () =>
        settle(Effect.succeed({
          status: res.statusCode ?? 0,
          headers,
          body: new Uint8Array(Buffer.concat(chunks)),
          truncated: size > maxBodyBytes
        }))
      res.on("data", (chunk: Buffer) => {
        // Never more than the cap is held, whatever size the chunks come in.
        const room = maxBodyBytes - kept
        if (room > 0) {
          const part = chunk.length <= room ? chunk : chunk.subarray(0, room)
          chunks.push(part)
          kept += part.length
        }
        size += chunk.length
        // Past the cap: stop reading (the connection goes with it).
        if (size > maxBodyBytes) {
          finish()
          res.destroy()
        }
      })
      res.on("end", finish)
      res.on("close", finish)
      res.on("error", finish)
    })
    // One deadline for the whole exchange (connecting, waiting, reading), not an idle timer a trickle resets.
    const deadline = setTimeout(
      () => req.destroy(Object.assign(new Error(`Timed out after ${request.timeoutMs / 1000} s`), { code: "ETIMEDOUT_PARLEY" })),
      request.timeoutMs
    )
    req.on("error", (error: NodeJS.ErrnoException) => {
      if (error instanceof PrivateAddressRefused) return settle(Effect.fail(privateRefusal(hostname)))
      if (req.reusedSocket && (error.code === "ECONNRESET" || error.code === "EPIPE")) {
        return settle(Effect.fail(new StaleConnection(error.message)))
      }
      const reason = error.code === "ETIMEDOUT_PARLEY"
        ? "timeout"
        : error.code === "ENOTFOUND" || error.code === "EAI_AGAIN"
        ? "dns"
        : "connection"
      settle(Effect.fail(new WebhookHttpError({ reason, message: error.message })))
    })
    if (body === undefined) req.end()
    else req.end(Buffer.from(body.buffer, body.byteOffset, body.byteLength))
    // Interrupted (the caller's own timeout, a shutdown): drop the request.
    return Effect.sync(() => {
      settled = true
      clearTimeout(deadline)
      req.destroy()
    })
  })

const resolve = (hostname: string) =>
  Effect.tryPromise({
    try: () => Dns.promises.lookup(bareHost(hostname), { all: true }),
    catch: (error) =>
      new WebhookHttpError({
        reason: "dns",
        message: error instanceof Error ? error.message : `could not resolve ${hostname}`
      })
  }).pipe(Effect.map((addresses) => addresses.map((a) => a.address)))

/** Webhook deliveries and webhook node requests over Node's HTTP stack. */
export const layerNodeWebhookHttp = Layer.succeed(WebhookHttp, WebhookHttp.of({ post, request, fetch: fetchBytes, resolve }))
