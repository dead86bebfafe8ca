/**
 * `WorkflowsRepo` and `TriggersRepo` in memory (unit tests and demos). A deleted workflow takes its triggers, its
 * stored references, and (declared by the executions adapter, as the foreign keys' cascade does in Postgres) its
 * executions.
 */
import { Effect, Layer, Option, PubSub, Stream } from "effect"
import { Duplicate } from "../ports/StorageError.ts"
import type { CursorKey, ListSlice, ListWindow } from "../shared/Pagination.ts"
import { cascadeOnRemove, MemoryStore, memoryTable, type MemoryTables } from "../ports/MemoryStore.ts"
import { compareKeys, instant, json, nullableTimestamp, sliceWindow, timestamp, violation } from "../ports/MemoryRows.ts"
import { ProjectRows } from "../projects/MemoryProjects.ts"
import { TriggersRepo, WorkflowsRepo } from "./WorkflowsRepo.ts"
import type { TriggerRecord, TriggerType } from "./Trigger.ts"
import type { WorkflowFilter, WorkflowRecord, WorkflowStatus, WorkflowSummary } from "./Workflow.ts"
import { definitionReferences, type WorkflowReference } from "./WorkflowReferences.ts"

export const WorkflowRows = memoryTable<WorkflowRecord>("workflows")
const Triggers = memoryTable<TriggerRecord>("triggers")
/** A workflow's references (`definitionReferences` of its current definition), by workflow id: Postgres's `workflow_references`. */
const References = memoryTable<{
  readonly project_id: string
  readonly workflow_id: string
  readonly references: ReadonlyArray<WorkflowReference>
}>("workflow_references")

cascadeOnRemove(WorkflowRows, (db, workflow) => {
  db.remove(References, workflow.id)
})

/** Stores `workflow` with the references of its definition, in the caller's atomic `run`. */
const putWorkflow = (db: MemoryTables, workflow: WorkflowRecord) => {
  db.put(WorkflowRows, workflow.id, workflow)
  db.put(References, workflow.id, {
    project_id: workflow.project_id,
    workflow_id: workflow.id,
    references: definitionReferences(workflow.definition)
  })
}

const keyOf = (row: { readonly created_at: string; readonly id: string }): CursorKey => ({
  sortKey: row.created_at,
  id: row.id
})

const oldestFirst = <A extends { readonly created_at: string; readonly id: string }>(rows: ReadonlyArray<A>) =>
  [...rows].sort((a, b) => compareKeys(keyOf(a), keyOf(b)))


const storedWorkflow = (w: WorkflowRecord): WorkflowRecord => ({
  ...w,
  created_at: timestamp(w.created_at),
  updated_at: timestamp(w.updated_at),
  last_executed_at: nullableTimestamp(w.last_executed_at),
  created_by: json(w.created_by),
  definition: json(w.definition)
})

const storedTrigger = (t: TriggerRecord): TriggerRecord => ({
  ...t,
  created_at: timestamp(t.created_at),
  updated_at: timestamp(t.updated_at),
  triggerable: json(t.triggerable)
})

const matches = (filter: WorkflowFilter) => (w: WorkflowRecord) =>
  (filter.status !== undefined ? w.status === filter.status : w.status !== "archived") &&
  (filter.name_contains === undefined || w.name.toLowerCase().includes(filter.name_contains.toLowerCase())) &&
  (filter.created_after === undefined || instant(w.created_at) >= instant(filter.created_after)) &&
  (filter.created_before === undefined || instant(w.created_at) <= instant(filter.created_before))

const summaryOf = ({ definition: _, ...summary }: WorkflowRecord): WorkflowSummary => summary

/** The project's workflows matching `filter`, newest first, cut to `window`. */
const listed = (all: ReadonlyArray<WorkflowRecord>, projectId: string, filter: WorkflowFilter, window: ListWindow) =>
  sliceWindow(oldestFirst(all.filter((w) => w.project_id === projectId).filter(matches(filter))).reverse(), window)

