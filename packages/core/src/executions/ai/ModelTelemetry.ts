/**
 * What model calls tell an operator: calls by result, tokens in and out, and latency. No model name in the labels
 * (names are the operator's to choose, unbounded); the model's name and id go on the call's span, never the prompt
 * or the answer.
 */
import { Clock, Effect, Exit, Metric } from "effect"
import type { Response } from "effect/ai"
import type { ProviderModelRecord } from "../../ai/ProviderModel.ts"
import { annotate, LATENCY_BUCKETS, labelled } from "../../shared/Telemetry.ts"

const calls = labelled(
  Metric.counter("parley_model_calls_total", { description: "Model calls, by result (success, failure)", incremental: true }),
  ["result"]
)

const tokens = labelled(
  Metric.counter("parley_model_tokens_total", { description: "Model tokens, by kind (input, output)", incremental: true }),
  ["kind"]
)

const latency = labelled(
  Metric.histogram("parley_model_call_duration_seconds", {
    description: "Model call duration, retries included, by result",
    boundaries: LATENCY_BUCKETS
  }),
  ["result"]
)

/** `call` in a span about `model`, counted, timed and its tokens added up. */
export const observeModelCall = <A extends { readonly usage: Response.Usage }, E, R>(
  model: ProviderModelRecord,
  call: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> =>
  Effect.gen(function*() {
    yield* annotate({ "parley.model.id": model.id, "parley.model.name": model.name })
    const started = yield* Clock.currentTimeMillis
    const exit = yield* Effect.exit(call)
    const seconds = ((yield* Clock.currentTimeMillis) - started) / 1000
    const result = Exit.isSuccess(exit) ? "success" : "failure"
    yield* Metric.update(calls({ result }), 1)
    yield* Metric.update(latency({ result }), seconds)
    if (Exit.isSuccess(exit)) {
      const usage = exit.value.usage
      yield* Metric.update(tokens({ kind: "input" }), usage.inputTokens.total ?? 0)
      yield* Metric.update(tokens({ kind: "output" }), usage.outputTokens.total ?? 0)
      yield* annotate({
        "gen_ai.usage.input_tokens": usage.inputTokens.total,
        "gen_ai.usage.output_tokens": usage.outputTokens.total
      })
    }
    return yield* exit
  }).pipe(Effect.withSpan("ModelCall.generate", { kind: "client" }))
