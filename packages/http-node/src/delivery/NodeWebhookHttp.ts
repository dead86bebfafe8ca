/**
 * `WebhookHttp` on Node's `http`/`https`: one POST of the exact bytes, no
 * redirect followed, at most the first 1 KB of the answer read, the request
 * abandoned on timeout or interruption. Unless private targets are allowed,
 * a literal address is checked before connecting and a name is resolved by
 * `publicOnlyLookup`, so the connection goes to the address that was checked.
 */
import {
  isPrivateAddress,
  PrivateAddressRefused,
  publicOnlyLookup,
  WebhookHttp,
  WebhookHttpError,
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
const post = (request: WebhookHttpRequest): Effect.Effect<WebhookHttpResponse, WebhookHttpError> =>
  postOnce(request).pipe(
    Effect.catch((error) => error instanceof StaleConnection ? postOnce(request) : Effect.fail(error)),
    Effect.catch((error) =>
      error instanceof StaleConnection
        ? Effect.fail(new WebhookHttpError({ reason: "connection", message: error.message }))
        : Effect.fail(error)
    )
  )

class StaleConnection extends Error {}

const postOnce = (request: WebhookHttpRequest) =>
  Effect.callback<WebhookHttpResponse, WebhookHttpError | StaleConnection>((resume) => {
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
    const settle = (effect: Effect.Effect<WebhookHttpResponse, WebhookHttpError | StaleConnection>) => {
      if (settled) return
      settled = true
      clearTimeout(deadline)
      resume(effect)
    }
    const https = url.protocol === "https:"
    const req = (https ? Https : Http).request(url, {
      method: "POST",
      headers: { ...request.headers, "Content-Length": String(request.body.byteLength) },
      agent: https ? agents.https : agents.http,
      ...(request.allowPrivate ? {} : { lookup: publicOnlyLookup as unknown as Net.LookupFunction })
    })
    req.on("response", (res) => {
      const chunks: Array<Buffer> = []
      let size = 0
      const finish = () =>
        settle(Effect.succeed({
          status: res.statusCode ?? 0,
          body: Buffer.concat(chunks).subarray(0, BODY_LIMIT).toString("utf8")
        }))
      res.on("data", (chunk: Buffer) => {
        chunks.push(chunk)
        size += chunk.length
        // Enough for the log: stop reading (the connection goes with it).
        if (size >= BODY_LIMIT) {
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
    req.end(Buffer.from(request.body.buffer, request.body.byteOffset, request.body.byteLength))
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

/** Webhook deliveries over Node's HTTP stack. */
export const layerNodeWebhookHttp = Layer.succeed(WebhookHttp, WebhookHttp.of({ post, resolve }))
