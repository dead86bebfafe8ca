/**
 * The behaviour every `RevisionsRepo` and `WorkflowStatsRepo` adapter owes (issue 32 §3, §4), written once and run
 * against each adapter: saves beside their graphs (shared with the revisions runs are pinned to), run counts per
 * revision, the rollout, and the counts of a split node's experiment and of a workflow's drop-off.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import { EventsRepo } from "../../events/EventsRepo.ts"
import type { ExecutionRecord } from "../../executions/Execution.ts"
import { ExecutionsRepo, StepEventsRepo } from "../../executions/ExecutionsRepo.ts"
import { WorkflowStatsRepo } from "../../executions/lifecycle/WorkflowStatsRepo.ts"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import type { RolloutRecord, SaveRecord } from "../../workflows/Revision.ts"
import { RevisionsRepo } from "../../workflows/RevisionsRepo.ts"
import type { Definition } from "../../workflows/Workflow.ts"
import { WorkflowsRepo } from "../../workflows/WorkflowsRepo.ts"
import { makeExecution, makeRevision, makeStepEvent } from "./ExecutionsStorageConformance.ts"
import { at, givenProject, listenTo, makeWorkflow, uniqueId } from "./fixtures.ts"
import type { ListWindow } from "../../shared/Pagination.ts"

export type WorkflowLifecyclePorts =
  | ProjectsRepo
  | WorkflowsRepo
  | ExecutionsRepo
  | StepEventsRepo
  | EventsRepo
  | RevisionsRepo
  | WorkflowStatsRepo

const graph = (label: string): Definition => ({
  nodes: [{ id: "start", type: "custom", position: { x: 0, y: 0 }, data: { node_type: "start", config: { label }, display_name: "Start" } }],
  edges: []
})

const givenWorkflow = Effect.gen(function*() {
  const project = yield* givenProject()
  const workflow = makeWorkflow(project.id)
  yield* (yield* WorkflowsRepo).insert(workflow)
  return workflow
})

/** Every revision at once (the tests below hold fewer than this). */
const all: ListWindow = { mode: "page", page: 1, perPage: 100 }

const save = (workflow: { readonly id: string; readonly project_id: string }, revision_id: string, ms: number, action: SaveRecord["action"] = "update"): SaveRecord => ({
  id: uniqueId("save"),
  project_id: workflow.project_id,
  workflow_id: workflow.id,
  revision_id,
  action,
  saved_by: { id: "key_1", name: "Deploy key" },
  saved_at: at(ms)
})

