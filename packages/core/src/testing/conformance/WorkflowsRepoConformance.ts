/** The behaviour every `WorkflowsRepo` adapter owes, written once and run against each adapter. */
import { assert, layer } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import { Duplicate } from "../../ports/StorageError.ts"
import { TriggersRepo, WorkflowsRepo } from "../../workflows/WorkflowsRepo.ts"
import type { ListWindow } from "../../shared/Pagination.ts"
import type { Definition, WorkflowRecord, WorkflowStatus } from "../../workflows/Workflow.ts"
import type { WorkflowReference } from "../../workflows/WorkflowReferences.ts"
import { at, dies, givenProject, makeTrigger, makeWorkflow, uniqueId } from "./fixtures.ts"

const cursor = (limit: number, edge: { after?: WorkflowRecord; before?: WorkflowRecord } = {}): ListWindow => ({
  mode: "cursor",
  limit,
  after: edge.after && { sortKey: edge.after.created_at, id: edge.after.id },
  before: edge.before && { sortKey: edge.before.created_at, id: edge.before.id }
})

const ids = (items: ReadonlyArray<WorkflowRecord>) => items.map((w) => w.id)

/** A graph of the given nodes (`[node_type, config]`), unconnected: the repository stores what it is given. */
const graph = (...nodes: ReadonlyArray<readonly [string, Readonly<Record<string, unknown>>]>): Definition => ({
  nodes: nodes.map(([node_type, config], i) => ({
    id: `n${i}`,
    type: node_type,
    position: { x: 0, y: i * 100 },
    data: { node_type, config, display_name: node_type }
  })),
  edges: []
})

const EVERY_STATUS: ReadonlyArray<WorkflowStatus> = ["draft", "active", "archived"]

/** Fails the test unless `effect` fails with exactly `Duplicate({ field })`. */
const duplicateOn = <A, R>(field: string, effect: Effect.Effect<A, Duplicate, R>) =>
  Effect.map(Effect.flip(effect), (error) => assert.deepStrictEqual(error, new Duplicate({ field })))

