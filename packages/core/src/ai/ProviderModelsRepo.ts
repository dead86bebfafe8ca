/** Storage of the provider models operators declared (decisions 2.18), global to the installation. */
import { Context, type Effect, type Option } from "effect"
import type { ProviderModelRecord } from "./ProviderModel.ts"

export class ProviderModelsRepo extends Context.Service<ProviderModelsRepo, {
  /**
   * Inserts the model, or replaces every field of the model of that name but
   * its `id` and `created_at`, which stay; answers the stored record.
   */
  readonly declare: (model: ProviderModelRecord) => Effect.Effect<ProviderModelRecord>
  /** False when no model had that name. */
  readonly remove: (name: string) => Effect.Effect<boolean>
  /** By provider, then name. */
  readonly list: Effect.Effect<ReadonlyArray<ProviderModelRecord>>
  readonly findById: (id: string) => Effect.Effect<Option.Option<ProviderModelRecord>>
  readonly findByName: (name: string) => Effect.Effect<Option.Option<ProviderModelRecord>>
}>()("@parley/core/ports/ProviderModelsRepo") {}
