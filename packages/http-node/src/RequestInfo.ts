/**
 * Facts about a request learnt deep inside the handler chain (which project
 * it authenticated as) that the outermost request log needs. Keyed by the
 * underlying Node request object, which every layer of the chain shares.
 */
import type { HttpServerRequest } from "effect/http"

const projects = new WeakMap<object, string>()

const keyOf = (request: HttpServerRequest.HttpServerRequest): object => request.source as object

export const setProjectId = (request: HttpServerRequest.HttpServerRequest, projectId: string): void => {
  projects.set(keyOf(request), projectId)
}

export const projectIdOf = (request: HttpServerRequest.HttpServerRequest): string | null =>
  projects.get(keyOf(request)) ?? null

const apiKeys = new WeakMap<object, { readonly id: string; readonly name: string }>()

/** The API key a request authenticated with: its id and name, for the log (never its value). */
export const setApiKey = (request: HttpServerRequest.HttpServerRequest, key: { readonly id: string; readonly name: string }): void => {
  apiKeys.set(keyOf(request), key)
}

export const apiKeyOf = (request: HttpServerRequest.HttpServerRequest): { readonly id: string; readonly name: string } | null =>
  apiKeys.get(keyOf(request)) ?? null
