/** The state a number's health checks keep between runs (decisions 4.8: the 3-minute cache, the backoff), per config. */
import { Context, type Effect, type Option } from "effect"
import type { NumberHealthState } from "./Health.ts"

export class NumberHealthRepo extends Context.Service<NumberHealthRepo, {
  readonly get: (msgConfigId: string) => Effect.Effect<Option.Option<NumberHealthState>>
  /** Inserts or replaces the config's state. */
  readonly put: (state: NumberHealthState) => Effect.Effect<void>
}>()("@parley/core/ports/NumberHealthRepo") {}
