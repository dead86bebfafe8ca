/**
 * Requests refused by a rate limit, by limit (`request`: the key's per-minute limit, `start`: execution starts per key
 * and workflow per second, `function_invoke`: a public function's invokes per minute). No key or project label: an
 * operator finds the key in the request log; the counter says how often limits bite.
 */
import { Effect, Metric } from "effect"
import { labelled } from "../shared/Telemetry.ts"

const refusals = labelled(
  Metric.counter("parley_rate_limit_refusals_total", {
    description: "Requests refused by a rate limit, by limit (request, start, function_invoke)",
    incremental: true
  }),
  ["limit"]
)

/** Counts a refusal of `limit` when `admitted` is false. */
export const observeAdmission = (limit: "request" | "start" | "function_invoke", admitted: boolean) =>
  admitted ? Effect.void : Metric.update(refusals({ limit }), 1)

/** `admit` whose refusals are counted under `limit`. */
export const countingRefusals = <A extends { readonly admitted: boolean }, Args extends ReadonlyArray<unknown>>(
  limit: "request" | "start",
  admit: (...args: Args) => Effect.Effect<A>
) =>
(...args: Args): Effect.Effect<A> => Effect.tap(admit(...args), (a) => observeAdmission(limit, a.admitted))
