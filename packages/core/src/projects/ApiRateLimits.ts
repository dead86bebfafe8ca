/**
 * The API's rate limits per key (decisions 8.1): the general limit, a fixed one-minute window over every
 * authenticated request (Platform API, older surface, proxy, MCP tool calls), and the execution start burst, a
 * one-second window per key and workflow. Counted through `RateLimits`, so hosts sharing a store enforce one limit,
 * in shares leased per host (`LeasedCounters`, `leaseSize`): a request writes the store once per share, not per take.
 *
 * A self-hosted project is on the platform plan (1,000 a minute, 30 starts a second); the operator sets other
 * figures host-wide (`ApiRateLimitSettings`, from `PARLEY_RATE_LIMIT_PER_MINUTE` and
 * `PARLEY_START_BURST_PER_SECOND` under `npm start`).
 */
import { Config, Context, Effect, Layer } from "effect"
import { RateLimits } from "../ports/RateLimits.ts"
import * as LeasedCounters from "../shared/LeasedCounters.ts"
import { countingRefusals } from "./RateLimitTelemetry.ts"

export interface RateLimitFigures {
  /** Requests per key per minute. */
  readonly perMinute: number
  /** Execution starts per key and workflow per second. */
  readonly startsPerSecond: number
}

export class ApiRateLimitSettings extends Context.Reference<RateLimitFigures>(
  "@parley/core/projects/ApiRateLimitSettings",
  { defaultValue: () => ({ perMinute: 1_000, startsPerSecond: 30 }) }
) {
  /** From `PARLEY_RATE_LIMIT_PER_MINUTE` and `PARLEY_START_BURST_PER_SECOND`, else the platform plan's. */
  static readonly layerConfig = Layer.effect(
    ApiRateLimitSettings,
    Effect.gen(function*() {
      const defaults = ApiRateLimitSettings.defaultValue()
      return {
        perMinute: yield* Config.Int("PARLEY_RATE_LIMIT_PER_MINUTE").pipe(Config.withDefault(defaults.perMinute)),
        startsPerSecond: yield* Config.Int("PARLEY_START_BURST_PER_SECOND").pipe(
          Config.withDefault(defaults.startsPerSecond)
        )
      }
    })
  )
}

/** One window's answer: admitted or not, with what the headers say. */
export interface Admission {
  readonly admitted: boolean
  readonly limit: number
  /** Takes left in the window (0 when refused). */
  readonly remaining: number
  /** When the window ends, epoch seconds. */
  readonly reset: number
  /** Seconds until the window ends, at least 1. */
  readonly retryAfter: number
}

/**
 * The takes a host leases at once under `limit`: a fiftieth of it, 1 to 100. Hosts together never admit past the
 * limit; a key may be refused while each other host holds up to this many takes unspent (1,000 a minute: 20).
 */
export const leaseSize = (limit: number): number => Math.max(1, Math.min(100, Math.floor(limit / 50)))

const admission = (
  taken: { readonly admitted: boolean; readonly count: number },
  limit: number,
  now: number,
  windowMs: number
): Admission => {
  const end = (Math.floor(now / windowMs) + 1) * windowMs
  return {
    admitted: taken.admitted,
    limit,
    remaining: taken.admitted ? Math.max(0, limit - taken.count) : 0,
    reset: Math.ceil(end / 1000),
    retryAfter: Math.max(1, Math.ceil((end - now) / 1000))
  }
}

/** `X-RateLimit-*` of the general limit, on every answer to a counted request (and `Retry-After` on a refusal). */
export const rateLimitHeaders = (a: Admission): Record<string, string> => ({
  "x-ratelimit-limit": String(a.limit),
  "x-ratelimit-remaining": String(a.remaining),
  "x-ratelimit-reset": String(a.reset),
  ...(a.admitted ? {} : { "retry-after": String(a.retryAfter) })
})

/** `X-Burst-RateLimit-*` of an execution start (and `Retry-After: 1` on a refusal). */
export const burstHeaders = (a: Admission): Record<string, string> => ({
  "x-burst-ratelimit-limit": String(a.limit),
  "x-burst-ratelimit-remaining": String(a.remaining),
  ...(a.admitted ? {} : { "retry-after": "1" })
})

export const RATE_LIMIT_EXCEEDED = { error: "Rate limit exceeded" } as const
export const START_RATE_EXCEEDED = {
  error: "Execution start rate exceeded",
  message: "Too many execution starts for this workflow; retry in 1 second"
} as const

export class ApiRateLimits extends Context.Service<ApiRateLimits, {
  /** Counts one request of the key in its minute. */
  readonly admitRequest: (apiKeyId: string) => Effect.Effect<Admission>
  /** Counts one execution start of the key on the workflow in its second. */
  readonly admitStart: (apiKeyId: string, workflowId: string) => Effect.Effect<Admission>
}>()("@parley/core/projects/ApiRateLimits") {
  static readonly layer = Layer.effect(
    ApiRateLimits,
    Effect.gen(function*() {
      const limits = yield* RateLimits
      const counters = yield* LeasedCounters.make({
        lease: (key, windowStart, limit, wanted) => limits.lease(key, new Date(windowStart).toISOString(), limit, wanted),
        leaseSize
      })
      const take = (key: string, windowMs: number, limit: number) =>
        Effect.map(counters.take(key, windowMs, limit), (taken) => admission(taken, limit, taken.now, windowMs))
      return ApiRateLimits.of({
        // Every API request: a read of the settings and a take, no generator.
        admitRequest: countingRefusals("request", (apiKeyId: string) =>
          Effect.flatMap(ApiRateLimitSettings, (settings) => take(`api:${apiKeyId}`, 60_000, settings.perMinute))),
        admitStart: countingRefusals("start", (apiKeyId: string, workflowId: string) =>
          Effect.gen(function*() {
            const settings = yield* ApiRateLimitSettings
            return yield* take(`start:${apiKeyId}:${workflowId}`, 1_000, settings.startsPerSecond)
          }))
      })
    })
  )
}
