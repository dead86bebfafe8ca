/**
 * `RevisionsRepo` in memory, keeping the rules of the Postgres schema (migration 0035): saves and the rollout belong
 * to an existing workflow of their project and go with it; graphs are shared with the revisions runs are pinned to
 * (the `workflow_revisions` table) and counted against the runs (`workflow_executions`).
 */
import { Effect, Layer, Option, PubSub, Stream } from "effect"
import { cascadeOnRemove, MemoryStore, memoryTable, type MemoryTables } from "../ports/MemoryStore.ts"
import { compareKeys, json, sliceWindow, timestamp, violation } from "../ports/MemoryRows.ts"
import type { ListWindow } from "../shared/Pagination.ts"
import { WorkflowRows } from "./MemoryWorkflows.ts"
import { type RevisionSummaryRecord, type RolloutRecord, SAVES_SHOWN, type SaveRecord } from "./Revision.ts"
import { RevisionsRepo } from "./RevisionsRepo.ts"
import type { Definition } from "./Workflow.ts"

/** The graphs' table, owned with the executions' adapter (runs pin these rows too). */
const Graphs = memoryTable<{
  readonly id: string
  readonly project_id: string
  readonly workflow_id: string
  readonly definition: Definition
  readonly created_at: string
}>("workflow_revisions")
/** The runs' table (read only here: how many runs each revision has). */
const Runs = memoryTable<{ readonly revision_id: string; readonly status: string }>("workflow_executions")
const Saves = memoryTable<SaveRecord>("workflow_saves")
const Rollouts = memoryTable<RolloutRecord>("workflow_rollouts")

const rolloutKey = (projectId: string, workflowId: string) => `${projectId}:${workflowId}`

// A deleted workflow takes its saves and its rollout (the graphs go with the executions' cascade).
cascadeOnRemove(WorkflowRows, (db, workflow) => {
  for (const s of db.all(Saves)) if (s.workflow_id === workflow.id && s.project_id === workflow.project_id) db.remove(Saves, s.id)
  db.remove(Rollouts, rolloutKey(workflow.project_id, workflow.id))
})

const requireWorkflow = (db: MemoryTables, projectId: string, workflowId: string) => {
  const workflow = db.get(WorkflowRows, workflowId)
  if (workflow === undefined || workflow.project_id !== projectId) violation(`no workflow ${workflowId} in project ${projectId}`)
}

const summary = (db: MemoryTables, graph: { readonly id: string; readonly workflow_id: string; readonly created_at: string }): RevisionSummaryRecord => {
  const saves = db.all(Saves).filter((s) => s.revision_id === graph.id)
    .sort((a, b) => compareKeys({ sortKey: b.saved_at, id: b.id }, { sortKey: a.saved_at, id: a.id }))
  const runs = db.all(Runs).filter((r) => r.revision_id === graph.id)
  return {
    id: graph.id,
    workflow_id: graph.workflow_id,
    created_at: graph.created_at,
    saves: saves.slice(0, SAVES_SHOWN),
    save_count: saves.length,
    execution_count: runs.length,
    waiting_count: runs.filter((r) => r.status === "waiting").length
  }
}

export const layerMemoryRevisionsRepo = Layer.effect(
  RevisionsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const changes = yield* PubSub.unbounded<void>()
    const signal = <A>(result: A) => Effect.as(PubSub.publish(changes, undefined), result)
    const graphsOf = (db: MemoryTables, projectId: string, workflowId: string) =>
      db.all(Graphs).filter((g) => g.project_id === projectId && g.workflow_id === workflowId)

    return RevisionsRepo.of({
      recordSave: Effect.fn("RevisionsRepo.recordSave")((save: SaveRecord, definition: Definition) =>
        store.run((db) => {
          requireWorkflow(db, save.project_id, save.workflow_id)
          if (db.get(Saves, save.id) !== undefined) violation(`duplicate save id ${save.id}`)
          if (db.get(Graphs, save.revision_id) === undefined) {
            db.put(Graphs, save.revision_id, {
              id: save.revision_id,
              project_id: save.project_id,
              workflow_id: save.workflow_id,
              definition: json(definition),
              created_at: timestamp(save.saved_at)
            })
          }
          db.put(Saves, save.id, { ...save, saved_by: json(save.saved_by), saved_at: timestamp(save.saved_at) })
        })
      ),
      list: Effect.fn("RevisionsRepo.list")((projectId: string, workflowId: string, window: ListWindow) =>
        store.run((db) => {
          const newestFirst = graphsOf(db, projectId, workflowId)
            .sort((a, b) => compareKeys({ sortKey: b.created_at, id: b.id }, { sortKey: a.created_at, id: a.id }))
          const slice = sliceWindow(newestFirst, window)
          return { ...slice, items: slice.items.map((g) => summary(db, g)) }
        })
      ),
      get: Effect.fn("RevisionsRepo.get")((projectId: string, workflowId: string, revisionId: string) =>
        store.run((db) => {
          const g = db.get(Graphs, revisionId)
          return g === undefined || g.project_id !== projectId || g.workflow_id !== workflowId
            ? Option.none()
            : Option.some({ ...summary(db, g), definition: g.definition })
        })
      ),
      getRollout: Effect.fn("RevisionsRepo.getRollout")((projectId: string, workflowId: string) =>
        store.run((db) => Option.fromNullishOr(db.get(Rollouts, rolloutKey(projectId, workflowId))))
      ),
      putRollout: Effect.fn("RevisionsRepo.putRollout")((rollout: RolloutRecord) =>
        store.run((db) => {
          requireWorkflow(db, rollout.project_id, rollout.workflow_id)
          db.put(Rollouts, rolloutKey(rollout.project_id, rollout.workflow_id), {
            ...rollout,
            started_by: json(rollout.started_by),
            started_at: timestamp(rollout.started_at)
          })
        }).pipe(Effect.flatMap(signal))
      ),
      deleteRollout: Effect.fn("RevisionsRepo.deleteRollout")((projectId: string, workflowId: string) =>
        store.run((db) => db.remove(Rollouts, rolloutKey(projectId, workflowId))).pipe(Effect.flatMap(signal))
      ),
      changes: Stream.fromPubSub(changes)
    })
  })
)
