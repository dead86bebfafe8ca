/**
 * `SimulatorStore` in memory: what a simulator wrote survives the simulator
 * (build a new one over the same store to see a "restart"), not the process.
 * Values are kept as JSON text and bytes as copies, so a reader gets what the
 * Postgres adapter would give back, never the writer's live objects.
 */
import { Effect, Layer } from "effect"
import { type SimDelivery, type SimObject, SimulatorStore } from "./SimulatorStore.ts"

interface StoredObject {
  readonly kind: string
  readonly key: string
  readonly json: string
  readonly bytes: Uint8Array | undefined
}

interface StoredDelivery {
  readonly id: string
  readonly phoneNumberId: string
  readonly json: string
  readonly raw: Uint8Array
}

const objectKey = (kind: string, key: string) => `${kind}\u0000${key}`

export const makeMemorySimulatorStore: Effect.Effect<SimulatorStore["Service"]> = Effect.sync(() => {
  // Map order is first-insertion order: a replaced object keeps its place, as the table's sequence does.
  const objects = new Map<string, StoredObject>()
  const deliveries = new Map<string, StoredDelivery>()
  return SimulatorStore.of({
    load: Effect.sync(() => ({
      objects: [...objects.values()].map((o): SimObject => ({
        kind: o.kind,
        key: o.key,
        value: JSON.parse(o.json),
        ...(o.bytes !== undefined ? { bytes: o.bytes.slice() } : {})
      })),
      deliveries: [...deliveries.values()].map((d): SimDelivery => ({
        id: d.id,
        phoneNumberId: d.phoneNumberId,
        record: JSON.parse(d.json),
        raw: d.raw.slice()
      }))
    })),
    save: (changes) =>
      Effect.sync(() => {
        for (const o of changes.put) {
          objects.set(objectKey(o.kind, o.key), {
            kind: o.kind,
            key: o.key,
            json: JSON.stringify(o.value),
            bytes: o.bytes?.slice()
          })
        }
        for (const o of changes.remove) objects.delete(objectKey(o.kind, o.key))
        for (const d of changes.delivered) {
          if (deliveries.has(d.id)) continue
          deliveries.set(d.id, { id: d.id, phoneNumberId: d.phoneNumberId, json: JSON.stringify(d.record), raw: d.raw.slice() })
        }
        for (const id of changes.forgotten) deliveries.delete(id)
      })
  })
})

/** A fresh, empty store per build. */
export const layerMemorySimulatorStore: Layer.Layer<SimulatorStore> = Layer.effect(SimulatorStore, makeMemorySimulatorStore)
