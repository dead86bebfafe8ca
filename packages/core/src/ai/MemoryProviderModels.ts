/** `ProviderModelsRepo` in memory, keyed by name as the Postgres schema is. */
import { Effect, Layer, Option } from "effect"
import type { ProviderModelRecord } from "./ProviderModel.ts"
import { ProviderModelsRepo } from "./ProviderModelsRepo.ts"
import { byteOrder, json, timestamp } from "../ports/MemoryRows.ts"
import { MemoryStore, memoryTable } from "../ports/MemoryStore.ts"

const Models = memoryTable<ProviderModelRecord>("provider_models")

export const layerMemoryProviderModelsRepo = Layer.effect(
  ProviderModelsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    return ProviderModelsRepo.of({
      declare: Effect.fn("ProviderModelsRepo.declare")((model: ProviderModelRecord) =>
        store.run((db) => {
          const current = db.get(Models, model.name)
          const row: ProviderModelRecord = json({
            ...model,
            id: current?.id ?? model.id,
            created_at: timestamp(current?.created_at ?? model.created_at)
          })
          db.put(Models, model.name, row)
          return row
        })
      ),
      remove: Effect.fn("ProviderModelsRepo.remove")((name: string) => store.run((db) => db.remove(Models, name))),
      list: store.run((db) =>
        [...db.all(Models)].sort((a, b) => byteOrder(a.provider, b.provider) || byteOrder(a.name, b.name))
      ),
      findById: Effect.fn("ProviderModelsRepo.findById")((id: string) =>
        store.run((db) => Option.fromNullishOr(db.all(Models).find((m) => m.id === id)))
      ),
      findByName: Effect.fn("ProviderModelsRepo.findByName")((name: string) =>
        store.run((db) => Option.fromNullishOr(db.get(Models, name)))
      )
    })
  })
)
