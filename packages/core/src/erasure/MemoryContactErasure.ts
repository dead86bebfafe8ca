/**
 * `ContactErasureRepo` in memory: the erasure records. The deletions are each capability's own (`ContactHoldings`).
 */
import { Effect, Layer, Option } from "effect"
import { type ContactErasureRecord, ContactErasureRepo } from "./ContactErasureRepo.ts"
import { instant, json, nullableTimestamp, timestamp } from "../ports/MemoryRows.ts"
import { MemoryStore, memoryTable } from "../ports/MemoryStore.ts"

const Erasures = memoryTable<ContactErasureRecord>("contact_erasures")

const stored = (r: ContactErasureRecord): ContactErasureRecord =>
  json({
    ...r,
    created_at: timestamp(r.created_at),
    updated_at: timestamp(r.updated_at),
    finished_at: nullableTimestamp(r.finished_at)
  })

export const layerMemoryContactErasureRepo = Layer.effect(
  ContactErasureRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    return ContactErasureRepo.of({
      open: Effect.fn("ContactErasureRepo.open")((record: ContactErasureRecord) =>
        store.run((db) => {
          const current = db.all(Erasures).find((e) =>
            e.project_id === record.project_id && e.contact_id === record.contact_id && e.status !== "done"
          )
          if (current !== undefined) return { record: current, created: false }
          const row = stored(record)
          db.put(Erasures, row.id, row)
          return { record: row, created: true }
        })
      ),
      find: Effect.fn("ContactErasureRepo.find")((id: string) =>
        store.run((db) => Option.fromNullishOr(db.get(Erasures, id)))
      ),
      reach: Effect.fn("ContactErasureRepo.reach")((id: string, step: string, at: string) =>
        store.run((db) => {
          const current = db.get(Erasures, id)
          if (current === undefined || current.status === "done") return false
          db.put(Erasures, id, stored({ ...current, status: "running", step, updated_at: at }))
          return true
        })
      ),
      finish: Effect.fn("ContactErasureRepo.finish")((id: string, at: string) =>
        store.run((db) => {
          const current = db.get(Erasures, id)
          if (current !== undefined) {
            db.put(Erasures, id, stored({ ...current, status: "done", target: null, updated_at: at, finished_at: at }))
          }
        })
      ),
      listUnfinished: Effect.fn("ContactErasureRepo.listUnfinished")((limit: number) =>
        store.run((db) =>
          db.all(Erasures)
            .filter((e) => e.status !== "done")
            .sort((a, b) => instant(a.created_at) - instant(b.created_at) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
            .slice(0, limit)
        )
      )
    })
  })
)
