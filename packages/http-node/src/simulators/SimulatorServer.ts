/**
 * The network simulator's HTTP face: the network's own paths
 * (`/v24.0/<phone_number_id>/messages`, `/<media_id>`,
 * `/<waba_id>/message_templates`, `/<phone_number_id>/media` (multipart),
 * `/<phone_number_id>/block_users`, `/attachments/?mid=...`, ...) served over
 * `NetworkSimulator.handle`. Translation only: the request's method, path,
 * query, `Authorization` and body go in; the simulator's status, content type
 * and bytes come out. Point the Cloud API adapter (`PARLEY_UPSTREAM_URL`) at
 * it and it talks to the simulator as it would to the network.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { type SimBody, type SimFile, Simulator } from "@parley/core/simulators"
import { Effect, Layer, Option, Redacted, Stream } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse, Multipart } from "effect/http"
import { createServer } from "node:http"

export interface SimulatorServerOptions {
  /** Path prefix the network is served under (`/upstream`); none by default. */
  readonly prefix?: string | undefined
}

/** The network's largest upload (a 100 MB document) plus room for the multipart framing. */
const maxBodyBytes = 101 * 1024 * 1024

/** The request's body as the simulators take it (multipart and URL-encoded forms, else bytes). */
export const readBody = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<SimBody, unknown> => {
  const contentType = (request.headers["content-type"] ?? "").toLowerCase()
  if (contentType.startsWith("multipart/form-data")) {
    const fields: Record<string, string> = {}
    const files: Array<SimFile> = []
    return Stream.runForEach(request.multipartStream, (part) =>
      Multipart.isFile(part)
        ? Effect.map(part.contentEffect, (bytes) =>
          void files.push({ key: part.key, filename: part.name, contentType: part.contentType, bytes }))
        : Effect.sync(() => {
          if (Multipart.isField(part)) fields[part.key] = part.value
        })).pipe(Effect.as({ _tag: "Form", fields, files } as const))
  }
  if (contentType.startsWith("application/x-www-form-urlencoded")) {
    return Effect.map(request.urlParamsBody, (params) => {
      const fields: Record<string, string> = {}
      for (const [key, value] of params) {
        if (!(key in fields)) fields[key] = typeof value === "string" ? value : Redacted.value(value)
      }
      return { _tag: "Form", fields, files: [] } as const
    })
  }
  return Effect.map(request.arrayBuffer, (buffer): SimBody =>
    buffer.byteLength === 0
      ? { _tag: "None" }
      : { _tag: "Bytes", contentType, bytes: new Uint8Array(buffer) })
}

/** An unreadable body (broken multipart, over the size limit) answers like the network: a 400 error object. */
const unreadable = HttpServerResponse.jsonUnsafe({
  error: {
    message: "(#100) Invalid parameter",
    type: "OAuthException",
    code: 100,
    error_data: { messaging_product: "whatsapp", details: "The request body could not be read" }
  }
}, { status: 400 })

const handler = (simulator: Simulator.NetworkSimulator["Service"], prefix: string) =>
(request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const url = Option.getOrUndefined(HttpServerRequest.toURL(request))
    if (url === undefined) return unreadable
    const query: Record<string, string> = {}
    for (const [key, value] of url.searchParams) if (!(key in query)) query[key] = value
    const body = yield* readBody(request)
    const answer = yield* simulator.handle({
      method: request.method,
      baseUrl: `${url.origin}${prefix}`,
      path: url.pathname.slice(prefix.length),
      query,
      authorization: request.headers["authorization"],
      body
    })
    return HttpServerResponse.uint8Array(answer.body, { status: answer.status, contentType: answer.contentType })
  }).pipe(
    Effect.provide(Multipart.limitsServices({ maxTotalSize: maxBodyBytes, maxFileSize: maxBodyBytes })),
    Effect.catch(() => Effect.succeed(unreadable))
  )

/** The simulator's routes on the `HttpRouter`: every method and path under the prefix. */
export const routes = (
  options: SimulatorServerOptions = {}
): Layer.Layer<never, never, HttpRouter.HttpRouter | Simulator.NetworkSimulator> =>
  HttpRouter.use((router) =>
    Effect.gen(function*() {
      const simulator = yield* Simulator.NetworkSimulator
      const prefix = (options.prefix ?? "").replace(/\/+$/, "")
      yield* router.add("*", `${prefix}/*` as `/${string}`, handler(simulator, prefix))
    })
  )

/**
 * A standalone server of the simulator on `host:port` (port 0 picks a free
 * one; read it back with `HttpServer.addressFormattedWith`).
 */
export const layerServer = (options: { readonly port: number; readonly host?: string | undefined }) =>
  HttpRouter.serve(routes(), { disableLogger: true, disableListenLog: true }).pipe(
    Layer.provideMerge(NodeHttpServer.layer(createServer, { port: options.port, host: options.host ?? "127.0.0.1" }))
  )