export const workflowsRepoConformance = <E>(
  name: string,
  storage: Layer.Layer<ProjectsRepo | WorkflowsRepo | TriggersRepo, E>
): void =>
  layer(storage, { excludeTestServices: true })(name, (it) => {
    /**
     * Five workflows of a fresh project, newest first: three share a created_at,
     * where the id (a < b < c) decides.
     */
    const givenTimeline = Effect.gen(function*() {
      const repo = yield* WorkflowsRepo
      const project = yield* givenProject()
      const stem = uniqueId("wf")
      const make = (suffix: string, ms: number) => makeWorkflow(project.id, { id: `${stem}-${suffix}`, created_at: at(ms) })
      const [w1, w2a, w2b, w2c, w3] = [make("1", 1000), make("2a", 2000), make("2b", 2000), make("2c", 2000), make("3", 3000)]
      // Inserted out of order, so the order seen comes from the sort, not from insertion.
      for (const w of [w2b, w3, w1, w2c, w2a]) yield* repo.insert(w)
      return { project, newestFirst: [w3, w2c, w2b, w2a, w1] as const }
    })

    it.effect("stores a workflow exactly as given, definition included", () =>
      Effect.gen(function*() {
        const repo = yield* WorkflowsRepo
        const project = yield* givenProject()
        const workflow = makeWorkflow(project.id, {
          description: "Greets people",
          status: "active",
          lock_version: 3,
          message_debounce_seconds: 5,
          agent_default_tools_version: 2,
          inbound_message_read_mode: "read_with_typing",
          created_at: at(1),
          updated_at: at(2),
          execution_count: 7,
          last_executed_at: at(3),
          definition: {
            nodes: [{
              id: "start",
              type: "start",
              position: { x: 1.5, y: -2 },
              data: { node_type: "start", config: { nested: { list: [1, "two", null, true] } }, display_name: "Start" }
            }],
            edges: [{ id: "e1", source: "start", target: "end", type: "default", label: null, flow_condition_id: null }]
          }
        })
        yield* repo.insert(workflow)
        assert.deepStrictEqual(yield* repo.findById(project.id, workflow.id), Option.some(workflow))
        assert.isTrue(Option.isNone(yield* repo.findById(project.id, "wf_missing")))
        // The summary is the record but its graph, and like it stays in its project.
        const { definition: _, ...summary } = workflow
        assert.deepStrictEqual(yield* repo.findSummary(project.id, workflow.id), Option.some(summary))
        assert.isTrue(Option.isNone(yield* repo.findSummary(project.id, "wf_missing")))
        assert.isTrue(Option.isNone(yield* repo.findSummary((yield* givenProject()).id, workflow.id)))
      }))

    it.effect("keeps each project's workflows to itself", () =>
      Effect.gen(function*() {
        const repo = yield* WorkflowsRepo
        const a = yield* givenProject()
        const b = yield* givenProject()
        const workflow = makeWorkflow(a.id)
        yield* repo.insert(workflow)
        assert.isTrue(Option.isNone(yield* repo.findById(b.id, workflow.id)))
        assert.deepStrictEqual((yield* repo.list(b.id, {}, cursor(10))).items, [])
        assert.strictEqual((yield* repo.list(b.id, {}, { mode: "page", page: 1, perPage: 10 })).total, 0)
        assert.isFalse(yield* repo.slugTaken(b.id, workflow.slug))
        const moved = yield* repo.update({ ...workflow, project_id: b.id, name: "Stolen", lock_version: 1 }, 0)
        assert.isTrue(Option.isNone(moved), "B cannot update A's workflow")
        assert.isFalse(yield* repo.delete(b.id, workflow.id), "B cannot delete A's workflow")
        assert.deepStrictEqual(yield* repo.findById(a.id, workflow.id), Option.some(workflow))
        // The same name and slug are free in another project.
        yield* repo.insert(makeWorkflow(b.id, { name: workflow.name, slug: workflow.slug }))
      }))

    it.effect("refuses a name taken in the project, whatever its case", () =>
      Effect.gen(function*() {
        const repo = yield* WorkflowsRepo
        const project = yield* givenProject()
        yield* repo.insert(makeWorkflow(project.id, { name: "Welcome Flow" }))
        yield* duplicateOn("name", repo.insert(makeWorkflow(project.id, { name: "wELCOME fLOW" })))
        const count = (yield* repo.list(project.id, {}, { mode: "page", page: 1, perPage: 10 })).total
        assert.strictEqual(count, 1, "nothing stored")
      }))

    it.effect("refuses a slug taken in the project", () =>
      Effect.gen(function*() {
        const repo = yield* WorkflowsRepo
        const project = yield* givenProject()
        yield* repo.insert(makeWorkflow(project.id, { slug: "welcome" }))
        assert.isTrue(yield* repo.slugTaken(project.id, "welcome"))
        assert.isFalse(yield* repo.slugTaken(project.id, "other"))
        yield* duplicateOn("slug", repo.insert(makeWorkflow(project.id, { slug: "welcome" })))
      }))

    it.effect("hides archived workflows unless their status is asked for", () =>
      Effect.gen(function*() {
        const repo = yield* WorkflowsRepo
        const project = yield* givenProject()
        const draft = makeWorkflow(project.id, { status: "draft", created_at: at(3) })
        const active = makeWorkflow(project.id, { status: "active", created_at: at(2) })
        const archived = makeWorkflow(project.id, { status: "archived", created_at: at(1) })
        for (const w of [draft, active, archived]) yield* repo.insert(w)
        const list = (filter: Parameters<WorkflowsRepo["Service"]["list"]>[1]) =>
          Effect.map(repo.list(project.id, filter, cursor(10)), (slice) => ids(slice.items))
        assert.deepStrictEqual(yield* list({}), [draft.id, active.id])
        assert.deepStrictEqual(yield* list({ status: "archived" }), [archived.id])
        assert.deepStrictEqual(yield* list({ status: "active" }), [active.id])
      }))

    it.effect("filters by a case-insensitive part of the name", () =>
      Effect.gen(function*() {
        const repo = yield* WorkflowsRepo
        const project = yield* givenProject()
        const welcome = makeWorkflow(project.id, { name: "Welcome New Users", created_at: at(2) })
        const goodbye = makeWorkflow(project.id, { name: "Goodbye", created_at: at(1) })
        const percent = makeWorkflow(project.id, { name: "100% off_sale", created_at: at(0) })
        for (const w of [welcome, goodbye, percent]) yield* repo.insert(w)
        const named = (name_contains: string) =>
          Effect.map(repo.list(project.id, { name_contains }, cursor(10)), (slice) => ids(slice.items))
        assert.deepStrictEqual(yield* named("new us"), [welcome.id])
        assert.deepStrictEqual(yield* named("O"), [welcome.id, goodbye.id, percent.id])
        // Taken literally, not as a pattern.
        assert.deepStrictEqual(yield* named("0% off_"), [percent.id])
        assert.deepStrictEqual(yield* named("%"), [percent.id])
        assert.deepStrictEqual(yield* named("_"), [percent.id])
      }))

    it.effect("filters by creation time, both bounds inclusive", () =>
      Effect.gen(function*() {
        const repo = yield* WorkflowsRepo
        const { newestFirst, project } = yield* givenTimeline
        const [w3, w2c, w2b, w2a, w1] = newestFirst
        const between = (filter: { created_after?: string; created_before?: string }) =>
          Effect.map(repo.list(project.id, filter, cursor(10)), (slice) => ids(slice.items))
        assert.deepStrictEqual(yield* between({ created_after: at(2000) }), ids([w3, w2c, w2b, w2a]))
        assert.deepStrictEqual(yield* between({ created_before: at(2000) }), ids([w2c, w2b, w2a, w1]))
        assert.deepStrictEqual(yield* between({ created_after: at(2000), created_before: at(2000) }), ids([w2c, w2b, w2a]))
        assert.deepStrictEqual(yield* between({ created_after: at(2001) }), ids([w3]))
        assert.deepStrictEqual(yield* between({ created_before: at(999) }), [])
      }))

    it.effect("pages towards older items with `after`, newest first, ties broken by id", () =>
      Effect.gen(function*() {
        const repo = yield* WorkflowsRepo
        const { newestFirst, project } = yield* givenTimeline
        const [w3, w2c, w2b, w2a, w1] = newestFirst
        const first = yield* repo.list(project.id, {}, cursor(2))
        assert.deepStrictEqual([ids(first.items), first.hasMore], [ids([w3, w2c]), true])
        const second = yield* repo.list(project.id, {}, cursor(2, { after: w2c }))
        assert.deepStrictEqual([ids(second.items), second.hasMore], [ids([w2b, w2a]), true])
        const last = yield* repo.list(project.id, {}, cursor(2, { after: w2a }))
        assert.deepStrictEqual([ids(last.items), last.hasMore], [ids([w1]), false])
        const exact = yield* repo.list(project.id, {}, cursor(3, { after: w2c }))
        assert.deepStrictEqual([ids(exact.items), exact.hasMore], [ids([w2b, w2a, w1]), false])
        const all = yield* repo.list(project.id, {}, cursor(5))
        assert.deepStrictEqual([ids(all.items), all.hasMore], [ids(newestFirst), false])
        const beyond = yield* repo.list(project.id, {}, cursor(2, { after: w1 }))
        assert.deepStrictEqual([ids(beyond.items), beyond.hasMore], [[], false])
      }))

    it.effect("pages towards newer items with `before`, still newest first", () =>
      Effect.gen(function*() {
        const repo = yield* WorkflowsRepo
        const { newestFirst, project } = yield* givenTimeline
        const [w3, w2c, w2b, w2a, w1] = newestFirst
        const back = yield* repo.list(project.id, {}, cursor(2, { before: w1 }))
        assert.deepStrictEqual([ids(back.items), back.hasMore], [ids([w2b, w2a]), true])
        const further = yield* repo.list(project.id, {}, cursor(2, { before: w2b }))
        assert.deepStrictEqual([ids(further.items), further.hasMore], [ids([w3, w2c]), false])
        const one = yield* repo.list(project.id, {}, cursor(1, { before: w2a }))
        assert.deepStrictEqual([ids(one.items), one.hasMore], [ids([w2b]), true])
        const top = yield* repo.list(project.id, {}, cursor(2, { before: w3 }))
        assert.deepStrictEqual([ids(top.items), top.hasMore], [[], false])
        const both = yield* repo.list(project.id, {}, cursor(5, { after: w3, before: w1 }))
        assert.deepStrictEqual(ids(both.items), ids([w2c, w2b, w2a]))
      }))

    it.effect("pages by number with an exact total of the matching workflows", () =>
      Effect.gen(function*() {
        const repo = yield* WorkflowsRepo
        const { newestFirst, project } = yield* givenTimeline
        const [w3, w2c, w2b, w2a, w1] = newestFirst
        yield* repo.insert(makeWorkflow(project.id, { status: "archived", created_at: at(5000) }))
        const page = (n: number) => repo.list(project.id, {}, { mode: "page", page: n, perPage: 2 })
        const one = yield* page(1)
        assert.deepStrictEqual([ids(one.items), one.total], [ids([w3, w2c]), 5])
        assert.deepStrictEqual(ids((yield* page(2)).items), ids([w2b, w2a]))
        assert.deepStrictEqual(ids((yield* page(3)).items), ids([w1]))
        const past = yield* page(4)
        assert.deepStrictEqual([ids(past.items), past.total], [[], 5])
        const filtered = yield* repo.list(project.id, { created_after: at(2000) }, { mode: "page", page: 2, perPage: 3 })
        assert.deepStrictEqual([ids(filtered.items), filtered.total], [ids([w2a]), 4])
      }))

    it.effect("lists summaries: the same windows and filters as `list`, each workflow without its graph", () =>
      Effect.gen(function*() {
        const repo = yield* WorkflowsRepo
        const { newestFirst, project } = yield* givenTimeline
        const [w3, w2c, w2b, w2a] = newestFirst
        const graph = { nodes: [], edges: [{ id: "e", source: "a", target: "b", type: "t", label: null, flow_condition_id: null }] }
        const archived = makeWorkflow(project.id, { status: "archived", created_at: at(5000), definition: graph })
        yield* repo.insert(archived)
        const summaryOf = ({ definition: _, ...summary }: WorkflowRecord) => summary
        const page = yield* repo.listSummaries(project.id, {}, { mode: "page", page: 1, perPage: 2 })
        assert.deepStrictEqual([page.items, page.total, page.hasMore], [[w3, w2c].map(summaryOf), 5, true])
        const after = yield* repo.listSummaries(project.id, {}, cursor(2, { after: w2c }))
        assert.deepStrictEqual([after.items, after.hasMore], [[w2b, w2a].map(summaryOf), true])
        const before = yield* repo.listSummaries(project.id, {}, cursor(2, { before: w2a }))
        assert.deepStrictEqual([before.items, before.hasMore], [[w2c, w2b].map(summaryOf), true])
        const filtered = yield* repo.listSummaries(project.id, { status: "archived" }, cursor(10))
        assert.deepStrictEqual(filtered.items, [summaryOf(archived)])
        assert.notProperty(filtered.items[0], "definition")
        assert.deepStrictEqual((yield* repo.listSummaries((yield* givenProject()).id, {}, cursor(10))).items, [])
      }))

    it.effect("updates only from the expected lock version", () =>
      Effect.gen(function*() {
        const repo = yield* WorkflowsRepo
        const project = yield* givenProject()
        const workflow = makeWorkflow(project.id, { lock_version: 1, created_at: at(1) })
        yield* repo.insert(workflow)
        const next: WorkflowRecord = {
          ...workflow,
          name: "Renamed",
          status: "active",
          lock_version: 2,
          updated_at: at(9),
          definition: { nodes: [], edges: [{ id: "e", source: "a", target: "b", type: "t", label: "x", flow_condition_id: null }] }
        }
        const updated = yield* repo.update(next, 1)
        assert.deepStrictEqual(updated, Option.some(next))
        assert.deepStrictEqual(yield* repo.findById(project.id, workflow.id), Option.some(next))

        const stale = yield* repo.update({ ...next, name: "Lost update", lock_version: 2 }, 1)
        assert.isTrue(Option.isNone(stale))
        assert.deepStrictEqual(yield* repo.findById(project.id, workflow.id), Option.some(next), "unchanged")

        yield* repo.delete(project.id, workflow.id)
        assert.isTrue(Option.isNone(yield* repo.update({ ...next, lock_version: 3 }, 2)), "gone")
      }))

    it.effect("keeps the creation time on update, and refuses a rename onto a taken name", () =>
      Effect.gen(function*() {
        const repo = yield* WorkflowsRepo
        const project = yield* givenProject()
        const taken = makeWorkflow(project.id, { name: "Taken", slug: "taken" })
        const workflow = makeWorkflow(project.id, { name: "Mine", created_at: at(1) })
        yield* repo.insert(taken)
        yield* repo.insert(workflow)
        const same = yield* repo.update({ ...workflow, name: "MINE", created_at: at(50), lock_version: 1 }, 0)
        assert.deepStrictEqual(same, Option.some({ ...workflow, name: "MINE", lock_version: 1 }), "own name is no collision")
        yield* duplicateOn("name", repo.update({ ...workflow, name: "taken", lock_version: 2 }, 1))
        yield* duplicateOn("slug", repo.update({ ...workflow, slug: "taken", lock_version: 2 }, 1))
        assert.deepStrictEqual(
          Option.map(yield* repo.findById(project.id, workflow.id), (w) => [w.name, w.lock_version]),
          Option.some(["MINE", 1])
        )
      }))

    it.effect("deletes a workflow with its triggers", () =>
      Effect.gen(function*() {
        const repo = yield* WorkflowsRepo
        const triggers = yield* TriggersRepo
        const project = yield* givenProject()
        const workflow = makeWorkflow(project.id)
        const other = makeWorkflow(project.id)
        yield* repo.insert(workflow)
        yield* repo.insert(other)
        const trigger = makeTrigger(project.id, workflow.id)
        const kept = makeTrigger(project.id, other.id)
        yield* triggers.insert(trigger)
        yield* triggers.insert(makeTrigger(project.id, workflow.id, { trigger_type: "inbound_message" }))
        yield* triggers.insert(kept)
        assert.isTrue(yield* repo.delete(project.id, workflow.id))
        assert.isTrue(Option.isNone(yield* repo.findById(project.id, workflow.id)))
        assert.isTrue(Option.isNone(yield* triggers.findById(project.id, trigger.id)))
        assert.deepStrictEqual(yield* triggers.listByWorkflow(project.id, workflow.id), [])
        assert.deepStrictEqual(yield* triggers.listByWorkflow(project.id, other.id), [kept])
        assert.isFalse(yield* repo.delete(project.id, workflow.id), "already gone")
        assert.isFalse(yield* repo.slugTaken(project.id, workflow.slug), "its slug is free again")
      }))

    it.effect("answers which workflows reference a function or a workflow, by status, in their project only", () =>
      Effect.gen(function*() {
        const repo = yield* WorkflowsRepo
        const project = yield* givenProject()
        const other = yield* givenProject()
        const [fn, otherFn, callee] = [uniqueId("fn"), uniqueId("fn"), uniqueId("wf")]
        const uses = (target: string): WorkflowReference => ({ kind: "function", target })
        const calls = (target: string): WorkflowReference => ({ kind: "workflow", target })
        const referrers = (ref: WorkflowReference, statuses = EVERY_STATUS, limit = 10, projectId = project.id) =>
          Effect.map(repo.referrers(projectId, ref, statuses, limit), (found) => found.map((w) => w.id))
        // Each way a graph calls: a function node, a decide, an agent's function tool, a call node.
        const draft = makeWorkflow(project.id, {
          status: "draft",
          created_at: at(1),
          definition: graph(["function", { function_id: fn }], ["call", { workflow_id: callee }])
        })
        const activeOld = makeWorkflow(project.id, {
          status: "active",
          created_at: at(2),
          definition: graph(["agent", { flow_agent_function_tools: [{ function_id: otherFn }, "junk", { function_id: fn }] }])
        })
        const activeNew = makeWorkflow(project.id, {
          status: "active",
          created_at: at(3),
          definition: graph(["decide", { function_id: fn }], ["call", { workflow_id: callee }], ["call", { workflow_id: callee }])
        })
        const archived = makeWorkflow(project.id, { status: "archived", created_at: at(4), definition: graph(["function", { function_id: fn }]) })
        // Ids named by nodes that run nothing, or not as strings, are no references.
        const unrelated = makeWorkflow(project.id, {
          status: "active",
          created_at: at(5),
          definition: graph(["send_text", { function_id: fn, workflow_id: callee }], ["function", { function_id: 7 }])
        })
        // The same targets' ids in another project.
        const elsewhere = makeWorkflow(other.id, {
          status: "active",
          definition: graph(["function", { function_id: fn }], ["call", { workflow_id: callee }])
        })
        for (const w of [archived, activeOld, unrelated, draft, elsewhere, activeNew]) yield* repo.insert(w)

        // Drafts, then active, then archived workflows as the statuses are given, newest first within one.
        assert.deepStrictEqual(yield* referrers(uses(fn)), [draft.id, activeNew.id, activeOld.id, archived.id])
        assert.deepStrictEqual(yield* referrers(uses(fn), ["archived", "active"]), [archived.id, activeNew.id, activeOld.id])
        assert.deepStrictEqual(yield* referrers(uses(fn), ["active"], 1), [activeNew.id])
        assert.deepStrictEqual(yield* referrers(uses(otherFn)), [activeOld.id])
        assert.deepStrictEqual(yield* referrers(calls(callee), ["active"]), [activeNew.id])
        assert.deepStrictEqual(yield* referrers(calls(callee)), [draft.id, activeNew.id])
        // The kind is part of the reference, and the answer carries what a refusal names.
        assert.deepStrictEqual(yield* referrers(calls(fn)), [])
        assert.deepStrictEqual(yield* repo.referrers(project.id, uses(fn), ["archived"], 10), [
          { id: archived.id, name: archived.name, status: "archived" }
        ])
        // Other projects never leak either way.
        assert.deepStrictEqual(yield* referrers(uses(fn), EVERY_STATUS, 10, other.id), [elsewhere.id])
        assert.deepStrictEqual(yield* referrers(calls(callee), EVERY_STATUS, 10, other.id), [elsewhere.id])
        assert.deepStrictEqual(yield* referrers(uses(otherFn), EVERY_STATUS, 10, other.id), [])
      }))

    it.effect("keeps the references with the current definition: updates, failed updates, deletes", () =>
      Effect.gen(function*() {
        const repo = yield* WorkflowsRepo
        const project = yield* givenProject()
        const [fn, next, callee] = [uniqueId("fn"), uniqueId("fn"), uniqueId("wf")]
        const referrers = (ref: WorkflowReference, statuses = EVERY_STATUS) =>
          Effect.map(repo.referrers(project.id, ref, statuses, 10), (found) => found.map((w) => w.id))
        const workflow = makeWorkflow(project.id, {
          definition: graph(["function", { function_id: fn }], ["call", { workflow_id: callee }])
        })
        const sibling = makeWorkflow(project.id, { created_at: at(1), definition: graph(["function", { function_id: fn }]) })
        yield* repo.insert(workflow)
        yield* repo.insert(sibling)

        // The graph changes: the function it no longer runs lets go of it, the new one is found, the kept call stays.
        const changed = { ...workflow, lock_version: 1, definition: graph(["decide", { function_id: next }], ["call", { workflow_id: callee }]) }
        assert.isTrue(Option.isSome(yield* repo.update(changed, 0)))
        assert.deepStrictEqual(yield* referrers({ kind: "function", target: fn }), [sibling.id])
        assert.deepStrictEqual(yield* referrers({ kind: "function", target: next }), [workflow.id])
        assert.deepStrictEqual(yield* referrers({ kind: "workflow", target: callee }), [workflow.id])

        // A compare-and-set that missed writes no references.
        const stale = { ...changed, lock_version: 2, definition: graph(["function", { function_id: fn }]) }
        assert.isTrue(Option.isNone(yield* repo.update(stale, 0)))
        assert.deepStrictEqual(yield* referrers({ kind: "function", target: next }), [workflow.id])
        assert.deepStrictEqual(yield* referrers({ kind: "function", target: fn }), [sibling.id])

        // A status move is seen by the status filter; a graph without references has none.
        assert.isTrue(Option.isSome(yield* repo.update({ ...changed, status: "active", lock_version: 2 }, 1)))
        assert.deepStrictEqual(yield* referrers({ kind: "workflow", target: callee }, ["active"]), [workflow.id])
        assert.deepStrictEqual(yield* referrers({ kind: "workflow", target: callee }, ["draft"]), [])
        assert.isTrue(Option.isSome(yield* repo.update({ ...changed, lock_version: 3, definition: graph() }, 2)))
        assert.deepStrictEqual(yield* referrers({ kind: "workflow", target: callee }), [])
        assert.deepStrictEqual(yield* referrers({ kind: "function", target: next }), [])

        // A deleted workflow references nothing.
        assert.isTrue(yield* repo.delete(project.id, sibling.id))
        assert.deepStrictEqual(yield* referrers({ kind: "function", target: fn }), [])
      }))

    it.effect("refuses a workflow of a missing project", () =>
      Effect.gen(function*() {
        const repo = yield* WorkflowsRepo
        yield* dies(repo.insert(makeWorkflow("prj_missing")))
      }))
  })
