/**
 * `SimulatorStore` on PostgreSQL (migration 0010): the simulated network's
 * objects in `sim_objects`, its outboxes in `sim_outbox`. A save is one
 * statement (its parts are data-modifying CTEs), so it is atomic and costs
 * one round trip however many objects and deliveries it carries.
 */
import { type SimChanges, type SimDelivery, type SimObject, SimulatorStore, SimulatorStoreError } from "@parley/core"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { type Column, columnRows, decodeRows, Nullable } from "./Rows.ts"

// Bytes travel as base64 text both ways, so any bytes fit whatever the driver does with bytea.
const base64 = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64")

const OBJECT_COLUMNS: ReadonlyArray<Column<SimObject>> = [
  ["kind", "text", (o) => o.kind],
  ["key", "text", (o) => o.key],
  ["value", "json", (o) => JSON.stringify(o.value)],
  ["bytes", "text", (o) => (o.bytes === undefined ? null : base64(o.bytes))]
]

const REF_COLUMNS: ReadonlyArray<Column<{ readonly kind: string; readonly key: string }>> = [
  ["kind", "text", (o) => o.kind],
  ["key", "text", (o) => o.key]
]

const DELIVERY_COLUMNS: ReadonlyArray<Column<SimDelivery>> = [
  ["id", "text", (d) => d.id],
  ["phone_number_id", "text", (d) => d.phoneNumberId],
  ["record", "json", (d) => JSON.stringify(d.record)],
  ["raw", "text", (d) => base64(d.raw)]
]

const ID_COLUMNS: ReadonlyArray<Column<string>> = [["id", "text", (id) => id]]

/** A row of `sim_objects` as `load` selects it: the value as JSON text, the bytes as base64. */
const ObjectRow = Schema.Struct({
  kind: Schema.String,
  key: Schema.String,
  value: Schema.fromJsonString(Schema.Unknown),
  bytes: Nullable(Schema.Uint8ArrayFromBase64)
})
const toObjects = decodeRows("sim_objects", ObjectRow)

/** A row of `sim_outbox` as `load` selects it: the record as JSON text, the raw body as base64. */
const DeliveryRow = Schema.Struct({
  id: Schema.String,
  phone_number_id: Schema.String,
  record: Schema.fromJsonString(Schema.Unknown),
  raw: Schema.Uint8ArrayFromBase64
})
const toDeliveries = decodeRows("sim_outbox", DeliveryRow)

const storeError = (error: SqlError) => new SimulatorStoreError({ message: error.message })

/**
 * The changes as one statement may take them: each object once (the last
 * word about it wins), and a delivery forgotten in the same save never
 * written (the parts of one statement do not see each other's rows).
 */
const normalize = (changes: SimChanges) => {
  const last = new Map<string, SimObject | { readonly kind: string; readonly key: string; readonly removed: true }>()
  for (const o of changes.put) last.set(`${o.kind}\u0000${o.key}`, o)
  for (const o of changes.remove) last.set(`${o.kind}\u0000${o.key}`, { kind: o.kind, key: o.key, removed: true })
  const put: Array<SimObject> = []
  const remove: Array<{ readonly kind: string; readonly key: string }> = []
  for (const o of last.values()) ("removed" in o ? remove : put).push(o as SimObject)
  const forgotten = new Set(changes.forgotten)
  const seen = new Set<string>()
  const delivered = changes.delivered.filter((d) => !forgotten.has(d.id) && !seen.has(d.id) && seen.add(d.id))
  return { put, remove, delivered, forgotten: [...forgotten] }
}

export const layerSimulatorStore: Layer.Layer<SimulatorStore, never, SqlClient.SqlClient> = Layer.effect(
  SimulatorStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return SimulatorStore.of({
      load: Effect.gen(function*() {
        const objects = yield* sql`
          SELECT kind, key, value::text AS value, translate(encode(bytes, 'base64'), E'\\n', '') AS bytes
          FROM sim_objects ORDER BY seq`
        const deliveries = yield* sql`
          SELECT id, phone_number_id, record::text AS record, translate(encode(raw, 'base64'), E'\\n', '') AS raw
          FROM sim_outbox ORDER BY seq`
        return {
          objects: (yield* toObjects(objects)).map(({ bytes, ...o }): SimObject => bytes === null ? o : { ...o, bytes }),
          deliveries: (yield* toDeliveries(deliveries)).map(({ phone_number_id, ...d }): SimDelivery => ({
            ...d,
            phoneNumberId: phone_number_id
          }))
        }
      }).pipe(Effect.mapError(storeError), Effect.withSpan("SimulatorStore.load")),

      save: (changes) =>
        Effect.suspend(() => {
          const { delivered, forgotten, put, remove } = normalize(changes)
          // Parts with nothing to do read empty arrays: one statement text whatever the changes.
          return sql`
            WITH put AS (
              INSERT INTO sim_objects (kind, key, value, bytes)
              SELECT r.kind, r.key, r.value, decode(r.bytes, 'base64') FROM ${columnRows(sql, put, OBJECT_COLUMNS)}
              ORDER BY r.ord
              ON CONFLICT (kind, key) DO UPDATE SET value = EXCLUDED.value, bytes = EXCLUDED.bytes
            ), removed AS (
              DELETE FROM sim_objects o USING ${columnRows(sql, remove, REF_COLUMNS)}
              WHERE o.kind = r.kind AND o.key = r.key
            ), delivered AS (
              INSERT INTO sim_outbox (id, phone_number_id, record, raw)
              SELECT r.id, r.phone_number_id, r.record, decode(r.raw, 'base64')
              FROM ${columnRows(sql, delivered, DELIVERY_COLUMNS)} ORDER BY r.ord
              ON CONFLICT (id) DO NOTHING
            ), forgotten AS (
              DELETE FROM sim_outbox o USING ${columnRows(sql, forgotten, ID_COLUMNS)} WHERE o.id = r.id
            )
            SELECT 1`.pipe(Effect.asVoid, Effect.mapError(storeError))
        }).pipe(Effect.withSpan("SimulatorStore.save"))
    })
  })
)