export const layerMemoryWorkflowsRepo = Layer.effect(
  WorkflowsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore

    /** The unique key `workflow` would collide on among the project's other workflows. */
    const collision = (all: ReadonlyArray<WorkflowRecord>, workflow: WorkflowRecord): Duplicate | undefined => {
      const others = all.filter((w) => w.project_id === workflow.project_id && w.id !== workflow.id)
      if (others.some((w) => w.name.toLowerCase() === workflow.name.toLowerCase())) return new Duplicate({ field: "name" })
      if (others.some((w) => w.slug === workflow.slug)) return new Duplicate({ field: "slug" })
      return undefined
    }

    return WorkflowsRepo.of({
      insert: Effect.fn("WorkflowsRepo.insert")(function*(workflow: WorkflowRecord) {
        const duplicate = yield* store.run((db) => {
          if (db.get(ProjectRows, workflow.project_id) === undefined) violation(`no project ${workflow.project_id}`)
          if (db.get(WorkflowRows, workflow.id) !== undefined) violation(`duplicate workflow id ${workflow.id}`)
          const duplicate = collision(db.all(WorkflowRows), workflow)
          if (duplicate === undefined) putWorkflow(db, storedWorkflow(workflow))
          return duplicate
        })
        if (duplicate !== undefined) return yield* duplicate
      }),
      findById: Effect.fn("WorkflowsRepo.findById")((projectId: string, id: string) =>
        store.run((db) => Option.filter(Option.fromNullishOr(db.get(WorkflowRows, id)), (w) => w.project_id === projectId))
      ),
      findSummary: Effect.fn("WorkflowsRepo.findSummary")((projectId: string, id: string) =>
        store.run((db) =>
          Option.map(
            Option.filter(Option.fromNullishOr(db.get(WorkflowRows, id)), (w) => w.project_id === projectId),
            summaryOf
          )
        )
      ),
      list: Effect.fn("WorkflowsRepo.list")((projectId: string, filter: WorkflowFilter, window: ListWindow) =>
        store.run((db) => listed(db.all(WorkflowRows), projectId, filter, window))
      ),
      listSummaries: Effect.fn("WorkflowsRepo.listSummaries")(
        (projectId: string, filter: WorkflowFilter, window: ListWindow) =>
          store.run((db) => {
            const slice = listed(db.all(WorkflowRows), projectId, filter, window)
            return { ...slice, items: slice.items.map(summaryOf) }
          })
      ),
      update: Effect.fn("WorkflowsRepo.update")(function*(workflow: WorkflowRecord, expectedLockVersion: number) {
        const result = yield* store.run((db) => {
          const current = db.get(WorkflowRows, workflow.id)
          if (
            current === undefined || current.project_id !== workflow.project_id ||
            current.lock_version !== expectedLockVersion
          ) return Option.none<WorkflowRecord>()
          const duplicate = collision(db.all(WorkflowRows), workflow)
          if (duplicate !== undefined) return duplicate
          // Identity and creation time are not the caller's to change.
          const updated = storedWorkflow({ ...workflow, project_id: current.project_id, created_at: current.created_at })
          putWorkflow(db, updated)
          return Option.some(updated)
        })
        if (result instanceof Duplicate) return yield* result
        return result
      }),
      referrers: Effect.fn("WorkflowsRepo.referrers")(
        (projectId: string, reference: WorkflowReference, statuses: ReadonlyArray<WorkflowStatus>, limit: number) =>
          store.run((db) => {
            const found = db.all(References).flatMap((row) => {
              const workflow = db.get(WorkflowRows, row.workflow_id)
              return row.project_id === projectId && workflow !== undefined && statuses.includes(workflow.status) &&
                  row.references.some((r) => r.kind === reference.kind && r.target === reference.target)
                ? [workflow]
                : []
            })
            const rank = (w: WorkflowRecord) => statuses.indexOf(w.status)
            return found
              .sort((a, b) => rank(a) - rank(b) || compareKeys(keyOf(b), keyOf(a)))
              .slice(0, Math.max(limit, 0))
              .map(({ id, name, status }) => ({ id, name, status }))
          })
      ),
      delete: Effect.fn("WorkflowsRepo.delete")((projectId: string, id: string) =>
        store.run((db) => {
          const workflow = db.get(WorkflowRows, id)
          if (workflow === undefined || workflow.project_id !== projectId) return false
          for (const t of db.all(Triggers)) if (t.workflow_id === id) db.remove(Triggers, t.id)
          return db.remove(WorkflowRows, id)
        })
      ),
      slugTaken: Effect.fn("WorkflowsRepo.slugTaken")((projectId: string, slug: string) =>
        store.run((db) => db.all(WorkflowRows).some((w) => w.project_id === projectId && w.slug === slug))
      ),
      countExecution: Effect.fn("WorkflowsRepo.countExecution")((projectId: string, id: string, at: string) =>
        store.run((db) => {
          const w = db.get(WorkflowRows, id)
          if (w === undefined || w.project_id !== projectId) return
          const last = w.last_executed_at === null || Date.parse(at) > Date.parse(w.last_executed_at) ? timestamp(at) : w.last_executed_at
          db.put(WorkflowRows, id, { ...w, execution_count: w.execution_count + 1, last_executed_at: last })
        })
      )
    })
  })
)

