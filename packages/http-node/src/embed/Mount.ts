/**
 * Where Parley sits in an application's URL space: the path prefix it is mounted under (`/parley`), and which of
 * its parts answer there. Requests arrive with the prefix; it is taken off before Parley's router sees them, and
 * put back into every URL Parley hands out through the public URL.
 */

/** The parts of Parley an application can leave unmounted (each `true` by default). */
export interface ParleyMount {
  /** The Platform API (`/platform/v1/...`, except upstream ingestion). */
  readonly api?: boolean | undefined
  /** The older surface (`/api/v1/...`). */
  readonly legacy?: boolean | undefined
  /** The pass-through proxy of the network's API (`/proxy/...`). */
  readonly proxy?: boolean | undefined
  /** The network's webhooks into Parley (`/platform/v1/msg/upstream/webhook`). */
  readonly ingestion?: boolean | undefined
  /** The simulated network's inbound and outbox (`/sandbox/...`, simulator mode only). */
  readonly sandbox?: boolean | undefined
  /** `/healthz` and `/readyz`. */
  readonly health?: boolean | undefined
  /** The setup link pages (`/setup/...`) and the simulated signup dialog (`/simulator/signup`). */
  readonly setup?: boolean | undefined
  /** The embedded inbox page and its API (`/embed/...`, `/inbox/...`). */
  readonly inbox?: boolean | undefined
  /** The embedded workflow and execution viewer and its API (`/viewer/...`). */
  readonly viewer?: boolean | undefined
  /** The MCP tool server (`/mcp`). */
  readonly mcp?: boolean | undefined
  /** The API reference page (`/docs`). */
  readonly docs?: boolean | undefined
  /** The OpenAPI document (`/openapi.json`). */
  readonly openapi?: boolean | undefined
  /** The model simulator (`/model-simulator/v1/...`, simulator mode only). */
  readonly modelSimulator?: boolean | undefined
}

const under = (path: string, root: string) => path === root || path.startsWith(`${root}/`)

/** The part a path (without the prefix) belongs to; `undefined` for paths of no part (they get Parley's 404). */
export const partOf = (path: string): keyof ParleyMount | undefined => {
  if (under(path, "/platform/v1/msg/upstream/webhook")) return "ingestion"
  if (under(path, "/platform")) return "api"
  if (under(path, "/api")) return "legacy"
  if (under(path, "/proxy")) return "proxy"
  if (under(path, "/sandbox")) return "sandbox"
  if (path === "/healthz" || path === "/readyz") return "health"
  if (under(path, "/setup") || under(path, "/simulator/signup")) return "setup"
  if (under(path, "/embed") || under(path, "/inbox")) return "inbox"
  if (under(path, "/viewer")) return "viewer"
  if (under(path, "/mcp")) return "mcp"
  if (under(path, "/docs")) return "docs"
  if (path === "/openapi.json") return "openapi"
  if (under(path, "/model-simulator")) return "modelSimulator"
  return undefined
}

export class BasePathError extends Error {
  override readonly name = "BasePathError"
}

/**
 * `"/parley"` from `"/parley"`, `"parley/"` or `"/parley/"`; `""` for the root. A prefix with a query, a fragment
 * or dot segments names no stable place and is refused.
 */
export const normalizeBasePath = (basePath: string | undefined): string => {
  const trimmed = (basePath ?? "").trim().replace(/^\/+|\/+$/g, "")
  if (trimmed === "") return ""
  if (/[?#\\]/.test(trimmed) || trimmed.split("/").some((s) => s === "" || s === "." || s === "..")) {
    throw new BasePathError(`basePath must be a path such as "/parley" (got ${JSON.stringify(basePath)})`)
  }
  return `/${trimmed}`
}

/**
 * The path and query a request has inside Parley: without the prefix (`/parley/docs?x` → `/docs?x`, `/parley` →
 * `/`). A request without the prefix is taken as already inside: a framework that mounts a handler under a path may
 * take the prefix off itself (Hono's `mount` does).
 */
export const stripBasePath = (basePath: string, url: string): string => {
  if (basePath === "" || !url.startsWith(basePath)) return url
  const rest = url.slice(basePath.length)
  if (rest === "") return "/"
  if (rest.startsWith("/")) return rest
  if (rest.startsWith("?")) return `/${rest}`
  // `/parleyx`: another path that merely starts like the prefix.
  return url
}

/** Whether the part a path belongs to is mounted (paths of no part go to Parley's own 404). */
export const isMounted = (mount: ParleyMount, path: string): boolean => {
  const part = partOf(path)
  return part === undefined || mount[part] !== false
}
