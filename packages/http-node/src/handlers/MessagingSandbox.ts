/** The sandbox of simulator mode (404 in cloud mode): simulated contacts and what reached them. Translation only. */
import { CurrentPrincipal, ParleyApi, Sandbox, toSandboxOutboxEntry } from "@parley/core"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"

export const SandboxHandlers = HttpApiBuilder.group(
  ParleyApi,
  "sandbox",
  Effect.fn(function*(handlers) {
    const sandbox = yield* Sandbox
    return handlers
      .handle("inbound", ({ payload }) =>
        Effect.gen(function*() {
          return yield* sandbox.inbound(yield* CurrentPrincipal, payload)
        }))
      .handle("outbox", ({ query }) =>
        Effect.gen(function*() {
          const delivered = yield* sandbox.outbox(yield* CurrentPrincipal, query.phone_number_id)
          return { data: delivered.map(toSandboxOutboxEntry) }
        }))
  })
)
