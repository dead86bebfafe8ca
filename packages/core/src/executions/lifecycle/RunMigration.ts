/**
 * Moving waiting runs to another revision on request (issue 32 §3), node by node: a run waiting on a node the target
 * graph still has (same id, same node type) moves there and goes on from it when its input, timer or resume comes;
 * one whose node is gone stays on its revision or ends (`node_removed`), as the request says. A dry run counts.
 *
 * Crash-safe without a batch transaction: each run moves in its own compare-and-set write (a resume that got there
 * first wins, and the run is counted as skipped), and a run already on the target is skipped, so a request cut short
 * and sent again finishes the job without moving anyone twice.
 */
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import type { Principal } from "../../projects/Projects.ts"
import { type NotFound, notFound } from "../../shared/ApiError.ts"
import type { ListSlice, ListWindow } from "../../shared/Pagination.ts"
import { revisionId } from "../../workflows/Revision.ts"
import { StoredRevisions } from "../../workflows/StoredRevisions.ts"
import { Workflows } from "../../workflows/Workflows.ts"
import { ExecutionEngine } from "../Engine.ts"
import type { ExecutionRecord } from "../Execution.ts"
import { ExecutionsRepo } from "../ExecutionsRepo.ts"
import type { Graph } from "../Graph.ts"
import * as T from "../Transitions.ts"

export interface MigrationRequest {
  /** What to do with a run whose node the target lacks: leave it on its revision, or end it. */
  readonly on_missing_node: "stay" | "end"
  readonly dry_run: boolean
  /** Only runs on this revision (all other revisions when absent). */
  readonly from_revision_id?: string | undefined
}

export const MigrationRequestBody = Schema.Struct({
  on_missing_node: Schema.optionalKey(Schema.Literals(["stay", "end"]).annotate({
    description: "A run whose node the revision lacks: `stay` on its revision (default) or `end` (`node_removed`)"
  })),
  dry_run: Schema.optionalKey(Schema.Boolean.annotate({ description: "Count only; move nothing" })),
  from_revision_id: Schema.optionalKey(Schema.String.annotate({ description: "Only runs on this revision" }))
})

export const MigrationResult = Schema.Struct({
  revision_id: Schema.String,
  dry_run: Schema.Boolean,
  examined: Schema.Int.annotate({ description: "Waiting runs on another revision looked at" }),
  moved: Schema.Int,
  stayed: Schema.Int,
  ended: Schema.Int,
  skipped: Schema.Int.annotate({ description: "Runs that moved on (resumed, ended) while the request ran" })
})
export type MigrationResult = typeof MigrationResult.Type

const BATCH = 200

export class RunMigrations extends Context.Service<RunMigrations, {
  readonly migrate: (
    principal: Principal,
    workflowId: string,
    targetRevisionId: string,
    request: MigrationRequest
  ) => Effect.Effect<MigrationResult, NotFound>
}>()("@parley/core/executions/RunMigrations") {
  static readonly layer = Layer.effect(
    RunMigrations,
    Effect.gen(function*() {
      const workflows = yield* Workflows
      const revisions = yield* StoredRevisions
      const repo = yield* ExecutionsRepo
      const engine = yield* ExecutionEngine

      /** The target's node the run can stand on, if any. */
      const landing = (run: ExecutionRecord, from: Graph, to: Graph) => {
        if (run.current_node === null) return undefined
        const before = from.node(run.current_node)
        const after = to.node(run.current_node)
        return after !== undefined && before !== undefined && after.data.node_type === before.data.node_type ? after : undefined
      }

      /** One run, in its own write: what happened to it. */
      const migrateOne = Effect.fnUntraced(function*(
        run: ExecutionRecord,
        target: { readonly id: string; readonly graph: Graph },
        request: MigrationRequest
      ) {
        const from = yield* engine.graph(run.revision_id)
        const node = landing(run, from, target.graph)
        if (node === undefined && request.on_missing_node === "stay") return "stayed" as const
        if (request.dry_run) return node === undefined ? "ended" as const : "moved" as const
        const now = new Date(yield* Clock.currentTimeMillis).toISOString()
        const transition: T.Transition = node === undefined
          ? T.end(run, from, "node_removed", now)
          : {
            record: { ...run, revision_id: target.id, last_event_at: now, state_version: run.state_version + 1 },
            events: [{
              draft: { event_type: "revision_migrated", payload: { from_revision_id: run.revision_id, to_revision_id: target.id } },
              node
            }]
          }
        if (!(yield* engine.write(run, transition))) return "skipped" as const
        return node === undefined ? "ended" as const : "moved" as const
      })

      return RunMigrations.of({
        migrate: Effect.fn("RunMigrations.migrate")(function*(
          principal: Principal,
          workflowId: string,
          targetId: string,
          request: MigrationRequest
        ) {
          const workflow = yield* workflows.get(principal, workflowId)
          const stored = yield* revisions.get(workflow.project_id, workflow.id, targetId)
          if (Option.isNone(stored) && targetId !== revisionId(workflow.id, workflow.definition)) {
            return yield* notFound("Revision", targetId)
          }
          // The target is pinned like a start's (a current graph never saved before this feature gets stored here).
          const pinned = yield* engine.pinRevision(
            workflow.project_id,
            workflow.id,
            Option.match(stored, { onNone: () => workflow.definition, onSome: (r) => r.definition })
          )
          const target = { id: pinned, graph: yield* engine.graph(pinned) }
          const counts = { examined: 0, moved: 0, stayed: 0, ended: 0, skipped: 0 }
          // Page by (started_at, id): moving a run changes neither, so the walk sees every waiting run once.
          let window: ListWindow = { mode: "cursor", limit: BATCH }
          for (;;) {
            const slice: ListSlice<ExecutionRecord> = yield* repo.list(workflow.project_id, { workflow_id: workflow.id, status: "waiting" }, window)
            for (const listed of slice.items) {
              if (listed.revision_id === target.id) continue
              if (request.from_revision_id !== undefined && listed.revision_id !== request.from_revision_id) continue
              // The listed copy may be stale; the write's compare-and-set is on the version read here.
              const run = yield* repo.get(listed.id)
              if (Option.isNone(run) || run.value.status !== "waiting" || run.value.revision_id === target.id) continue
              counts.examined++
              counts[yield* migrateOne(run.value, target, request)]++
            }
            const last: ExecutionRecord | undefined = slice.items.at(-1)
            if (!slice.hasMore || last === undefined) break
            window = { mode: "cursor", limit: BATCH, after: { sortKey: last.started_at, id: last.id } }
          }
          return { revision_id: target.id, dry_run: request.dry_run, ...counts }
        })
      })
    })
  )
}

