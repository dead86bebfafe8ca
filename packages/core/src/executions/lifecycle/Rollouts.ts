/**
 * Staged rollouts (issue 32 §3): while a workflow has one, a new run whose contact falls inside the rollout's share
 * starts on the rollout's revision, every other run on the current definition. The share is sticky per contact (a
 * hash of workflow and contact, `Revision.inRollout`), so raising it only adds contacts. Promoting makes the revision
 * the current definition; rolling back drops the rollout. Runs already started keep their revision either way.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { Principal } from "../../projects/Projects.ts"
import { Transactor } from "../../ports/Transactor.ts"
import * as SignalledCache from "../../shared/SignalledCache.ts"
import { type Conflict, type NotFound, notFound, type Unprocessable, unprocessable } from "../../shared/ApiError.ts"
import { nowIso } from "../../shared/Time.ts"
import { inRollout, revisionId, type RolloutRecord } from "../../workflows/Revision.ts"
import { StoredRevisions } from "../../workflows/StoredRevisions.ts"
import type { WorkflowRecord } from "../../workflows/Workflow.ts"
import { Workflows } from "../../workflows/Workflows.ts"

export interface RolloutInput {
  readonly revision_id: string
  readonly percent: number
}

/**
 * Workflows' rollouts, remembered (`SignalledCache`: dropped on every rollout change of any host, and after 30 s as
 * a backstop), so a start reads nothing more when its workflow has none, which is nearly always.
 */
export class ActiveRollouts extends Context.Service<ActiveRollouts, {
  /**
   * The revision a staged rollout starts a new run of `workflow` for `contactId` on, if the contact falls in its
   * share (the `Launcher` asks). None: the current definition. Runs without a contact take the current definition:
   * the share is one of contacts.
   */
  readonly staged: (workflow: WorkflowRecord, contactId: string | null) => Effect.Effect<Option.Option<string>>
  /** Drops everything remembered: call it once a rollout changed. */
  readonly forget: Effect.Effect<void>
}>()("@parley/core/executions/ActiveRollouts") {
  static readonly layer = Layer.effect(
    ActiveRollouts,
    Effect.gen(function*() {
      const repo = yield* StoredRevisions
      const cache = yield* SignalledCache.make({
        lookup: (w: { readonly projectId: string; readonly workflowId: string }) => repo.getRollout(w.projectId, w.workflowId),
        keyOf: (w) => `${w.projectId}\u0000${w.workflowId}`,
        changes: repo.changes,
        ttlMs: 30_000,
        max: 10_000
      })
      return ActiveRollouts.of({
        staged: (workflow, contactId) =>
          contactId === null
            ? Effect.succeedNone
            : Effect.map(
              cache.get({ projectId: workflow.project_id, workflowId: workflow.id }),
              (rollout) => Option.isSome(rollout) && inRollout(rollout.value, contactId) ? Option.some(rollout.value.revision_id) : Option.none()
            ),
        forget: cache.forget
      })
    })
  )
}

export class Rollouts extends Context.Service<Rollouts, {
  readonly get: (principal: Principal, workflowId: string) => Effect.Effect<Option.Option<RolloutRecord>, NotFound>
  /** Starts the rollout, or changes its share or revision. */
  readonly start: (principal: Principal, workflowId: string, input: RolloutInput) => Effect.Effect<RolloutRecord, NotFound | Unprocessable>
  /** The revision becomes the current definition (a `promote` save) and the rollout ends. */
  readonly promote: (
    principal: Principal,
    workflowId: string,
    lockVersion: number | null
  ) => Effect.Effect<WorkflowRecord, NotFound | Unprocessable | Conflict>
  /** The rollout ends; new runs all take the current definition again. */
  readonly rollBack: (principal: Principal, workflowId: string) => Effect.Effect<void, NotFound>
}>()("@parley/core/executions/Rollouts") {
  static readonly layer = Layer.effect(
    Rollouts,
    Effect.gen(function*() {
      const repo = yield* StoredRevisions
      const workflows = yield* Workflows
      const tx = yield* Transactor
      const active = yield* ActiveRollouts

      const current = Effect.fnUntraced(function*(principal: Principal, workflowId: string) {
        const workflow = yield* workflows.get(principal, workflowId)
        const rollout = yield* repo.getRollout(workflow.project_id, workflow.id)
        return { workflow, rollout }
      })

      const noRollout = (workflowId: string) => notFound("Rollout", workflowId)

      return Rollouts.of({
        get: Effect.fn("Rollouts.get")(function*(principal: Principal, workflowId: string) {
          return (yield* current(principal, workflowId)).rollout
        }),
        start: Effect.fn("Rollouts.start")(function*(principal: Principal, workflowId: string, input: RolloutInput) {
          if (!Number.isInteger(input.percent) || input.percent < 0 || input.percent > 100) {
            return yield* unprocessable("percent must be an integer from 0 to 100", [{ path: "rollout.percent", message: "must be an integer from 0 to 100" }])
          }
          const workflow = yield* workflows.get(principal, workflowId)
          if (input.revision_id === revisionId(workflow.id, workflow.definition)) {
            return yield* unprocessable("The revision is already the current definition", [
              { path: "rollout.revision_id", message: "is the current definition" }
            ])
          }
          const revision = yield* repo.get(workflow.project_id, workflow.id, input.revision_id)
          if (Option.isNone(revision)) {
            return yield* unprocessable("revision_id does not name a revision of this workflow", [
              { path: "rollout.revision_id", message: "does not name a revision of this workflow" }
            ])
          }
          const record: RolloutRecord = {
            project_id: workflow.project_id,
            workflow_id: workflow.id,
            revision_id: input.revision_id,
            percent: input.percent,
            started_by: principal.apiKey,
            started_at: yield* nowIso
          }
          yield* repo.putRollout(record)
          yield* active.forget
          return record
        }),
        promote: Effect.fn("Rollouts.promote")(function*(principal: Principal, workflowId: string, lockVersion: number | null) {
          return yield* tx.withTransaction(Effect.gen(function*() {
            const { rollout, workflow } = yield* current(principal, workflowId)
            if (Option.isNone(rollout)) return yield* noRollout(workflowId)
            const revision = yield* repo.get(workflow.project_id, workflow.id, rollout.value.revision_id)
            if (Option.isNone(revision)) return yield* notFound("Revision", rollout.value.revision_id)
            const promoted = yield* workflows.update(
              principal,
              workflowId,
              { definition: revision.value.definition, lock_version: lockVersion },
              { action: "promote", previous: revision.value.definition }
            )
            yield* repo.deleteRollout(workflow.project_id, workflow.id)
            return promoted
          })).pipe(Effect.tap(() => active.forget))
        }),
        rollBack: Effect.fn("Rollouts.rollBack")(function*(principal: Principal, workflowId: string) {
          const workflow = yield* workflows.get(principal, workflowId)
          if (!(yield* repo.deleteRollout(workflow.project_id, workflow.id))) return yield* noRollout(workflowId)
          yield* active.forget
        })
      })
    })
  )
}
