/** A workflow's revisions, rollout, run migrations, experiments and drop-off: decode → lifecycle services → encode. */
import {
  createdCursorKeyOf,
  CurrentPrincipal,
  Experiments,
  ParleyApi,
  resolveWindow,
  Rollouts,
  RunMigrations,
  toListBody,
  toRollout,
  toWorkflow,
  WorkflowRevisions
} from "@parley/core"
import { Effect, identity, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { locationOf } from "./Lists.ts"

export const WorkflowLifecycleHandlers = HttpApiBuilder.group(
  ParleyApi,
  "workflowLifecycle",
  Effect.fn(function*(handlers) {
    const revisions = yield* WorkflowRevisions
    const rollouts = yield* Rollouts
    const migrations = yield* RunMigrations
    const experiments = yield* Experiments
    return handlers
      .handle("listRevisions", ({ params, query, request }) =>
        Effect.gen(function*() {
          const window = yield* resolveWindow(query)
          const slice = yield* revisions.list(yield* CurrentPrincipal, params.id, window)
          return toListBody(window, slice, createdCursorKeyOf, identity, yield* locationOf(request))
        }))
      .handle("saveRevision", ({ params, payload }) =>
        Effect.gen(function*() {
          return { data: yield* revisions.saveDraft(yield* CurrentPrincipal, params.id, payload.revision.definition) }
        }))
      .handle("getRevision", ({ params }) =>
        Effect.gen(function*() {
          return { data: yield* revisions.get(yield* CurrentPrincipal, params.id, params.revision_id) }
        }))
      .handle("compareRevisions", ({ params, query }) =>
        Effect.gen(function*() {
          return { data: yield* revisions.compare(yield* CurrentPrincipal, params.id, params.revision_id, query.with) }
        }))
      .handle("restoreRevision", ({ params, payload }) =>
        Effect.gen(function*() {
          const restored = yield* revisions.restore(yield* CurrentPrincipal, params.id, params.revision_id, payload.lock_version ?? null)
          return { data: toWorkflow(restored) }
        }))
      .handle("migrateRuns", ({ params, payload }) =>
        Effect.gen(function*() {
          const request = {
            on_missing_node: payload.on_missing_node ?? "stay",
            dry_run: payload.dry_run ?? false,
            from_revision_id: payload.from_revision_id
          }
          return { data: yield* migrations.migrate(yield* CurrentPrincipal, params.id, params.revision_id, request) }
        }))
      .handle("getRollout", ({ params }) =>
        Effect.gen(function*() {
          return { data: Option.getOrNull(Option.map(yield* rollouts.get(yield* CurrentPrincipal, params.id), toRollout)) }
        }))
      .handle("startRollout", ({ params, payload }) =>
        Effect.gen(function*() {
          return { data: toRollout(yield* rollouts.start(yield* CurrentPrincipal, params.id, payload.rollout)) }
        }))
      .handle("promoteRollout", ({ params, payload }) =>
        Effect.gen(function*() {
          return { data: toWorkflow(yield* rollouts.promote(yield* CurrentPrincipal, params.id, payload.lock_version ?? null)) }
        }))
      .handle("rollBack", ({ params }) =>
        Effect.gen(function*() {
          yield* rollouts.rollBack(yield* CurrentPrincipal, params.id)
        }))
      .handle("getExperiment", ({ params }) =>
        Effect.gen(function*() {
          return { data: yield* experiments.get(yield* CurrentPrincipal, params.id, params.node_id) }
        }))
      .handle("dropOff", ({ params }) =>
        Effect.gen(function*() {
          return { data: yield* experiments.dropOff(yield* CurrentPrincipal, params.id) }
        }))
  })
)
