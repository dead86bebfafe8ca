/** The base address clients reach the host at (`PARLEY_PUBLIC_URL`), used in generated URLs. */
import { Context } from "effect"

export class PublicUrl extends Context.Reference<string>("@parley/core/http/PublicUrl", {
  defaultValue: () => "http://127.0.0.1:4000"
}) {}

/** The absolute address of a request path (with its query) under the public base. */
export const publicUrlOf = (base: string, pathAndQuery: string): URL =>
  new URL(pathAndQuery, base.endsWith("/") ? base : `${base}/`)
