/**
 * The host's own HTTP API, answered in process. The MCP tools reach every endpoint through it, so an action runs
 * exactly what the REST endpoint of the same meaning runs: its decoding, its key check, its handler, its errors.
 */
import { Context, type Effect, type Redacted } from "effect"

export interface LocalApiRequest {
  readonly method: string
  /** Path with its query string, e.g. `/platform/v1/customers?limit=5`. */
  readonly path: string
  /** The caller's API key, sent as `X-API-Key`. */
  readonly key: Redacted.Redacted<string>
  /** JSON body; none when undefined. */
  readonly body?: unknown
}

export interface LocalApiAnswer {
  readonly status: number
  /** The parsed JSON body; undefined when the answer has none. */
  readonly body: unknown
}

export class LocalApi extends Context.Service<LocalApi, {
  readonly call: (request: LocalApiRequest) => Effect.Effect<LocalApiAnswer>
}>()("@parley/core/mcp/LocalApi") {}
