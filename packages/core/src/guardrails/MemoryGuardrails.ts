/** `GuardrailsRepo` in memory, with the keys the Postgres schema enforces. */
import { Effect, Layer, Option, PubSub, Stream } from "effect"
import type { ContactZoneRecord, GuardrailSettingsRecord, MarketingSendRecord, OptOutRecord } from "./Guardrail.ts"
import { type OptOutFilter, GuardrailsRepo, type RecipientFacts } from "./GuardrailsRepo.ts"
import type { Project } from "../projects/Project.ts"
import type { ListWindow } from "../shared/Pagination.ts"
import { MemoryStore, type MemoryTables, memoryTable } from "../ports/MemoryStore.ts"
import { compareKeys, instant, json, sliceWindow, timestamp, violation } from "../ports/MemoryRows.ts"

const OptOuts = memoryTable<OptOutRecord>("guardrail_opt_outs")
const Settings = memoryTable<GuardrailSettingsRecord>("guardrail_settings")
const Zones = memoryTable<ContactZoneRecord>("guardrail_contact_zones")
const Marketing = memoryTable<MarketingSendRecord>("guardrail_marketing_sends")
const Projects = memoryTable<Project>("projects")

const settingsKey = (projectId: string, msgConfigId: string | null) => `${projectId}\u0000${msgConfigId ?? ""}`
const zoneKey = (projectId: string, recipient: string) => `${projectId}\u0000${recipient}`
const marketingKey = (m: MarketingSendRecord) => [m.project_id, m.msg_config_id, m.recipient, m.key].join("\u0000")

const newestFirst = (rows: ReadonlyArray<OptOutRecord>) =>
  [...rows].sort((a, b) => compareKeys({ sortKey: b.created_at, id: b.id }, { sortKey: a.created_at, id: a.id }))

const optOutOf = (db: MemoryTables, projectId: string, msgConfigId: string | null, recipient: string) =>
  db.all(OptOuts).find((o) => o.project_id === projectId && o.msg_config_id === msgConfigId && o.recipient === recipient)

const requireProject = (db: MemoryTables, projectId: string) => {
  if (db.get(Projects, projectId) === undefined) violation(`no project ${projectId}`)
}