export const workflowLifecycleConformance = <E>(name: string, storage: Layer.Layer<WorkflowLifecyclePorts, E>): void =>
  layer(storage, { excludeTestServices: true })(name, (it) => {
    it.effect("records saves beside their graph, newest first, and counts the runs on each revision", () =>
      Effect.gen(function*() {
        const repo = yield* RevisionsRepo
        const executions = yield* ExecutionsRepo
        const workflow = yield* givenWorkflow
        const first = save(workflow, `${workflow.id}:one`, 1000, "create")
        yield* repo.recordSave(first, graph("one"))
        // A run pinned a graph nobody saved (as before revisions were recorded).
        const pinned = makeRevision(workflow, { id: `${workflow.id}:pinned`, definition: graph("pinned"), created_at: at(2000) })
        yield* executions.putRevision(pinned)
        const again = save(workflow, `${workflow.id}:one`, 3000, "restore")
        // The graph is stored once: a second save of it keeps the first definition and time.
        yield* repo.recordSave(again, graph("ignored"))
        const runs: Array<ExecutionRecord> = [
          makeExecution(workflow, { revision_id: first.revision_id, status: "waiting" }),
          makeExecution(workflow, { revision_id: first.revision_id, status: "ended" }),
          makeExecution(workflow, { revision_id: pinned.id, status: "waiting" })
        ]
        for (const r of runs) yield* executions.insert(r)

        const listed = (yield* repo.list(workflow.project_id, workflow.id, all)).items
        assert.deepStrictEqual(listed, [
          { id: pinned.id, workflow_id: workflow.id, created_at: at(2000), saves: [], save_count: 0, execution_count: 1, waiting_count: 1 },
          { id: first.revision_id, workflow_id: workflow.id, created_at: at(1000), saves: [again, first], save_count: 2, execution_count: 2, waiting_count: 1 }
        ])
        const fetched = yield* repo.get(workflow.project_id, workflow.id, first.revision_id)
        assert.deepStrictEqual(fetched, Option.some({ ...listed[1]!, definition: graph("one") }))
        assert.isTrue(Option.isNone(yield* repo.get(workflow.project_id, workflow.id, `${workflow.id}:missing`)))
        // Another project's or workflow's view finds nothing.
        const other = yield* givenWorkflow
        assert.isTrue(Option.isNone(yield* repo.get(other.project_id, other.id, first.revision_id)))
        assert.deepStrictEqual((yield* repo.list(other.project_id, other.id, all)).items, [])
      }))

    it.effect("lists a window of the revisions, newest first, in both paging modes", () =>
      Effect.gen(function*() {
        const repo = yield* RevisionsRepo
        const workflow = yield* givenWorkflow
        const ids = Array.from({ length: 5 }, (_, i) => `${workflow.id}:g${i}`)
        for (const [i, id] of ids.entries()) yield* repo.recordSave(save(workflow, id, i * 1000), graph(`g${i}`))
        const newestFirst = [...ids].reverse()
        const idsOf = (slice: { readonly items: ReadonlyArray<{ readonly id: string }> }) => slice.items.map((r) => r.id)
        const list = (window: ListWindow) => repo.list(workflow.project_id, workflow.id, window)

        const page2 = yield* list({ mode: "page", page: 2, perPage: 2 })
        assert.deepStrictEqual([idsOf(page2), page2.total, page2.hasMore], [newestFirst.slice(2, 4), 5, true])
        const page3 = yield* list({ mode: "page", page: 3, perPage: 2 })
        assert.deepStrictEqual([idsOf(page3), page3.hasMore], [newestFirst.slice(4), false])

        const first = yield* list({ mode: "cursor", limit: 2 })
        assert.deepStrictEqual([idsOf(first), first.hasMore], [newestFirst.slice(0, 2), true])
        const key = (i: number) => ({ sortKey: at(i * 1000), id: ids[i]! })
        const older = yield* list({ mode: "cursor", limit: 2, after: key(3) })
        assert.deepStrictEqual([idsOf(older), older.hasMore], [newestFirst.slice(2, 4), true])
        const newer = yield* list({ mode: "cursor", limit: 2, before: key(1) })
        assert.deepStrictEqual([idsOf(newer), newer.hasMore], [newestFirst.slice(1, 3), true])
        const newest = yield* list({ mode: "cursor", limit: 2, before: key(3) })
        assert.deepStrictEqual([idsOf(newest), newest.hasMore], [newestFirst.slice(0, 1), false])
      }))

    it.effect("lists at most 20 saves of a revision, with the count of all", () =>
      Effect.gen(function*() {
        const repo = yield* RevisionsRepo
        const workflow = yield* givenWorkflow
        const revision = `${workflow.id}:busy`
        const saves = Array.from({ length: 23 }, (_, i) => save(workflow, revision, i * 10))
        for (const s of saves) yield* repo.recordSave(s, graph("busy"))
        const [listed] = (yield* repo.list(workflow.project_id, workflow.id, all)).items
        assert.strictEqual(listed!.save_count, 23)
        assert.deepStrictEqual(listed!.saves, saves.slice(3).reverse())
      }))

    it.effect("keeps one rollout per workflow: started, replaced, ended", () =>
      Effect.gen(function*() {
        const repo = yield* RevisionsRepo
        const workflow = yield* givenWorkflow
        assert.isTrue(Option.isNone(yield* repo.getRollout(workflow.project_id, workflow.id)))
        const rollout: RolloutRecord = {
          project_id: workflow.project_id,
          workflow_id: workflow.id,
          revision_id: `${workflow.id}:next`,
          percent: 25,
          started_by: { id: "key_1", name: "Deploy key" },
          started_at: at(5)
        }
        yield* repo.putRollout(rollout)
        yield* repo.putRollout({ ...rollout, percent: 60, started_at: at(6) })
        assert.deepStrictEqual(yield* repo.getRollout(workflow.project_id, workflow.id), Option.some({ ...rollout, percent: 60, started_at: at(6) }))
        const other = yield* givenWorkflow
        assert.isTrue(Option.isNone(yield* repo.getRollout(other.project_id, other.id)))
        assert.isTrue(yield* repo.deleteRollout(workflow.project_id, workflow.id))
        assert.isFalse(yield* repo.deleteRollout(workflow.project_id, workflow.id))
        assert.isTrue(Option.isNone(yield* repo.getRollout(workflow.project_id, workflow.id)))
      }))

    it.effect("signals every rollout change to every listener (caches start over)", () =>
      Effect.gen(function*() {
        const repo = yield* RevisionsRepo
        const workflow = yield* givenWorkflow
        const signals = yield* listenTo(repo.changes)
        const rollout: RolloutRecord = {
          project_id: workflow.project_id,
          workflow_id: workflow.id,
          revision_id: `${workflow.id}:next`,
          percent: 10,
          started_by: { id: "k", name: "k" },
          started_at: at(1)
        }
        yield* repo.putRollout(rollout)
        yield* signals.next
        yield* repo.putRollout({ ...rollout, percent: 20 })
        yield* signals.next
        yield* repo.deleteRollout(workflow.project_id, workflow.id)
        yield* signals.next
        yield* signals.stop
      }))

    it.effect("a deleted workflow takes its saves and its rollout", () =>
      Effect.gen(function*() {
        const repo = yield* RevisionsRepo
        const workflow = yield* givenWorkflow
        yield* repo.recordSave(save(workflow, `${workflow.id}:g`, 1), graph("g"))
        yield* repo.putRollout({
          project_id: workflow.project_id,
          workflow_id: workflow.id,
          revision_id: `${workflow.id}:g`,
          percent: 5,
          started_by: { id: "k", name: "k" },
          started_at: at(1)
        })
        yield* (yield* WorkflowsRepo).delete(workflow.project_id, workflow.id)
        assert.deepStrictEqual((yield* repo.list(workflow.project_id, workflow.id, all)).items, [])
        assert.isTrue(Option.isNone(yield* repo.getRollout(workflow.project_id, workflow.id)))
      }))

    /** A run assigned to `branch` at seq 1000, with `later` events after it. */
    const givenAssigned = Effect.fnUntraced(function*(
      workflow: { readonly id: string; readonly project_id: string; readonly name: string },
      branch: string,
      later: ReadonlyArray<{ readonly event_type: string; readonly node?: string }>,
      overrides: Partial<ExecutionRecord> = {}
    ) {
      const run = makeExecution(workflow, { status: "ended", ...overrides })
      yield* (yield* ExecutionsRepo).insert(run)
      const step = (node: string) => ({ id: uniqueId("step"), identifier: node, node_type: "split", display_name: node })
      yield* (yield* StepEventsRepo).append([
        makeStepEvent(run, { seq: 1000, event_type: "split_assigned", created_at: at(100), payload: { experiment: "x", branch }, step: step("exp") }),
        ...later.map((e, i) =>
          makeStepEvent(run, { seq: 2000 + i, event_type: e.event_type, created_at: at(200), step: e.node === undefined ? null : step(e.node) })
        )
      ])
      return run
    })

    it.effect("counts a split's entries per branch and the runs that reached a node or replied after", () =>
      Effect.gen(function*() {
        const stats = yield* WorkflowStatsRepo
        const workflow = yield* givenWorkflow
        yield* givenAssigned(workflow, "a", [{ event_type: "step_entered", node: "win" }])
        yield* givenAssigned(workflow, "a", [{ event_type: "user_input_received" }])
        yield* givenAssigned(workflow, "b", [{ event_type: "step_entered", node: "lose" }])
        // Reached before the split: not a conversion.
        const early = makeExecution(workflow)
        yield* (yield* ExecutionsRepo).insert(early)
        yield* (yield* StepEventsRepo).append([
          makeStepEvent(early, { seq: 10, event_type: "step_entered", step: { id: "s", identifier: "win", node_type: "x", display_name: "x" } }),
          makeStepEvent(early, { seq: 20, event_type: "split_assigned", payload: { branch: "b" }, step: { id: "s2", identifier: "exp", node_type: "split", display_name: "exp" } })
        ])
        const sorted = (goal: Parameters<typeof stats.splitCounts>[3]) =>
          Effect.map(stats.splitCounts(workflow.project_id, workflow.id, "exp", goal), (rows) => [...rows].sort((x, y) => x.branch.localeCompare(y.branch)))
        assert.deepStrictEqual(yield* sorted({ type: "node", node_id: "win" }), [
          { branch: "a", entries: 2, conversions: 1 },
          { branch: "b", entries: 2, conversions: 0 }
        ])
        assert.deepStrictEqual(yield* sorted({ type: "reply" }), [
          { branch: "a", entries: 2, conversions: 1 },
          { branch: "b", entries: 2, conversions: 0 }
        ])
        assert.deepStrictEqual(yield* sorted(null), [
          { branch: "a", entries: 2, conversions: 0 },
          { branch: "b", entries: 2, conversions: 0 }
        ])
        assert.deepStrictEqual(yield* stats.splitCounts(workflow.project_id, workflow.id, "other", null), [])
      }))

    it.effect("counts a project event in the run's conversation after the assignment as an event goal's conversion", () =>
      Effect.gen(function*() {
        const stats = yield* WorkflowStatsRepo
        const events = yield* EventsRepo
        const workflow = yield* givenWorkflow
        const conversation = (n: number) => `conv_${workflow.id}_${n}`
        yield* givenAssigned(workflow, "a", [], { msg_conversation_id: conversation(1) })
        yield* givenAssigned(workflow, "a", [], { msg_conversation_id: conversation(2) })
        yield* givenAssigned(workflow, "b", [], { msg_conversation_id: conversation(3) })
        const event = (conversation_id: string, name: string, ms: number) => ({
          id: uniqueId("ev"),
          project_id: workflow.project_id,
          name,
          occurred_at: at(ms),
          conversation_id,
          properties: {},
          created_at: at(ms)
        })
        yield* events.insertMany([
          event(conversation(1), "order.paid", 150),
          // Before the assignment, or another event: no conversion.
          event(conversation(2), "order.paid", 50),
          event(conversation(3), "order.viewed", 150)
        ])
        const rows = yield* stats.splitCounts(workflow.project_id, workflow.id, "exp", { type: "event", event_name: "order.paid" })
        assert.deepStrictEqual([...rows].sort((x, y) => x.branch.localeCompare(y.branch)), [
          { branch: "a", entries: 2, conversions: 1 },
          { branch: "b", entries: 1, conversions: 0 }
        ])
      }))

    it.effect("counts per node the runs that entered, left and wait there", () =>
      Effect.gen(function*() {
        const stats = yield* WorkflowStatsRepo
        const executions = yield* ExecutionsRepo
        const steps = yield* StepEventsRepo
        const workflow = yield* givenWorkflow
        const step = (node: string) => ({ id: uniqueId("step"), identifier: node, node_type: "x", display_name: node })
        const through = Effect.fnUntraced(function*(path: ReadonlyArray<string>, status: ExecutionRecord["status"]) {
          const last = path[path.length - 1]!
          const run = makeExecution(workflow, { status, current_node: last })
          yield* executions.insert(run)
          yield* steps.append(path.flatMap((node, i) => [
            makeStepEvent(run, { seq: i * 10, event_type: "step_entered", step: step(node) }),
            ...(i < path.length - 1 ? [makeStepEvent(run, { seq: i * 10 + 1, event_type: "step_completed", step: step(node) })] : [])
          ]))
        })
        yield* through(["start", "ask"], "waiting")
        yield* through(["start", "ask"], "waiting")
        yield* through(["start", "ask", "done"], "ended")
        yield* through(["start"], "failed")
        const flows = [...yield* stats.nodeFlow(workflow.project_id, workflow.id)].sort((x, y) => x.node_id.localeCompare(y.node_id))
        assert.deepStrictEqual(flows, [
          { node_id: "ask", entered: 3, left: 1, waiting: 2 },
          { node_id: "done", entered: 1, left: 0, waiting: 0 },
          { node_id: "start", entered: 4, left: 3, waiting: 0 }
        ])
        const other = yield* givenWorkflow
        assert.deepStrictEqual(yield* stats.nodeFlow(other.project_id, other.id), [])
      }))
  })
