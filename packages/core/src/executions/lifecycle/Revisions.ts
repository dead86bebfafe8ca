/**
 * A workflow's revisions (issue 32 §3): the graphs its runs used and every saved definition, one revision fetched,
 * two compared, one restored as the current definition, a definition stored as a revision without going live.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { Principal } from "../../projects/Projects.ts"
import type { ListSlice, ListWindow } from "../../shared/Pagination.ts"
import { type Conflict, type NotFound, notFound, type Unprocessable } from "../../shared/ApiError.ts"
import {
  compareDefinitions,
  revisionId,
  type RevisionComparison,
  type RevisionDetail,
  type RevisionSummary,
  type RevisionSummaryRecord
} from "../../workflows/Revision.ts"
import { StoredRevisions } from "../../workflows/StoredRevisions.ts"
import type { WorkflowRecord } from "../../workflows/Workflow.ts"
import { Workflows } from "../../workflows/Workflows.ts"

const toSummary = (r: RevisionSummaryRecord, currentId: string): RevisionSummary => ({
  id: r.id,
  current: r.id === currentId,
  created_at: r.created_at,
  saves: r.saves.map((s) => ({ action: s.action, saved_by: s.saved_by, saved_at: s.saved_at })),
  save_count: r.save_count,
  execution_count: r.execution_count,
  waiting_count: r.waiting_count
})

/** The current graph of a workflow saved before revisions were recorded: listed, with no saves, until it changes. */
const unrecorded = (w: WorkflowRecord): RevisionSummaryRecord => ({
  id: revisionId(w.id, w.definition),
  workflow_id: w.id,
  created_at: w.updated_at,
  saves: [],
  save_count: 0,
  execution_count: 0,
  waiting_count: 0
})

/**
 * The window over `newest` followed by the stored list (`list`): the current graph of a workflow saved before
 * revisions were recorded is newer than anything stored (its time is the workflow's last change).
 */
const withNewest = Effect.fnUntraced(function*(
  newest: RevisionSummaryRecord,
  window: ListWindow,
  list: (window: ListWindow) => Effect.Effect<ListSlice<RevisionSummaryRecord>>
) {
  if (window.mode === "page") {
    // One place later than stored: page p holds stored items from (p-1)·n-1, so it spans two stored pages.
    const { page, perPage } = window
    const here = yield* list(window)
    if (page === 1) return { items: [newest, ...here.items].slice(0, perPage), hasMore: here.total + 1 > perPage, total: here.total + 1 }
    const before = yield* list({ mode: "page", page: page - 1, perPage })
    const items = [...before.items.slice(-1), ...here.items].slice(0, perPage)
    return { items, hasMore: (page - 1) * perPage + items.length < here.total + 1, total: here.total + 1 }
  }
  if (window.after !== undefined) return yield* list(window)
  const stored = yield* list(window)
  // From the newest (no key), or towards newer graphs and none left there: the newest leads the page.
  if (window.before === undefined) {
    return { items: [newest, ...stored.items].slice(0, window.limit), hasMore: stored.hasMore || stored.items.length === window.limit, total: 0 }
  }
  const key = window.before
  const newer = Date.parse(newest.created_at) - Date.parse(key.sortKey) || (newest.id > key.id ? 1 : newest.id < key.id ? -1 : 0)
  if (stored.hasMore || newer <= 0) return stored
  const items = [newest, ...stored.items]
  return items.length > window.limit
    ? { items: items.slice(-window.limit), hasMore: true, total: 0 }
    : { items, hasMore: false, total: 0 }
})

export class WorkflowRevisions extends Context.Service<WorkflowRevisions, {
  /** Newest first by (created_at, id), the window's part. */
  readonly list: (principal: Principal, workflowId: string, window: ListWindow) => Effect.Effect<ListSlice<RevisionSummary>, NotFound>
  readonly get: (principal: Principal, workflowId: string, revisionId: string) => Effect.Effect<RevisionDetail, NotFound>
  readonly compare: (
    principal: Principal,
    workflowId: string,
    from: string,
    to: string
  ) => Effect.Effect<RevisionComparison, NotFound>
  /** Makes the revision's graph the current definition again (checked as any save; `lock_version` as on update). */
  readonly restore: (
    principal: Principal,
    workflowId: string,
    revisionId: string,
    lockVersion: number | null
  ) => Effect.Effect<WorkflowRecord, NotFound | Unprocessable | Conflict>
  /** Stores a definition as a revision without making it current (to stage it in a rollout). */
  readonly saveDraft: (principal: Principal, workflowId: string, definition: unknown) => Effect.Effect<RevisionDetail, NotFound | Unprocessable>
}>()("@parley/core/executions/WorkflowRevisions") {
  static readonly layer = Layer.effect(
    WorkflowRevisions,
    Effect.gen(function*() {
      const workflows = yield* Workflows
      const repo = yield* StoredRevisions

      const get = Effect.fn("WorkflowRevisions.get")(function*(principal: Principal, workflowId: string, id: string) {
        const workflow = yield* workflows.get(principal, workflowId)
        const currentId = revisionId(workflow.id, workflow.definition)
        const found = yield* repo.get(workflow.project_id, workflow.id, id)
        if (Option.isSome(found)) return { ...toSummary(found.value, currentId), definition: found.value.definition }
        if (id === currentId) return { ...toSummary(unrecorded(workflow), currentId), definition: workflow.definition }
        return yield* notFound("Revision", id)
      })

      return WorkflowRevisions.of({
        list: Effect.fn("WorkflowRevisions.list")(function*(principal: Principal, workflowId: string, window: ListWindow) {
          const workflow = yield* workflows.get(principal, workflowId)
          const currentId = revisionId(workflow.id, workflow.definition)
          const list = (w: ListWindow) => repo.list(workflow.project_id, workflow.id, w)
          const recorded = Option.isSome(yield* repo.get(workflow.project_id, workflow.id, currentId))
          const slice = recorded ? yield* list(window) : yield* withNewest(unrecorded(workflow), window, list)
          return { ...slice, items: slice.items.map((r) => toSummary(r, currentId)) }
        }),
        get,
        compare: Effect.fn("WorkflowRevisions.compare")(function*(principal: Principal, workflowId: string, from: string, to: string) {
          const a = yield* get(principal, workflowId, from)
          const b = yield* get(principal, workflowId, to)
          return compareDefinitions(a.id, a.definition, b.id, b.definition)
        }),
        restore: Effect.fn("WorkflowRevisions.restore")(function*(
          principal: Principal,
          workflowId: string,
          id: string,
          lockVersion: number | null
        ) {
          const revision = yield* get(principal, workflowId, id)
          return yield* workflows.update(
            principal,
            workflowId,
            { definition: revision.definition, lock_version: lockVersion },
            { action: "restore", previous: revision.definition }
          )
        }),
        saveDraft: Effect.fn("WorkflowRevisions.saveDraft")(function*(principal: Principal, workflowId: string, definition: unknown) {
          const id = yield* workflows.saveDraft(principal, workflowId, definition)
          return yield* get(principal, workflowId, id)
        })
      })
    })
  )
}
