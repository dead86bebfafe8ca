/**
 * Facts about a request learnt deep inside the handler chain (which project
 * it authenticated as, with which key) that the outermost request log needs.
 * Kept on the underlying request object (Node's, or the web `Request`), which
 * every layer of the chain shares, under a symbol of this module: they go with
 * the request. Two `WeakMap`s did this before at ~9 µs a request (their
 * entries of requests already answered weighed on every insertion and collection).
 */
import type { HttpServerRequest } from "effect/http"

const FACTS = Symbol("@parley/http-node/RequestInfo")

interface Facts {
  projectId: string | null
  apiKey: { readonly id: string; readonly name: string } | null
}

type Carrier = { [FACTS]?: Facts }

const carrierOf = (request: HttpServerRequest.HttpServerRequest): Carrier => request.source as Carrier

const factsOf = (request: HttpServerRequest.HttpServerRequest): Facts => {
  const carrier = carrierOf(request)
  return carrier[FACTS] ??= { projectId: null, apiKey: null }
}

export const setProjectId = (request: HttpServerRequest.HttpServerRequest, projectId: string): void => {
  factsOf(request).projectId = projectId
}

export const projectIdOf = (request: HttpServerRequest.HttpServerRequest): string | null =>
  carrierOf(request)[FACTS]?.projectId ?? null

/** The API key a request authenticated with: its id and name, for the log (never its value). */
export const setApiKey = (request: HttpServerRequest.HttpServerRequest, key: { readonly id: string; readonly name: string }): void => {
  factsOf(request).apiKey = key
}

export const apiKeyOf = (request: HttpServerRequest.HttpServerRequest): { readonly id: string; readonly name: string } | null =>
  carrierOf(request)[FACTS]?.apiKey ?? null
