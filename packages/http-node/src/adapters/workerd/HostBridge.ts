/**
 * The host side of the workerd processes: a small HTTP server on a unix
 * socket in the supervisor's private directory, answering the dispatchers
 * (token header required) with
 *
 * - `GET /code?fn=&gen=`: a function's module source, 404 when unknown;
 * - `POST /start?ticket=`: whether an invocation may start (200) or was
 *   withdrawn by the host (409), asked before the user's code runs;
 * - `POST /kv?fn=`: one `env.KV` call, run against `FunctionKv`;
 * - `POST /outbound`: one hop of a function's `fetch`, made here so the
 *   private-address rule applies (`x-parley-url`, `x-parley-method` name the
 *   request; a refusal or network failure answers with
 *   `x-parley-outbound-error`, which the dispatcher turns into a rejected
 *   `fetch`). Redirects come back to the function, whose runtime follows them
 *   through here again, so every hop is checked.
 */
import { FunctionKv, serveKvOperation } from "@parley/core"
import { Effect, Exit } from "effect"
import * as Http from "node:http"
import * as Https from "node:https"
import * as Net from "node:net"
import { isPrivateAddress, PrivateAddressRefused, publicOnlyLookup } from "./PrivateAddress.ts"

export interface HostBridgeOptions {
  readonly socketPath: string
  readonly token: string
  readonly allowPrivateNetwork: boolean
  /** The module source of a function generation, if the host knows it. */
  readonly codeFor: (functionId: string, generation: number) => string | undefined
  /** Marks an invocation's ticket started; false when the host withdrew it (it must not run). */
  readonly start: (ticket: string) => boolean
}

/** Request headers that describe the hop to the bridge, not the function's request. */
const hopHeaders = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
  "content-length"
])

const outboundAgents = {
  http: new Http.Agent({ keepAlive: true }),
  https: new Https.Agent({ keepAlive: true })
}

/** Longest an outbound hop may take; the invocation's own deadline normally ends it first. */
const outboundHardLimitMs = 120_000

const refuse = (res: Http.ServerResponse, message: string) => {
  if (res.headersSent) return void res.destroy()
  res.writeHead(502, { "x-parley-outbound-error": message.replace(/[^\x20-\x7e]/g, "?") }).end()
}

const outbound = (req: Http.IncomingMessage, res: Http.ServerResponse, allowPrivate: boolean) => {
  const target = req.headers["x-parley-url"]
  const method = req.headers["x-parley-method"]
  let url: URL
  try {
    url = new URL(typeof target === "string" ? target : "")
  } catch {
    return refuse(res, "fetch refused: invalid URL")
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return refuse(res, `fetch to ${url.protocol} URLs is not supported`)
  }
  const privateRefusal = `fetch to ${url.host} refused: private, loopback and link-local addresses are not reachable`
  const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname
  if (!allowPrivate && Net.isIP(hostname) !== 0 && isPrivateAddress(hostname)) return refuse(res, privateRefusal)

  const headers: Record<string, string | Array<string>> = {}
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || hopHeaders.has(name) || name.startsWith("x-parley-")) continue
    headers[name] = value
  }
  const upstream = (url.protocol === "https:" ? Https : Http).request(url, {
    method: typeof method === "string" ? method : "GET",
    headers,
    agent: url.protocol === "https:" ? outboundAgents.https : outboundAgents.http,
    ...(allowPrivate ? {} : { lookup: publicOnlyLookup as unknown as Net.LookupFunction }),
    timeout: outboundHardLimitMs
  })
  upstream.on("response", (answer) => {
    const out: Record<string, string | Array<string>> = {}
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value !== undefined && name !== "connection" && name !== "keep-alive" && name !== "transfer-encoding") {
        out[name] = value
      }
    }
    res.writeHead(answer.statusCode ?? 502, out)
    answer.pipe(res)
  })
  upstream.on("timeout", () => upstream.destroy(new Error("timed out")))
  upstream.on("error", (error) =>
    refuse(
      res,
      error instanceof PrivateAddressRefused ? privateRefusal : `fetch to ${url.host} failed: ${error.message}`
    ))
  // The invocation ended (deadline, process killed): stop the hop too.
  res.on("close", () => {
    if (!res.writableFinished) upstream.destroy()
  })
  req.pipe(upstream)
}

const readBody = (req: Http.IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

/** Starts the bridge; it stops with the scope. */
export const startHostBridge = (options: HostBridgeOptions) =>
  Effect.gen(function*() {
    const services = yield* Effect.context<FunctionKv>()
    const runKv = (functionId: string, operation: unknown) =>
      Effect.runPromiseExitWith(services)(serveKvOperation(functionId, operation))

    const kv = (req: Http.IncomingMessage, res: Http.ServerResponse, functionId: string) =>
      readBody(req)
        .then((text) => runKv(functionId, JSON.parse(text)))
        .then((exit) =>
          Exit.isSuccess(exit)
            ? { ok: true, value: exit.value }
            : {
              ok: false,
              error: Exit.findErrorOption(exit).pipe((error) =>
                error._tag === "Some" ? error.value.message : "The key-value store failed"
              )
            }
        )
        .catch(() => ({ ok: false, error: "Malformed KV operation" }))
        .then((answer) => void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer)))

    const server = Http.createServer((req, res) => {
      if (req.headers["x-parley-token"] !== options.token) return void res.writeHead(403).end()
      const url = new URL(req.url ?? "/", "http://host")
      const functionId = url.searchParams.get("fn") ?? ""
      switch (url.pathname) {
        case "/code": {
          const source = options.codeFor(functionId, Number(url.searchParams.get("gen")))
          if (source === undefined) return void res.writeHead(404).end()
          return void res.writeHead(200, { "content-type": "text/javascript" }).end(source)
        }
        case "/start":
          return void res.writeHead(options.start(url.searchParams.get("ticket") ?? "") ? 200 : 409).end()
        case "/kv":
          return void kv(req, res, functionId)
        case "/outbound":
          return outbound(req, res, options.allowPrivateNetwork)
        default:
          return void res.writeHead(404).end()
      }
    })
    yield* Effect.acquireRelease(
      Effect.callback<void, Error>((resume) => {
        server.once("error", (error) => resume(Effect.fail(error)))
        server.listen(options.socketPath, () => resume(Effect.void))
      }),
      () =>
        Effect.callback<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        })
    )
  })