export const layerMemoryGuardrailsRepo = Layer.effect(
  GuardrailsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const changes = yield* PubSub.unbounded<void>()
    return GuardrailsRepo.of({
      recipientsFacts: Effect.fn("GuardrailsRepo.recipientsFacts")(
        (projectId: string, msgConfigId: string, recipients: ReadonlyArray<string>) =>
          store.run((db) => {
            const asked = new Set(recipients)
            // The number's opt-out before the project's, as the Postgres read orders them.
            const optOuts = new Map<string, OptOutRecord>()
            for (const o of db.all(OptOuts)) {
              if (o.project_id !== projectId || !asked.has(o.recipient)) continue
              if (o.msg_config_id === msgConfigId || (o.msg_config_id === null && !optOuts.has(o.recipient))) optOuts.set(o.recipient, o)
            }
            const facts = new Map<string, RecipientFacts>()
            for (const recipient of asked) {
              const optOut = Option.fromNullishOr(optOuts.get(recipient))
              const zone = Option.map(Option.fromNullishOr(db.get(Zones, zoneKey(projectId, recipient))), (z) => z.time_zone)
              if (Option.isSome(optOut) || Option.isSome(zone)) facts.set(recipient, { optOut, zone })
            }
            return facts as ReadonlyMap<string, RecipientFacts>
          })
      ),
      insertOptOut: Effect.fn("GuardrailsRepo.insertOptOut")((optOut: OptOutRecord) =>
        store.run((db) => {
          requireProject(db, optOut.project_id)
          if (db.get(OptOuts, optOut.id) !== undefined) violation(`duplicate opt-out id ${optOut.id}`)
          if (optOutOf(db, optOut.project_id, optOut.msg_config_id, optOut.recipient) !== undefined) return Option.none()
          const row = json({ ...optOut, created_at: timestamp(optOut.created_at) })
          db.put(OptOuts, row.id, row)
          return Option.some(row)
        })
      ),
      findOptOut: Effect.fn("GuardrailsRepo.findOptOut")((projectId: string, id: string) =>
        store.run((db) => Option.filter(Option.fromNullishOr(db.get(OptOuts, id)), (o) => o.project_id === projectId))
      ),
      listOptOuts: Effect.fn("GuardrailsRepo.listOptOuts")((projectId: string, filter: OptOutFilter, window: ListWindow) =>
        store.run((db) =>
          sliceWindow(
            newestFirst(db.all(OptOuts).filter((o) =>
              o.project_id === projectId &&
              (filter.msg_config_id === undefined || o.msg_config_id === filter.msg_config_id) &&
              (filter.recipient === undefined || o.recipient === filter.recipient)
            )),
            window
          )
        )
      ),
      deleteOptOut: Effect.fn("GuardrailsRepo.deleteOptOut")((projectId: string, id: string) =>
        store.run((db) => {
          const found = db.get(OptOuts, id)
          if (found === undefined || found.project_id !== projectId) return Option.none()
          db.remove(OptOuts, id)
          return Option.some(found)
        })
      ),
      deleteOptOutOf: Effect.fn("GuardrailsRepo.deleteOptOutOf")((projectId: string, msgConfigId: string | null, recipient: string) =>
        store.run((db) => {
          const found = optOutOf(db, projectId, msgConfigId, recipient)
          if (found === undefined) return Option.none()
          db.remove(OptOuts, found.id)
          return Option.some(found)
        })
      ),
      findSettings: Effect.fn("GuardrailsRepo.findSettings")((projectId: string, msgConfigId: string | null) =>
        store.run((db) => Option.fromNullishOr(db.get(Settings, settingsKey(projectId, msgConfigId))))
      ),
      listSettings: Effect.fn("GuardrailsRepo.listSettings")((projectId: string) =>
        store.run((db) =>
          db.all(Settings).filter((s) => s.project_id === projectId).sort((a, b) =>
            a.msg_config_id === null ? -1 : b.msg_config_id === null ? 1 : a.msg_config_id < b.msg_config_id ? -1 : 1
          )
        )
      ),
      putSettings: Effect.fn("GuardrailsRepo.putSettings")((settings: GuardrailSettingsRecord) =>
        store.run((db) => {
          requireProject(db, settings.project_id)
          db.put(Settings, settingsKey(settings.project_id, settings.msg_config_id), json({ ...settings, updated_at: timestamp(settings.updated_at) }))
        }).pipe(Effect.tap(() => PubSub.publish(changes, undefined)))
      ),
      changes: Stream.fromPubSub(changes),
      putZone: Effect.fn("GuardrailsRepo.putZone")((zone: ContactZoneRecord) =>
        store.run((db) => {
          requireProject(db, zone.project_id)
          db.put(Zones, zoneKey(zone.project_id, zone.recipient), json({ ...zone, updated_at: timestamp(zone.updated_at) }))
        })
      ),
      deleteZone: Effect.fn("GuardrailsRepo.deleteZone")((projectId: string, recipient: string) =>
        store.run((db) => db.remove(Zones, zoneKey(projectId, recipient)))
      ),
      recordMarketing: Effect.fn("GuardrailsRepo.recordMarketing")((send: MarketingSendRecord, prunedBefore: string) =>
        store.run((db) => {
          requireProject(db, send.project_id)
          for (const m of db.all(Marketing)) {
            if (m.project_id === send.project_id && m.recipient === send.recipient && instant(m.sent_at) < instant(prunedBefore)) {
              db.remove(Marketing, marketingKey(m))
            }
          }
          if (db.get(Marketing, marketingKey(send)) === undefined) {
            db.put(Marketing, marketingKey(send), { ...send, sent_at: timestamp(send.sent_at) })
          }
        })
      ),
      countMarketing: Effect.fn("GuardrailsRepo.countMarketing")(
        (projectId: string, msgConfigId: string | null, recipient: string, since: string) =>
          store.run((db) =>
            db.all(Marketing).filter((m) =>
              m.project_id === projectId && m.recipient === recipient &&
              (msgConfigId === null || m.msg_config_id === msgConfigId) && instant(m.sent_at) >= instant(since)
            ).length
          )
      ),
      eraseRecipient: Effect.fn("GuardrailsRepo.eraseRecipient")((projectId: string, recipient: string) =>
        store.run((db) => {
          let removed = 0
          for (const o of db.all(OptOuts)) {
            if (o.project_id === projectId && o.recipient === recipient && db.remove(OptOuts, o.id)) removed++
          }
          for (const m of db.all(Marketing)) {
            if (m.project_id === projectId && m.recipient === recipient && db.remove(Marketing, marketingKey(m))) removed++
          }
          if (db.remove(Zones, zoneKey(projectId, recipient))) removed++
          return removed
        })
      )
    })
  })
)
