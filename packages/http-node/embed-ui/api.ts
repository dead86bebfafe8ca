/**
 * How an embedded page calls its host: the token is the last segment of the page's own address
 * (`<base>/<marker>/<token>`), sent in a header, never in a URL; `<base>` is where an application mounted Parley.
 */
export class ApiError extends Error {
  readonly status: number
  constructor(status: number, message: string) {
    super(message)
    this.status = status
  }
}

export interface PageApi {
  readonly token: string
  /** Where the host is mounted: everything the page asks for is under it. */
  readonly base: string
  readonly call: <A>(method: string, path: string, body?: unknown) => Promise<A>
  readonly fetchRaw: (path: string) => Promise<Response>
}

/** `marker` is the page's segment (`/embed/`), `root` its API (`/inbox/v1`), `header` the token's header. */
export const pageApi = (options: { readonly marker: string; readonly root: string; readonly header: string }): PageApi => {
  const token = decodeURIComponent(location.pathname.split("/").filter((part) => part.length > 0).pop() ?? "")
  const base = location.pathname.slice(0, Math.max(0, location.pathname.lastIndexOf(options.marker)))
  const fetchRaw = (path: string) =>
    fetch(`${base}${options.root}${path}`, { headers: { [options.header]: token }, credentials: "omit", referrerPolicy: "no-referrer" })
  const call = async <A,>(method: string, path: string, body?: unknown): Promise<A> => {
    const response = await fetch(`${base}${options.root}${path}`, {
      method,
      headers: { [options.header]: token, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      credentials: "omit",
      referrerPolicy: "no-referrer",
      cache: "no-store"
    })
    const text = await response.text()
    const parsed: unknown = text.length > 0 ? JSON.parse(text) : undefined
    if (!response.ok) {
      const error = typeof parsed === "object" && parsed !== null && "error" in parsed ? String(parsed.error) : response.statusText
      throw new ApiError(response.status, error)
    }
    return parsed as A
  }
  return { token, base, call, fetchRaw }
}
