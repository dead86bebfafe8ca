/**
 * The base address clients reach the host at (`PARLEY_PUBLIC_URL`), used in generated URLs. It may carry a path:
 * an application that mounts Parley under a prefix (`https://app.example/parley`) hands out URLs under it.
 */
import { Context } from "effect"

export class PublicUrl extends Context.Reference<string>("@parley/core/http/PublicUrl", {
  defaultValue: () => "http://127.0.0.1:4000"
}) {}

/**
 * The absolute address of a request path (with its query) under the public base. A leading `/` (a request's own
 * path) is taken under the base's path too, never from the origin's root: the prefix stays.
 */
export const publicUrlOf = (base: string, pathAndQuery: string): URL =>
  new URL(pathAndQuery.replace(/^\/+/, ""), base.endsWith("/") ? base : `${base}/`)