export const layerMemoryTriggersRepo = Layer.effect(
  TriggersRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore

    const inProject = (projectId: string) => (t: TriggerRecord) => t.project_id === projectId

    return TriggersRepo.of({
      insert: Effect.fn("TriggersRepo.insert")((trigger: TriggerRecord) =>
        store.run((db) => {
          const workflow = db.get(WorkflowRows, trigger.workflow_id)
          if (workflow === undefined || workflow.project_id !== trigger.project_id) {
            violation(`no workflow ${trigger.workflow_id} in project ${trigger.project_id}`)
          }
          if (db.get(Triggers, trigger.id) !== undefined) violation(`duplicate trigger id ${trigger.id}`)
          db.put(Triggers, trigger.id, storedTrigger(trigger))
        })
      ),
      findById: Effect.fn("TriggersRepo.findById")((projectId: string, id: string) =>
        store.run((db) => Option.filter(Option.fromNullishOr(db.get(Triggers, id)), inProject(projectId)))
      ),
      listByWorkflow: Effect.fn("TriggersRepo.listByWorkflow")((projectId: string, workflowId: string) =>
        store.run((db) =>
          oldestFirst(db.all(Triggers).filter((t) => t.project_id === projectId && t.workflow_id === workflowId))
        )
      ),
      listByType: Effect.fn("TriggersRepo.listByType")((projectId: string, type: TriggerType) =>
        store.run((db) =>
          oldestFirst(db.all(Triggers).filter((t) => t.project_id === projectId && t.trigger_type === type)).flatMap(
            (trigger) => {
              const workflow = db.get(WorkflowRows, trigger.workflow_id)
              return workflow === undefined
                ? []
                : [{ trigger, workflowStatus: workflow.status, workflowName: workflow.name }]
            }
          )
        )
      ),
      update: Effect.fn("TriggersRepo.update")((trigger: TriggerRecord) =>
        store.run((db) => {
          const current = db.get(Triggers, trigger.id)
          if (current === undefined || current.project_id !== trigger.project_id) return
          db.put(
            Triggers,
            trigger.id,
            storedTrigger({
              ...current,
              trigger_type: trigger.trigger_type,
              active: trigger.active,
              display_name: trigger.display_name,
              triggerable: trigger.triggerable,
              updated_at: trigger.updated_at
            })
          )
        })
      ),
      delete: Effect.fn("TriggersRepo.delete")((projectId: string, id: string) =>
        store.run((db) => {
          const trigger = db.get(Triggers, id)
          return trigger !== undefined && trigger.project_id === projectId && db.remove(Triggers, id)
        })
      )
    })
  })
)

