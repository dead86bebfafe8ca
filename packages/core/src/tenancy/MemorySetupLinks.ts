/** `SetupLinksRepo` in memory, with the keys the Postgres schema enforces (one active link per customer). */
import { Effect, Layer, Option } from "effect"
import type { CustomerRecord } from "./Customer.ts"
import { SetupLinksRepo } from "./SetupLinksRepo.ts"
import { Duplicate } from "../ports/StorageError.ts"
import type { ListWindow } from "../shared/Pagination.ts"
import type { SetupLinkRecord } from "./SetupLink.ts"
import { MemoryStore, memoryTable, type MemoryTables } from "../ports/MemoryStore.ts"
import { compareKeys, instant, json, nullableTimestamp, sliceWindow, timestamp, violation } from "../ports/MemoryRows.ts"

const SetupLinks = memoryTable<SetupLinkRecord>("setup_links")
const Customers = memoryTable<CustomerRecord>("customers")

const stored = (l: SetupLinkRecord): SetupLinkRecord => ({
  ...l,
  expires_at: timestamp(l.expires_at),
  used_at: nullableTimestamp(l.used_at),
  revoked_at: nullableTimestamp(l.revoked_at),
  created_at: timestamp(l.created_at),
  updated_at: timestamp(l.updated_at),
  allowed_connection_types: json(l.allowed_connection_types),
  phone_number_country_isos: json(l.phone_number_country_isos),
  theme_config: json(l.theme_config)
})

const newestFirst = (rows: ReadonlyArray<SetupLinkRecord>) =>
  [...rows].sort((a, b) => compareKeys({ sortKey: b.created_at, id: b.id }, { sortKey: a.created_at, id: a.id }))

export const layerMemorySetupLinksRepo = Layer.effect(
  SetupLinksRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    // A customer's links go with it, as the foreign key cascades in Postgres.
    const live = (db: MemoryTables) =>
      db.all(SetupLinks).filter((l) => db.get(Customers, l.customer_id) !== undefined)
    return SetupLinksRepo.of({
      insert: Effect.fn("SetupLinksRepo.insert")(function*(link: SetupLinkRecord) {
        const ok = yield* store.run((db) => {
          const customer = db.get(Customers, link.customer_id)
          if (customer === undefined || customer.project_id !== link.project_id) violation(`no customer ${link.customer_id}`)
          if (db.get(SetupLinks, link.id) !== undefined) violation(`duplicate setup link id ${link.id}`)
          if (db.all(SetupLinks).some((l) => l.token_hash === link.token_hash)) violation("duplicate setup link token")
          if (link.status === "active" && live(db).some((l) => l.customer_id === link.customer_id && l.status === "active")) {
            return false
          }
          db.put(SetupLinks, link.id, stored(link))
          return true
        })
        if (!ok) return yield* new Duplicate({ field: "customer_id" })
      }),
      findById: Effect.fn("SetupLinksRepo.findById")((projectId: string, customerId: string, id: string) =>
        store.run((db) =>
          Option.filter(
            Option.fromNullishOr(live(db).find((l) => l.id === id)),
            (l) => l.project_id === projectId && l.customer_id === customerId
          )
        )
      ),
      findByTokenHash: Effect.fn("SetupLinksRepo.findByTokenHash")((tokenHash: string) =>
        store.run((db) => Option.fromNullishOr(live(db).find((l) => l.token_hash === tokenHash)))
      ),
      list: Effect.fn("SetupLinksRepo.list")((projectId: string, customerId: string, window: ListWindow) =>
        store.run((db) =>
          sliceWindow(newestFirst(live(db).filter((l) => l.project_id === projectId && l.customer_id === customerId)), window)
        )
      ),
      updateActive: Effect.fn("SetupLinksRepo.updateActive")((link: SetupLinkRecord) =>
        store.run((db) => {
          const current = live(db).find((l) => l.id === link.id)
          if (current === undefined || current.project_id !== link.project_id || current.status !== "active") {
            return Option.none<SetupLinkRecord>()
          }
          const next = stored({
            ...link,
            id: current.id,
            project_id: current.project_id,
            customer_id: current.customer_id,
            token_hash: current.token_hash,
            created_at: current.created_at
          })
          db.put(SetupLinks, link.id, next)
          return Option.some(next)
        })
      ),
      endActive: Effect.fn("SetupLinksRepo.endActive")((projectId: string, customerId: string, now: string) =>
        store.run((db) => {
          let changed = 0
          for (const l of live(db)) {
            if (l.project_id !== projectId || l.customer_id !== customerId || l.status !== "active") continue
            const expired = instant(l.expires_at) <= instant(now)
            db.put(SetupLinks, l.id, stored({
              ...l,
              status: expired ? "expired" : "revoked",
              revoked_at: expired ? null : now,
              updated_at: now
            }))
            changed++
          }
          return changed
        })
      )
    })
  })
)
