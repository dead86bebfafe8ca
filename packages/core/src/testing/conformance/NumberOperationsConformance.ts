/**
 * The behaviour every adapter of the number-operation ports owes, written once:
 * `DisplayNameRequestsRepo` (one open request per number, updates of the
 * moving fields only, newest-first lists) and `NumberHealthRepo` (one state
 * per config, replaced whole).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import type { DisplayNameRequestRecord } from "../../messaging/numbers/DisplayNameRequest.ts"
import type { NumberHealthState } from "../../messaging/numbers/Health.ts"
import { DisplayNameRequestsRepo } from "../../messaging/numbers/DisplayNameRequestsRepo.ts"
import { MessageConfigsRepo } from "../../messaging/numbers/MessageConfigsRepo.ts"
import { NumberHealthRepo } from "../../messaging/numbers/NumberHealthRepo.ts"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import { at, givenProject, uniqueId } from "./fixtures.ts"
import { makeConfig } from "./MessagingStorageConformance.ts"

export type NumberOperationsPorts = ProjectsRepo | MessageConfigsRepo | DisplayNameRequestsRepo | NumberHealthRepo

const givenConfig = Effect.gen(function*() {
  const project = yield* givenProject()
  const config = makeConfig(project.id)
  yield* (yield* MessageConfigsRepo).insert(config)
  return { project, config }
})

const makeRequest = (
  projectId: string,
  msgConfigId: string,
  overrides: Partial<DisplayNameRequestRecord> = {}
): DisplayNameRequestRecord => ({
  id: uniqueId("dnr"),
  project_id: projectId,
  msg_config_id: msgConfigId,
  requested_display_name: "Acme Store",
  previous_display_name: "Acme Support",
  status: "pending_review",
  submitted_at: at(0),
  reviewed_at: null,
  applied_at: null,
  upstream_error_code: null,
  upstream_error_subcode: null,
  upstream_error_type: null,
  upstream_error_message: null,
  created_at: at(0),
  updated_at: at(0),
  ...overrides
})

const firstPage = { mode: "cursor", limit: 20 } as const

export const numberOperationsConformance = <E>(name: string, storage: Layer.Layer<NumberOperationsPorts, E>): void => {
  describe(name, () => {
    layer(storage, { excludeTestServices: true })("DisplayNameRequestsRepo", (it) => {
      it.effect("stores a request and finds it by id in its project only", () =>
        Effect.gen(function*() {
          const repo = yield* DisplayNameRequestsRepo
          const { config, project } = yield* givenConfig
          const other = yield* givenProject()
          const request = makeRequest(project.id, config.id, { upstream_error_code: 368, upstream_error_type: "OAuthException" })
          yield* repo.insert(request)
          assert.deepStrictEqual(yield* repo.findById(project.id, request.id), Option.some(request))
          assert.isTrue(Option.isNone(yield* repo.findById(other.id, request.id)))
        }))

      it.effect("keeps one open request per number; final ones do not count", () =>
        Effect.gen(function*() {
          const repo = yield* DisplayNameRequestsRepo
          const { config, project } = yield* givenConfig
          const { config: sibling } = yield* givenConfig
          yield* repo.insert(makeRequest(project.id, config.id, { status: "declined", created_at: at(1) }))
          assert.isTrue(Option.isNone(yield* repo.findOpen(config.id)))
          const open = makeRequest(project.id, config.id, { status: "submitted", created_at: at(2) })
          yield* repo.insert(open)
          const clash = yield* Effect.flip(repo.insert(makeRequest(project.id, config.id, { status: "approved" })))
          assert.strictEqual(clash.field, "msg_config_id")
          yield* repo.insert(makeRequest(project.id, config.id, { status: "failed", created_at: at(3) }))
          yield* repo.insert(makeRequest(sibling.project_id, sibling.id, { status: "pending_review" }))
          assert.deepStrictEqual(Option.map(yield* repo.findOpen(config.id), (r) => r.id), Option.some(open.id))
          // Once it is final, the number takes a new one.
          yield* repo.update({ ...open, status: "cancelled", updated_at: at(4) })
          assert.isTrue(Option.isNone(yield* repo.findOpen(config.id)))
          yield* repo.insert(makeRequest(project.id, config.id, { status: "submitted", created_at: at(5) }))
        }))

      it.effect("updates the moving fields only, in the request's project", () =>
        Effect.gen(function*() {
          const repo = yield* DisplayNameRequestsRepo
          const { config, project } = yield* givenConfig
          const other = yield* givenProject()
          const request = makeRequest(project.id, config.id)
          yield* repo.insert(request)
          const moved: DisplayNameRequestRecord = {
            ...request,
            requested_display_name: "ignored",
            status: "applied",
            reviewed_at: at(10),
            applied_at: at(20),
            upstream_error_code: 100,
            upstream_error_subcode: 33,
            upstream_error_type: "OAuthException",
            upstream_error_message: "gone",
            updated_at: at(20)
          }
          assert.isTrue(Option.isNone(yield* repo.update({ ...moved, project_id: other.id })))
          const updated = Option.getOrThrow(yield* repo.update(moved))
          assert.deepStrictEqual(updated, { ...moved, requested_display_name: request.requested_display_name })
          assert.deepStrictEqual(yield* repo.findById(project.id, request.id), Option.some(updated))
        }))

      it.effect("lists a number's requests newest first in both paging modes", () =>
        Effect.gen(function*() {
          const repo = yield* DisplayNameRequestsRepo
          const { config, project } = yield* givenConfig
          const { config: sibling } = yield* givenConfig
          const requests = [1, 2, 3].map((i) => makeRequest(project.id, config.id, { status: "cancelled", created_at: at(i) }))
          for (const request of requests) yield* repo.insert(request)
          yield* repo.insert(makeRequest(sibling.project_id, sibling.id))
          const ids = (items: ReadonlyArray<DisplayNameRequestRecord>) => items.map((r) => r.id)
          const all = yield* repo.list(project.id, config.id, firstPage)
          assert.deepStrictEqual(ids(all.items), ids([...requests].reverse()))
          assert.isFalse(all.hasMore)
          const cursor = yield* repo.list(project.id, config.id, {
            mode: "cursor",
            limit: 1,
            after: { sortKey: requests[2]!.created_at, id: requests[2]!.id }
          })
          assert.deepStrictEqual(ids(cursor.items), [requests[1]!.id])
          assert.isTrue(cursor.hasMore)
          const page = yield* repo.list(project.id, config.id, { mode: "page", page: 2, perPage: 2 })
          assert.deepStrictEqual(ids(page.items), [requests[0]!.id])
          assert.strictEqual(page.total, 3)
          assert.deepStrictEqual((yield* repo.list(sibling.project_id, config.id, firstPage)).items, [])
        }))
    })

    layer(storage, { excludeTestServices: true })("NumberHealthRepo", (it) => {
      it.effect("keeps one state per config, replaced whole, report and all", () =>
        Effect.gen(function*() {
          const repo = yield* NumberHealthRepo
          const { config } = yield* givenConfig
          assert.isTrue(Option.isNone(yield* repo.get(config.id)))
          const state: NumberHealthState = {
            msg_config_id: config.id,
            credentials: "digest-1",
            report: {
              status: "unhealthy",
              timestamp: at(0),
              checks: {
                phone_number_access: { passed: false, details: {}, error: "(#190) Invalid OAuth access token" },
                phone_number_connection: { passed: null, details: { status: "UNKNOWN" } }
              }
            },
            checked_at: at(0),
            failures: 1,
            held_until: at(300_000)
          }
          yield* repo.put(state)
          assert.deepStrictEqual(yield* repo.get(config.id), Option.some(state))
          const cleared: NumberHealthState = { ...state, credentials: "digest-2", report: null, checked_at: null, failures: 0, held_until: null }
          yield* repo.put(cleared)
          assert.deepStrictEqual(yield* repo.get(config.id), Option.some(cleared))
        }))
    })
  })
}
