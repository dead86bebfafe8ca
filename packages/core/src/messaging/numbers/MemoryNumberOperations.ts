/** `DisplayNameRequestsRepo` and `NumberHealthRepo` in memory, over the shared `MemoryStore`. */
import { Effect, Layer, Option } from "effect"
import { type DisplayNameRequestRecord, isOpenDisplayNameRequest } from "./DisplayNameRequest.ts"
import type { NumberHealthState } from "./Health.ts"
import { DisplayNameRequestsRepo } from "./DisplayNameRequestsRepo.ts"
import { NumberHealthRepo } from "./NumberHealthRepo.ts"
import { Duplicate } from "../../ports/StorageError.ts"
import type { ListWindow } from "../../shared/Pagination.ts"
import { MemoryStore, memoryTable } from "../../ports/MemoryStore.ts"
import { compareKeys, json, nullableTimestamp, sliceWindow, timestamp } from "../../ports/MemoryRows.ts"

const Requests = memoryTable<DisplayNameRequestRecord>("msg_display_name_requests")
const Health = memoryTable<NumberHealthState>("msg_number_health")

const storedRequest = (r: DisplayNameRequestRecord): DisplayNameRequestRecord => ({
  ...r,
  submitted_at: timestamp(r.submitted_at),
  reviewed_at: nullableTimestamp(r.reviewed_at),
  applied_at: nullableTimestamp(r.applied_at),
  created_at: timestamp(r.created_at),
  updated_at: timestamp(r.updated_at)
})

export const layerMemoryDisplayNameRequestsRepo = Layer.effect(
  DisplayNameRequestsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const openOf = (rows: ReadonlyArray<DisplayNameRequestRecord>, msgConfigId: string) =>
      rows.find((r) => r.msg_config_id === msgConfigId && isOpenDisplayNameRequest(r.status))
    return DisplayNameRequestsRepo.of({
      insert: Effect.fn("DisplayNameRequestsRepo.insert")(function*(request: DisplayNameRequestRecord) {
        const clash = yield* store.run((db) => {
          if (isOpenDisplayNameRequest(request.status) && openOf(db.all(Requests), request.msg_config_id) !== undefined) {
            return true
          }
          db.put(Requests, request.id, storedRequest(request))
          return false
        })
        if (clash) return yield* new Duplicate({ field: "msg_config_id" })
      }),
      update: Effect.fn("DisplayNameRequestsRepo.update")((request: DisplayNameRequestRecord) =>
        store.run((db) => {
          const current = db.get(Requests, request.id)
          if (current === undefined || current.project_id !== request.project_id) return Option.none()
          const updated = storedRequest({
            ...current,
            status: request.status,
            reviewed_at: request.reviewed_at,
            applied_at: request.applied_at,
            upstream_error_code: request.upstream_error_code,
            upstream_error_subcode: request.upstream_error_subcode,
            upstream_error_type: request.upstream_error_type,
            upstream_error_message: request.upstream_error_message,
            updated_at: request.updated_at
          })
          db.put(Requests, request.id, updated)
          return Option.some(updated)
        })
      ),
      findById: Effect.fn("DisplayNameRequestsRepo.findById")((projectId: string, id: string) =>
        store.run((db) => Option.filter(Option.fromUndefinedOr(db.get(Requests, id)), (r) => r.project_id === projectId))
      ),
      findOpen: Effect.fn("DisplayNameRequestsRepo.findOpen")((msgConfigId: string) =>
        store.run((db) => Option.fromUndefinedOr(openOf(db.all(Requests), msgConfigId)))
      ),
      list: Effect.fn("DisplayNameRequestsRepo.list")((projectId: string, msgConfigId: string, window: ListWindow) =>
        store.run((db) => {
          const rows = db.all(Requests).filter((r) => r.project_id === projectId && r.msg_config_id === msgConfigId)
          const newestFirst = [...rows].sort((a, b) =>
            compareKeys({ sortKey: b.created_at, id: b.id }, { sortKey: a.created_at, id: a.id })
          )
          return sliceWindow(newestFirst, window)
        })
      )
    })
  })
)

export const layerMemoryNumberHealthRepo = Layer.effect(
  NumberHealthRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    return NumberHealthRepo.of({
      get: Effect.fn("NumberHealthRepo.get")((msgConfigId: string) =>
        store.run((db) => Option.fromUndefinedOr(db.get(Health, msgConfigId)))
      ),
      put: Effect.fn("NumberHealthRepo.put")((state: NumberHealthState) =>
        store.run((db) =>
          db.put(Health, state.msg_config_id, {
            ...state,
            report: json(state.report),
            checked_at: nullableTimestamp(state.checked_at),
            held_until: nullableTimestamp(state.held_until)
          })
        )
      )
    })
  })
)

export const layerMemoryNumberOperations = Layer.mergeAll(layerMemoryDisplayNameRequestsRepo, layerMemoryNumberHealthRepo)
