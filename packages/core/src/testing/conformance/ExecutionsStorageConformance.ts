/**
 * The behaviour every adapter of the execution storage ports
 * (`ExecutionsRepo`, `StepEventsRepo`, `ExecutionInputsRepo`) owes, written
 * once and run against each adapter.
 *
 * Tests share one store: the lookups that are not scoped by project (routing
 * pairs, recovery, stale inputs, pruning) use pairs of their own, or times
 * in an era of their own (long before `at(0)`), so other tests' rows never
 * answer them.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Data, Effect, type Layer, Option } from "effect"
import type { ExecutionRecord, StepEventRecord, WorkflowRevision } from "../../executions/Execution.ts"
import {
  type ExecutionInputRecord,
  ExecutionInputsRepo,
  ExecutionsRepo,
  STEP_EVENT_SKEW_MS,
  StepEventsRepo,
  stepEventSpan,
  stepEventsSince,
  stepEventsUntil
} from "../../executions/ExecutionsRepo.ts"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import { Transactor } from "../../ports/Transactor.ts"
import { WorkflowsRepo } from "../../workflows/WorkflowsRepo.ts"
import type { ListWindow } from "../../shared/Pagination.ts"
import type { WorkflowRecord } from "../../workflows/Workflow.ts"

const HOUR = 60 * 60 * 1000
import { at, dies, givenProject, makeWorkflow, uniqueId } from "./fixtures.ts"

export type ExecutionsStoragePorts =
  | Transactor
  | ProjectsRepo
  | WorkflowsRepo
  | ExecutionsRepo
  | StepEventsRepo
  | ExecutionInputsRepo

/** An instant `ms` after the start of `year`: eras of their own for the unscoped lookups. */
const inEra = (year: number) => (ms: number) => new Date(Date.UTC(year, 0, 1) + ms).toISOString()

export const makeExecution = (
  workflow: Pick<WorkflowRecord, "id" | "project_id" | "name">,
  overrides: Partial<ExecutionRecord> = {}
): ExecutionRecord => ({
  id: uniqueId("exe"),
  project_id: workflow.project_id,
  workflow_id: workflow.id,
  workflow_name: workflow.name,
  revision_id: uniqueId("rev"),
  tracking_id: uniqueId("trk"),
  status: "running",
  waiting_reason: null,
  trigger_type: "api_call",
  observer: false,
  parent_execution_id: null,
  call_depth: 0,
  msg_conversation_id: null,
  msg_config_id: null,
  contact_id: null,
  started_at: at(0),
  last_event_at: at(0),
  ended_at: null,
  current_node: "start",
  execution_context: { vars: {}, system: {}, context: {}, metadata: {} },
  error_details: null,
  resumable_execution_id: null,
  wait: null,
  pending: null,
  agent: null,
  handoff: null,
  requested_status: null,
  step_seq: 0,
  state_version: 0,
  lease_owner: null,
  lease_until: null,
  dedupe_key: null,
  ...overrides
})

/** A UUIDv7 of the instant `ms` (Unix milliseconds), as `Ids.layer` mints them. */
export const uuidV7At = (ms: number) => {
  const time = ms.toString(16).padStart(12, "0")
  const random = crypto.randomUUID().replaceAll("-", "")
  return `${time.slice(0, 8)}-${time.slice(8)}-7${random.slice(0, 3)}-8${random.slice(3, 6)}-${random.slice(6, 18)}`
}

export const makeStepEvent = (
  execution: Pick<ExecutionRecord, "id" | "project_id">,
  overrides: Partial<StepEventRecord> = {}
): StepEventRecord => ({
  id: uniqueId("evt"),
  project_id: execution.project_id,
  execution_id: execution.id,
  seq: 0,
  event_type: "step_entered",
  direction: null,
  edge_label: null,
  created_at: at(0),
  payload: { node_type: "send_text" },
  step: null,
  ...overrides
})

export const makeRevision = (
  workflow: Pick<WorkflowRecord, "id" | "project_id">,
  overrides: Partial<WorkflowRevision> = {}
): WorkflowRevision => ({
  id: uniqueId("rev"),
  workflow_id: workflow.id,
  project_id: workflow.project_id,
  definition: {
    nodes: [{
      id: "start",
      type: "start",
      position: { x: 1.5, y: -2 },
      data: { node_type: "start", config: { nested: { list: [1, "two", null, true] } }, display_name: "Start" }
    }],
    edges: [{ id: "e1", source: "start", target: "end", type: "default", label: null, flow_condition_id: null }]
  },
  created_at: at(0),
  ...overrides
})

export const makeInput = (projectId: string, overrides: Partial<ExecutionInputRecord> = {}): ExecutionInputRecord => ({
  id: uniqueId("msg"),
  project_id: projectId,
  msg_config_id: "cfg_1",
  contact_id: "contact_1",
  conversation_id: uniqueId("conv"),
  network_id: null,
  value: "hello",
  received_at: at(0),
  state: "buffered",
  ...overrides
})

const ids = (items: ReadonlyArray<{ readonly id: string }>) => items.map((i) => i.id)
const sortedIds = (items: ReadonlyArray<{ readonly id: string }>) => ids(items).sort()
const cursor = (limit: number): ListWindow => ({ mode: "cursor", limit })
const page = (n: number, perPage: number): ListWindow => ({ mode: "page", page: n, perPage })
const keyOf = (e: ExecutionRecord) => ({ sortKey: e.started_at, id: e.id })
const eventKeyOf = (e: StepEventRecord) => ({ sortKey: e.created_at, id: e.id })

class Boom extends Data.TaggedError("Boom") {}

/** A fresh project with one workflow in it. */
const givenWorkflow = (overrides: Partial<WorkflowRecord> = {}) =>
  Effect.gen(function*() {
    const project = yield* givenProject()
    const workflow = makeWorkflow(project.id, overrides)
    yield* (yield* WorkflowsRepo).insert(workflow)
    return workflow
  })

/** Another workflow in the project of `workflow`. */
const givenSibling = (workflow: WorkflowRecord) =>
  Effect.gen(function*() {
    const sibling = makeWorkflow(workflow.project_id)
    yield* (yield* WorkflowsRepo).insert(sibling)
    return sibling
  })

/** Inserts the executions, each required to be new. */
const given = (...executions: ReadonlyArray<ExecutionRecord>) =>
  Effect.gen(function*() {
    const repo = yield* ExecutionsRepo
    for (const e of executions) assert.isTrue(yield* repo.insert(e), `inserted ${e.id}`)
  })

export const executionsStorageConformance = <E>(name: string, storage: Layer.Layer<ExecutionsStoragePorts, E>): void => {
  describe(name, () => {
    layer(storage, { excludeTestServices: true })("ExecutionsRepo", (it) => {
      it.effect("stores an execution exactly as given; finds it by id or tracking id, in its project only", () =>
        Effect.gen(function*() {
          const repo = yield* ExecutionsRepo
          const workflow = yield* givenWorkflow()
          const execution = makeExecution(workflow, {
            status: "waiting",
            waiting_reason: "call",
            trigger_type: "inbound_message",
            parent_execution_id: uniqueId("exe"),
            call_depth: 2,
            msg_conversation_id: uniqueId("conv"),
            msg_config_id: uniqueId("cfg"),
            contact_id: uniqueId("contact"),
            started_at: at(1),
            last_event_at: at(2),
            current_node: "ask",
            execution_context: {
              vars: { name: "Ada", nested: { list: [1, "two", null, true], empty: {} } },
              system: { trigger_type: "inbound_message", "ключ": "значение ✓" },
              context: { initial_data: { order: 42 } },
              metadata: { source: "api" }
            },
            error_details: { message: "earlier failure", step_identifier: "ask", node_type: "send_text", code: "E1", occurred_at: at(2) },
            resumable_execution_id: uniqueId("exe"),
            wait: { kind: "call", seq: 3, node_id: "ask", due_at: at(9_000), timeout_seconds: 9, child_id: uniqueId("exe") },
            pending: {
              kind: "send",
              key: "exe:4",
              node_id: "ask",
              message_id: uniqueId("msg"),
              msg_config_id: "cfg_1",
              to: "15550001111",
              envelope: { type: "text", text: { body: "hi" } },
              started_at: at(3)
            },
            handoff: { node_id: null, reason: "asked for a human", source: "api" },
            requested_status: "waiting",
            step_seq: 4,
            state_version: 7,
            lease_owner: "host-1",
            lease_until: at(5_000),
            dedupe_key: uniqueId("dedupe")
          })
          assert.isTrue(yield* repo.insert(execution))
          assert.deepStrictEqual(yield* repo.get(execution.id), Option.some(execution))
          assert.deepStrictEqual(yield* repo.find(workflow.project_id, execution.id), Option.some(execution))
          assert.deepStrictEqual(yield* repo.find(workflow.project_id, execution.tracking_id), Option.some(execution))
          const other = yield* givenProject()
          assert.deepStrictEqual(yield* repo.find(other.id, execution.id), Option.none())
          assert.deepStrictEqual(yield* repo.find(other.id, execution.tracking_id), Option.none())
          assert.deepStrictEqual(yield* repo.find(workflow.project_id, uniqueId("exe")), Option.none())
          assert.deepStrictEqual(yield* repo.get(uniqueId("exe")), Option.none())
        }))

      it.effect("gives times back normalised and JSON without undefined members", () =>
        Effect.gen(function*() {
          const repo = yield* ExecutionsRepo
          const workflow = yield* givenWorkflow()
          const execution = makeExecution(workflow, {
            started_at: "2026-03-04T07:06:07.089+02:00",
            last_event_at: "2026-03-04T05:06:07.5Z",
            wait: { kind: "delay", seq: 1, node_id: "n", due_at: null, timeout_seconds: null, child_id: undefined }
          })
          yield* repo.insert(execution)
          const stored = Option.getOrThrow(yield* repo.get(execution.id))
          assert.strictEqual(stored.started_at, "2026-03-04T05:06:07.089Z")
          assert.strictEqual(stored.last_event_at, "2026-03-04T05:06:07.500Z")
          assert.deepStrictEqual(stored.wait, { kind: "delay", seq: 1, node_id: "n", due_at: null, timeout_seconds: null })
        }))

      it.effect("prefers the id to a tracking id, and the newest of executions sharing a tracking id", () =>
        Effect.gen(function*() {
          const repo = yield* ExecutionsRepo
          const workflow = yield* givenWorkflow()
          const tracking = uniqueId("trk")
          const older = makeExecution(workflow, { tracking_id: tracking, started_at: at(1) })
          const newer = makeExecution(workflow, { tracking_id: tracking, started_at: at(2) })
          // Its tracking id is another execution's id.
          const confusing = makeExecution(workflow, { tracking_id: older.id, started_at: at(3) })
          yield* given(newer, older, confusing)
          assert.deepStrictEqual(Option.map(yield* repo.find(workflow.project_id, tracking), (e) => e.id), Option.some(newer.id))
          assert.deepStrictEqual(Option.map(yield* repo.find(workflow.project_id, older.id), (e) => e.id), Option.some(older.id))
        }))

      it.effect("refuses executions outside an existing workflow of their project, and repeated ids", () =>
        Effect.gen(function*() {
          const repo = yield* ExecutionsRepo
          const workflow = yield* givenWorkflow()
          const elsewhere = yield* givenWorkflow()
          yield* dies(repo.insert(makeExecution({ ...workflow, id: uniqueId("wf") })))
          yield* dies(repo.insert(makeExecution({ ...elsewhere, project_id: workflow.project_id })))
          const execution = makeExecution(workflow)
          yield* given(execution)
          yield* dies(repo.insert({ ...execution, tracking_id: uniqueId("trk") }))
        }))

      it.effect("inserts nothing when another execution has the dedupe key; null keys never collide", () =>
        Effect.gen(function*() {
          const repo = yield* ExecutionsRepo
          const workflow = yield* givenWorkflow()
          const key = uniqueId("dedupe")
          const first = makeExecution(workflow, { dedupe_key: key })
          const repeat = makeExecution(workflow, { dedupe_key: key })
          assert.isTrue(yield* repo.insert(first))
          assert.isFalse(yield* repo.insert(repeat))
          assert.deepStrictEqual(yield* repo.get(repeat.id), Option.none())
          // The key is unique across projects and workflows: it names what started the run.
          const other = yield* givenWorkflow()
          assert.isFalse(yield* repo.insert(makeExecution(other, { dedupe_key: key })))
          assert.isTrue(yield* repo.insert(makeExecution(workflow)))
          assert.isTrue(yield* repo.insert(makeExecution(workflow)))
          assert.deepStrictEqual(Option.map(yield* repo.get(first.id), (e) => e.dedupe_key), Option.some(key))
        }))

      it.effect("updates by compare-and-set on state_version; a stale writer writes nothing", () =>
        Effect.gen(function*() {
          const repo = yield* ExecutionsRepo
          const workflow = yield* givenWorkflow()
          const execution = makeExecution(workflow, { dedupe_key: uniqueId("dedupe") })
          yield* given(execution)
          const next: ExecutionRecord = {
            ...execution,
            status: "waiting",
            waiting_reason: "wait_for_response",
            last_event_at: at(10),
            current_node: "ask",
            execution_context: { ...execution.execution_context, vars: { answer: 42 } },
            wait: { kind: "wait_for_response", seq: 1, node_id: "ask", due_at: at(60_000), timeout_seconds: 60 },
            step_seq: 3,
            state_version: 1,
            lease_owner: "host-1",
            lease_until: at(30_000)
          }
          assert.isTrue(yield* repo.update(next, 0))
          assert.deepStrictEqual(yield* repo.get(execution.id), Option.some(next))
          const stale: ExecutionRecord = { ...execution, status: "ended", ended_at: at(20), state_version: 1 }
          assert.isFalse(yield* repo.update(stale, 0))
          assert.deepStrictEqual(yield* repo.get(execution.id), Option.some(next))
          const later: ExecutionRecord = { ...next, status: "ended", ended_at: at(20), wait: null, state_version: 2 }
          assert.isTrue(yield* repo.update(later, 1))
          assert.deepStrictEqual(yield* repo.get(execution.id), Option.some(later))
          assert.isFalse(yield* repo.update({ ...later, id: uniqueId("exe") }, 2))
        }))

      it.effect("keeps the project, workflow, start and dedupe key of an execution through updates", () =>
        Effect.gen(function*() {
          const repo = yield* ExecutionsRepo
          const workflow = yield* givenWorkflow()
          const other = yield* givenWorkflow()
          const execution = makeExecution(workflow, { dedupe_key: uniqueId("dedupe"), started_at: at(5) })
          yield* given(execution)
          const moved: ExecutionRecord = {
            ...execution,
            project_id: other.project_id,
            workflow_id: other.id,
            started_at: at(6),
            dedupe_key: uniqueId("dedupe"),
            current_node: "next",
            state_version: 1
          }
          assert.isTrue(yield* repo.update(moved, 0))
          assert.deepStrictEqual(
            yield* repo.get(execution.id),
            Option.some({ ...execution, current_node: "next", state_version: 1 })
          )
        }))

      it.effect("checkpoints the record and its step events together, or neither when fenced or refused", () =>
        Effect.gen(function*() {
          const repo = yield* ExecutionsRepo
          const events = yield* StepEventsRepo
          const workflow = yield* givenWorkflow()
          const execution = makeExecution(workflow)
          yield* given(execution)
          const first = makeStepEvent(execution, { seq: 1000, created_at: at(10) })
          const second = makeStepEvent(execution, { seq: 1001, created_at: at(10), event_type: "step_completed" })
          const next: ExecutionRecord = { ...execution, current_node: "next", last_event_at: at(10), step_seq: 1, state_version: 1 }
          assert.isTrue(yield* repo.checkpoint(next, 0, [first, second]))
          assert.deepStrictEqual(yield* repo.get(execution.id), Option.some(next))
          assert.deepStrictEqual(yield* events.latest(execution, 10), [second, first])
          // A stale writer: neither its record nor its events.
          const stale = makeStepEvent(execution, { seq: 1000, created_at: at(20) })
          assert.isFalse(yield* repo.checkpoint({ ...execution, status: "failed", state_version: 1 }, 0, [stale]))
          assert.deepStrictEqual(yield* repo.get(execution.id), Option.some(next))
          assert.deepStrictEqual(yield* events.find(execution.project_id, stale.id), Option.none())
          // An event the store refuses (a repeated id) leaves the record as it was.
          yield* dies(repo.checkpoint({ ...next, current_node: "later", state_version: 2 }, 1, [first]))
          assert.deepStrictEqual(yield* repo.get(execution.id), Option.some(next))
          // No events: the compare-and-set alone.
          const later: ExecutionRecord = { ...next, current_node: "later", state_version: 2 }
          assert.isTrue(yield* repo.checkpoint(later, 1, []))
          assert.deepStrictEqual(yield* repo.get(execution.id), Option.some(later))
          assert.isFalse(yield* repo.checkpoint({ ...later, id: uniqueId("exe") }, 2, []))
        }))

      it.effect("lists newest first by start with every filter", () =>
        Effect.gen(function*() {
          const repo = yield* ExecutionsRepo
          const workflow = yield* givenWorkflow()
          const sibling = yield* givenSibling(workflow)
          const conversation = uniqueId("conv")
          const stem = uniqueId("exe")
          const make = (n: number, on: WorkflowRecord, overrides: Partial<ExecutionRecord>) =>
            makeExecution(on, { id: `${stem}-${n}`, started_at: at(n * 1000), ...overrides })
          const running = make(1, workflow, { msg_conversation_id: conversation })
          const waitingTimer = make(2, workflow, {
            status: "waiting",
            waiting_reason: "wait_for_response",
            trigger_type: "inbound_message",
            msg_conversation_id: conversation,
            wait: { kind: "wait_for_response", seq: 1, node_id: "ask", due_at: at(90_000), timeout_seconds: 60 }
          })
          const waitingForever = make(3, workflow, {
            status: "waiting",
            waiting_reason: "wait_for_response",
            trigger_type: "inbound_message",
            wait: { kind: "wait_for_response", seq: 1, node_id: "ask", due_at: null, timeout_seconds: null }
          })
          const waitingAgent = make(4, sibling, {
            status: "waiting",
            waiting_reason: "agent",
            msg_conversation_id: conversation,
            wait: { kind: "wait_for_response", seq: 2, node_id: "agent", due_at: at(80_000), timeout_seconds: 30 }
          })
          // A delay has a due time but does not wait: not a timeout.
          const delayed = make(5, workflow, {
            trigger_type: "msg_event",
            observer: true,
            wait: { kind: "delay", seq: 1, node_id: "pause", due_at: at(70_000), timeout_seconds: null }
          })
          const ended = make(6, sibling, { status: "ended", current_node: null, ended_at: at(6_500), trigger_type: "project_event" })
          yield* given(ended, running, delayed, waitingAgent, waitingTimer, waitingForever)
          const elsewhere = yield* givenWorkflow()
          yield* given(makeExecution(elsewhere, { msg_conversation_id: conversation, started_at: at(3_000) }))
          const list = (filter: Parameters<ExecutionsRepo["Service"]["list"]>[1]) =>
            Effect.map(repo.list(workflow.project_id, filter, cursor(20)), (s) => ids(s.items))
          const all = [ended, delayed, waitingAgent, waitingForever, waitingTimer, running]
          assert.deepStrictEqual(yield* list({}), ids(all))
          assert.deepStrictEqual(yield* list({ workflow_id: workflow.id }), ids([delayed, waitingForever, waitingTimer, running]))
          assert.deepStrictEqual(yield* list({ workflow_id: sibling.id }), ids([ended, waitingAgent]))
          assert.deepStrictEqual(yield* list({ msg_conversation_id: conversation }), ids([waitingAgent, waitingTimer, running]))
          assert.deepStrictEqual(yield* list({ status: "waiting" }), ids([waitingAgent, waitingForever, waitingTimer]))
          assert.deepStrictEqual(yield* list({ status: "ended" }), ids([ended]))
          assert.deepStrictEqual(yield* list({ waiting_reason: "wait_for_response" }), ids([waitingForever, waitingTimer]))
          assert.deepStrictEqual(yield* list({ waiting_reason: "agent" }), ids([waitingAgent]))
          assert.deepStrictEqual(yield* list({ waiting_reason: "timeout" }), ids([waitingAgent, waitingTimer]))
          assert.deepStrictEqual(yield* list({ trigger_type: "inbound_message" }), ids([waitingForever, waitingTimer]))
          assert.deepStrictEqual(yield* list({ trigger_type: "msg_event" }), ids([delayed]))
          assert.deepStrictEqual(yield* list({ created_after: at(4_000) }), ids([ended, delayed, waitingAgent]), "inclusive")
          assert.deepStrictEqual(yield* list({ created_before: at(2_000) }), ids([waitingTimer, running]), "inclusive")
          assert.deepStrictEqual(
            yield* list({ workflow_id: workflow.id, status: "waiting", waiting_reason: "timeout", created_after: at(1_500) }),
            ids([waitingTimer])
          )
          assert.deepStrictEqual(yield* list({ workflow_id: uniqueId("wf") }), [])
          const other = yield* givenProject()
          assert.deepStrictEqual((yield* repo.list(other.id, {}, cursor(20))).items, [])
          assert.strictEqual((yield* repo.list(other.id, {}, page(1, 20))).total, 0)
        }))

      it.effect("windows the list by cursor both ways and by page, ties decided by id", () =>
        Effect.gen(function*() {
          const repo = yield* ExecutionsRepo
          const workflow = yield* givenWorkflow()
          const stem = uniqueId("exe")
          const make = (suffix: string, ms: number) => makeExecution(workflow, { id: `${stem}-${suffix}`, started_at: at(ms) })
          const [e1, e2a, e2b, e2c, e3] = [make("1", 1000), make("2a", 2000), make("2b", 2000), make("2c", 2000), make("3", 3000)]
          yield* given(e2b, e3, e1, e2c, e2a)
          const projectId = workflow.project_id
          const first = yield* repo.list(projectId, {}, cursor(2))
          assert.deepStrictEqual([ids(first.items), first.hasMore], [ids([e3, e2c]), true])
          const second = yield* repo.list(projectId, {}, { mode: "cursor", limit: 2, after: keyOf(e2c) })
          assert.deepStrictEqual([ids(second.items), second.hasMore], [ids([e2b, e2a]), true])
          const last = yield* repo.list(projectId, {}, { mode: "cursor", limit: 2, after: keyOf(e2a) })
          assert.deepStrictEqual([ids(last.items), last.hasMore], [ids([e1]), false])
          const back = yield* repo.list(projectId, {}, { mode: "cursor", limit: 2, before: keyOf(e2a) })
          assert.deepStrictEqual([ids(back.items), back.hasMore], [ids([e2c, e2b]), true])
          const top = yield* repo.list(projectId, {}, { mode: "cursor", limit: 2, before: keyOf(e2b) })
          assert.deepStrictEqual([ids(top.items), top.hasMore], [ids([e3, e2c]), false])
          const between = yield* repo.list(projectId, {}, { mode: "cursor", limit: 5, after: keyOf(e3), before: keyOf(e1) })
          assert.deepStrictEqual(ids(between.items), ids([e2c, e2b, e2a]))
          const p2 = yield* repo.list(projectId, {}, page(2, 2))
          assert.deepStrictEqual([ids(p2.items), p2.total, p2.hasMore], [ids([e2b, e2a]), 5, true])
          const p3 = yield* repo.list(projectId, {}, page(3, 2))
          assert.deepStrictEqual([ids(p3.items), p3.total, p3.hasMore], [ids([e1]), 5, false])
          const filtered = yield* repo.list(projectId, { created_before: at(2000) }, page(1, 2))
          assert.deepStrictEqual([ids(filtered.items), filtered.total], [ids([e2c, e2b]), 4])
        }))

      it.effect("routes a (number, contact) pair to its newest running, waiting or handoff non-observer", () =>
        Effect.gen(function*() {
          const repo = yield* ExecutionsRepo
          const workflow = yield* givenWorkflow()
          const number = uniqueId("cfg")
          const contact = uniqueId("contact")
          const on = (ms: number, overrides: Partial<ExecutionRecord>) =>
            makeExecution(workflow, { msg_config_id: number, contact_id: contact, started_at: at(ms), ...overrides })
          // The owner and its workflow read together agree with findRouted.
          const routedWorkflow = Effect.gen(function*() {
            const { owner, workflow } = yield* repo.findRoutedWithWorkflow(number, contact)
            assert.deepStrictEqual(owner, yield* repo.findRouted(number, contact))
            assert.deepStrictEqual(Option.map(workflow, (w) => w.id), Option.map(owner, (o) => o.workflow_id))
            return Option.map(workflow, (w) => w.id)
          })
          assert.deepStrictEqual(yield* repo.findRouted(number, contact), Option.none())
          assert.deepStrictEqual(yield* routedWorkflow, Option.none())
          const waiting = on(1_000, { status: "waiting", waiting_reason: "wait_for_response" })
          // Of another workflow: the routed workflow is the owner's.
          const other = yield* givenWorkflow()
          const running = makeExecution(other, { msg_config_id: number, contact_id: contact, started_at: at(2_000) })
          const handoff = on(3_000, { status: "handoff" })
          const distractions = [
            on(9_000, { observer: true }),
            on(9_000, { observer: true, status: "waiting", waiting_reason: "wait_for_response" }),
            on(8_000, { status: "ended", ended_at: at(8_500), current_node: null }),
            on(8_000, { status: "failed", ended_at: at(8_500), current_node: null }),
            on(9_000, { contact_id: uniqueId("contact") }),
            on(9_000, { msg_config_id: uniqueId("cfg") }),
            on(9_000, { msg_config_id: null, contact_id: null })
          ]
          yield* given(running, handoff, waiting, ...distractions)
          assert.deepStrictEqual(yield* repo.findRouted(number, contact), Option.some(handoff))
          assert.deepStrictEqual(yield* routedWorkflow, Option.some(workflow.id))
          yield* repo.update({ ...handoff, status: "ended", ended_at: at(4_000), state_version: 1 }, 0)
          assert.deepStrictEqual(yield* repo.findRouted(number, contact), Option.some(running))
          assert.deepStrictEqual(yield* routedWorkflow, Option.some(other.id))
          yield* repo.update({ ...running, status: "failed", ended_at: at(4_000), state_version: 1 }, 0)
          assert.deepStrictEqual(yield* repo.findRouted(number, contact), Option.some(waiting))
          assert.deepStrictEqual(yield* routedWorkflow, Option.some(workflow.id))
          yield* repo.update({ ...waiting, observer: true, state_version: 1 }, 0)
          assert.deepStrictEqual(yield* repo.findRouted(number, contact), Option.none())
          assert.deepStrictEqual(yield* routedWorkflow, Option.none())
        }))

      it.effect("lists the recoverable executions oldest first: quiet unleased runs and due waits", () =>
        Effect.gen(function*() {
          const repo = yield* ExecutionsRepo
          const workflow = yield* givenWorkflow()
          const t = inEra(1999)
          const now = t(100_000)
          const quietBefore = t(90_000)
          const make = (lastEventMs: number, overrides: Partial<ExecutionRecord>) =>
            makeExecution(workflow, { started_at: t(0), last_event_at: t(lastEventMs), ...overrides })
          const wait = (dueAt: string | null, kind: "wait_for_response" | "delay" = "wait_for_response") =>
            ({ kind, seq: 1, node_id: "n", due_at: dueAt, timeout_seconds: 5 }) as const
          const waiting = { status: "waiting", waiting_reason: "wait_for_response" } as const
          const unleased = make(1_000, {})
          const leaseEnded = make(2_000, { lease_owner: "h1", lease_until: t(99_999) })
          const dueWait = make(3_000, { ...waiting, wait: wait(t(50_000)) })
          const dueNow = make(4_000, { ...waiting, wait: wait(now) })
          // Leased and moving, but its delay is due.
          const dueDelay = make(95_000, { lease_owner: "h1", lease_until: t(200_000), wait: wait(t(99_000), "delay") })
          const dueHandoff = make(5_000, { status: "handoff", wait: wait(t(10_000)) })
          const notRecoverable = [
            make(1_500, { lease_owner: "h1", lease_until: t(200_000) }),
            make(1_500, { lease_owner: "h1", lease_until: now }),
            make(90_000, {}),
            make(95_000, {}),
            make(1_500, { ...waiting, wait: wait(t(100_001)) }),
            make(1_500, { ...waiting, wait: wait(null) }),
            make(1_500, waiting),
            make(1_500, { status: "ended", ended_at: t(1_500), current_node: null, wait: wait(t(10_000)) }),
            make(1_500, { status: "failed", ended_at: t(1_500), current_node: null }),
            make(1_500, { status: "handoff" }),
            // Unleased and quiet, but parked on a delay not yet due: its timer job brings it back.
            make(1_500, { wait: wait(t(100_001), "delay") }),
            make(1_500, { lease_owner: "h1", lease_until: t(99_999), wait: wait(t(150_000), "delay") })
          ]
          // Waits come and go by update: the due time read is the stored one.
          const parked = make(6_000, { lease_owner: "h1", lease_until: t(200_000) })
          const resumed = make(1_500, { ...waiting, wait: wait(t(10_000)) })
          yield* given(...notRecoverable, dueDelay, dueNow, unleased, dueHandoff, dueWait, leaseEnded, parked, resumed)
          assert.isTrue(yield* repo.update({ ...parked, ...waiting, wait: wait(t(20_000)), state_version: 1 }, 0))
          const running = { status: "running", waiting_reason: null, wait: null } as const
          assert.isTrue(yield* repo.update({ ...resumed, ...running, state_version: 1 }, 0))
          const leased = { lease_owner: "h2", lease_until: t(200_000) }
          assert.isTrue(yield* repo.update({ ...resumed, ...running, ...leased, state_version: 2 }, 1))
          const expected = [unleased, leaseEnded, dueWait, dueNow, dueHandoff, parked, dueDelay]
          assert.deepStrictEqual(ids(yield* repo.listRecoverable(now, quietBefore, 100)), ids(expected))
          assert.deepStrictEqual(yield* repo.listRecoverable(now, quietBefore, 2), [unleased, leaseEnded])
          // Before any of it was due or quiet: nothing.
          assert.deepStrictEqual(yield* repo.listRecoverable(t(500), t(500), 100), [])
        }))

      it.effect("lists a workflow's live executions", () =>
        Effect.gen(function*() {
          const repo = yield* ExecutionsRepo
          const workflow = yield* givenWorkflow()
          const sibling = yield* givenSibling(workflow)
          const live = [
            makeExecution(workflow, { started_at: at(1) }),
            makeExecution(workflow, { status: "waiting", waiting_reason: "api", started_at: at(2) }),
            makeExecution(workflow, { status: "handoff", started_at: at(3) })
          ]
          yield* given(
            ...live,
            makeExecution(workflow, { status: "ended", current_node: null }),
            makeExecution(workflow, { status: "failed", current_node: null }),
            makeExecution(sibling)
          )
          assert.deepStrictEqual(sortedIds(yield* repo.listLive(workflow.project_id, workflow.id)), sortedIds(live))
          const other = yield* givenProject()
          assert.deepStrictEqual(yield* repo.listLive(other.id, workflow.id), [])
        }))

      it.effect("counts every project's live executions by status and waiting reason, with the oldest last move", () =>
        Effect.gen(function*() {
          const repo = yield* ExecutionsRepo
          const workflow = yield* givenWorkflow()
          const other = yield* givenWorkflow()
          const t = inEra(1975)
          const key = (c: { readonly status: string; readonly waiting_reason: string | null }) => `${c.status}/${c.waiting_reason}`
          const counts = Effect.map(repo.liveCounts, (all) => new Map(all.map((c) => [key(c), c])))
          const before = yield* counts
          const waiting = { status: "waiting", waiting_reason: "wait_for_response" } as const
          // Leased far ahead and parked without a due time: none of it is recoverable for the tests that list those.
          const running = { lease_owner: "h1", lease_until: "2100-01-01T00:00:00.000Z" } as const
          yield* given(
            makeExecution(workflow, { ...waiting, started_at: t(0), last_event_at: t(2_000) }),
            makeExecution(other, { ...waiting, started_at: t(0), last_event_at: t(1_000) }),
            makeExecution(workflow, { status: "waiting", waiting_reason: "api", started_at: t(0), last_event_at: t(3_000) }),
            makeExecution(workflow, { status: "handoff", started_at: t(0), last_event_at: t(4_000) }),
            makeExecution(other, { ...running, started_at: t(0), last_event_at: t(5_000) }),
            makeExecution(workflow, { status: "ended", ended_at: t(6_000), current_node: null, started_at: t(0), last_event_at: t(6_000) }),
            makeExecution(workflow, { status: "failed", ended_at: t(6_000), current_node: null, started_at: t(0), last_event_at: t(6_000) })
          )
          const after = yield* counts
          const added = (k: string) => (after.get(k)?.count ?? 0) - (before.get(k)?.count ?? 0)
          assert.deepStrictEqual(
            ["waiting/wait_for_response", "waiting/api", "handoff/null", "running/null"].map(added),
            [2, 1, 1, 1]
          )
          assert.isFalse([...after.keys()].some((k) => k.startsWith("ended/") || k.startsWith("failed/")), "terminal runs are not live")
          // 1975 is older than anything else the suite writes.
          assert.strictEqual(after.get("waiting/wait_for_response")!.oldest_event_at, t(1_000))
          assert.strictEqual(after.get("handoff/null")!.oldest_event_at, t(4_000))
        }))

      it.effect("stores a revision once (put-if-absent) and gives it back exactly", () =>
        Effect.gen(function*() {
          const repo = yield* ExecutionsRepo
          const workflow = yield* givenWorkflow()
          const revision = makeRevision(workflow, { created_at: "2026-03-04T07:06:07.089+02:00" })
          yield* repo.putRevision(revision)
          const stored = { ...revision, created_at: "2026-03-04T05:06:07.089Z" }
          assert.deepStrictEqual(yield* repo.getRevision(revision.id), Option.some(stored))
          yield* repo.putRevision({ ...revision, definition: { nodes: [], edges: [] }, created_at: at(5) })
          assert.deepStrictEqual(yield* repo.getRevision(revision.id), Option.some(stored))
          assert.deepStrictEqual(yield* repo.getRevision(uniqueId("rev")), Option.none())
          yield* dies(repo.putRevision(makeRevision({ ...workflow, id: uniqueId("wf") })))
        }))

      it.effect("deletes a workflow's executions, their events and its revisions, and nothing else", () =>
        Effect.gen(function*() {
          const repo = yield* ExecutionsRepo
          const events = yield* StepEventsRepo
          const workflow = yield* givenWorkflow()
          const sibling = yield* givenSibling(workflow)
          const doomed = [makeExecution(workflow), makeExecution(workflow, { status: "ended", current_node: null })]
          const kept = makeExecution(sibling)
          yield* given(...doomed, kept)
          const doomedEvents = doomed.map((e) => makeStepEvent(e))
          const keptEvent = makeStepEvent(kept)
          yield* events.append([...doomedEvents, keptEvent])
          const doomedRevision = makeRevision(workflow)
          const keptRevision = makeRevision(sibling)
          yield* repo.putRevision(doomedRevision)
          yield* repo.putRevision(keptRevision)

          const other = yield* givenProject()
          yield* repo.deleteByWorkflow(other.id, workflow.id)
          assert.isTrue(Option.isSome(yield* repo.get(doomed[0]!.id)), "another project's call deletes nothing")

          yield* repo.deleteByWorkflow(workflow.project_id, workflow.id)
          for (const e of doomed) assert.deepStrictEqual(yield* repo.get(e.id), Option.none())
          for (const e of doomedEvents) assert.deepStrictEqual(yield* events.find(workflow.project_id, e.id), Option.none())
          assert.deepStrictEqual(yield* repo.getRevision(doomedRevision.id), Option.none())
          assert.deepStrictEqual(yield* repo.get(kept.id), Option.some(kept))
          assert.deepStrictEqual(yield* events.find(workflow.project_id, keptEvent.id), Option.some(keptEvent))
          assert.deepStrictEqual(yield* repo.getRevision(keptRevision.id), Option.some(keptRevision))
          // The workflow itself stays: new runs may start on it.
          assert.isTrue(yield* repo.insert(makeExecution(workflow)))
        }))

      it.effect("loses a workflow's executions, events and revisions with the workflow", () =>
        Effect.gen(function*() {
          const repo = yield* ExecutionsRepo
          const events = yield* StepEventsRepo
          const workflow = yield* givenWorkflow()
          const execution = makeExecution(workflow)
          yield* given(execution)
          const event = makeStepEvent(execution)
          yield* events.append([event])
          const revision = makeRevision(workflow)
          yield* repo.putRevision(revision)
          assert.isTrue(yield* (yield* WorkflowsRepo).delete(workflow.project_id, workflow.id))
          assert.deepStrictEqual(yield* repo.get(execution.id), Option.none())
          assert.deepStrictEqual(yield* events.find(workflow.project_id, event.id), Option.none())
          assert.deepStrictEqual(yield* repo.getRevision(revision.id), Option.none())
        }))

      it.effect("writes nothing of a transaction that fails", () =>
        Effect.gen(function*() {
          const repo = yield* ExecutionsRepo
          const { withTransaction } = yield* Transactor
          const workflow = yield* givenWorkflow()
          const execution = makeExecution(workflow)
          yield* given(execution)
          const fresh = makeExecution(workflow)
          yield* Effect.flip(withTransaction(Effect.gen(function*() {
            assert.isTrue(yield* repo.update({ ...execution, current_node: "next", state_version: 1 }, 0))
            assert.isTrue(yield* repo.insert(fresh))
            return yield* new Boom()
          })))
          assert.deepStrictEqual(yield* repo.get(execution.id), Option.some(execution))
          assert.deepStrictEqual(yield* repo.get(fresh.id), Option.none())
        }))
    })

    layer(storage, { excludeTestServices: true })("StepEventsRepo", (it) => {
      const givenExecution = (overrides: Partial<ExecutionRecord> = {}) =>
        Effect.gen(function*() {
          const workflow = yield* givenWorkflow()
          const execution = makeExecution(workflow, overrides)
          yield* given(execution)
          return execution
        })

      it.effect("appends events and finds each exactly as given, in its project only", () =>
        Effect.gen(function*() {
          const repo = yield* StepEventsRepo
          const execution = yield* givenExecution()
          const event = makeStepEvent(execution, {
            seq: 3,
            event_type: "action_performed",
            direction: "outbound",
            edge_label: "yes",
            created_at: at(7),
            payload: { action: "send_text", to: "15550001111", response: { ok: true, list: [1, null, "ü"] } },
            step: { id: uniqueId("step"), identifier: "send", node_type: "send_text", display_name: "Send ✓" }
          })
          const plain = makeStepEvent(execution, { seq: 4, created_at: "2026-03-04T07:06:07.090+02:00" })
          yield* repo.append([event, plain])
          yield* repo.append([])
          assert.deepStrictEqual(yield* repo.find(execution.project_id, event.id), Option.some(event))
          assert.deepStrictEqual(
            yield* repo.find(execution.project_id, plain.id),
            Option.some({ ...plain, created_at: "2026-03-04T05:06:07.090Z" })
          )
          const other = yield* givenProject()
          assert.deepStrictEqual(yield* repo.find(other.id, event.id), Option.none())
          assert.deepStrictEqual(yield* repo.find(execution.project_id, uniqueId("evt")), Option.none())
        }))

      it.effect("refuses a batch with an event of no execution or a repeated id, writing none of it", () =>
        Effect.gen(function*() {
          const repo = yield* StepEventsRepo
          const execution = yield* givenExecution()
          const good = makeStepEvent(execution)
          yield* dies(repo.append([good, makeStepEvent({ ...execution, id: uniqueId("exe") })]))
          assert.deepStrictEqual(yield* repo.find(execution.project_id, good.id), Option.none())
          yield* repo.append([good])
          const fresh = makeStepEvent(execution, { seq: 1 })
          yield* dies(repo.append([fresh, { ...good, seq: 2 }]))
          assert.deepStrictEqual(yield* repo.find(execution.project_id, fresh.id), Option.none())
        }))

      /** Events of a fresh execution, newest first; two share an instant where seq (not id) decides. */
      const givenTimeline = Effect.gen(function*() {
        const repo = yield* StepEventsRepo
        const execution = yield* givenExecution()
        const stem = uniqueId("evt")
        const make = (suffix: string, seq: number, ms: number, eventType: string) =>
          makeStepEvent(execution, { id: `${stem}-${suffix}`, seq, created_at: at(ms), event_type: eventType })
        const e1 = make("d", 0, 1000, "execution_started")
        const e2 = make("c", 1, 2000, "step_entered")
        // Same instant: seq orders them, against their ids.
        const e3 = make("b", 2, 2000, "step_completed")
        const e4 = make("a", 3, 2000, "step_entered")
        const e5 = make("e", 4, 3000, "execution_ended")
        yield* repo.append([e3, e5, e1])
        yield* repo.append([e4, e2])
        const neighbour = yield* givenExecution()
        yield* repo.append([makeStepEvent(neighbour, { created_at: at(2500) })])
        return { execution, newestFirst: [e5, e4, e3, e2, e1] as const }
      })

      it.effect("lists an execution's events newest first by (created_at, seq), filtered by type", () =>
        Effect.gen(function*() {
          const repo = yield* StepEventsRepo
          const { execution, newestFirst } = yield* givenTimeline
          const [e5, e4, e3, e2, e1] = newestFirst
          const list = (eventTypes?: ReadonlyArray<string>) =>
            Effect.map(
              repo.list(execution.project_id, execution, { event_types: eventTypes }, cursor(20)),
              (s) => ids(s.items)
            )
          assert.deepStrictEqual(yield* list(), ids(newestFirst))
          assert.deepStrictEqual(yield* list([]), ids(newestFirst), "no types: no filter")
          assert.deepStrictEqual(yield* list(["step_entered"]), ids([e4, e2]))
          assert.deepStrictEqual(yield* list(["execution_started", "execution_ended"]), ids([e5, e1]))
          assert.deepStrictEqual(yield* list(["step_completed", "nothing_like_it"]), ids([e3]))
          assert.deepStrictEqual(yield* list(["nothing_like_it"]), [])
          const other = yield* givenProject()
          assert.deepStrictEqual((yield* repo.list(other.id, execution, {}, cursor(20))).items, [])
          assert.deepStrictEqual(ids(yield* repo.latest(execution, 3)), ids([e5, e4, e3]))
          assert.deepStrictEqual(ids(yield* repo.latest(execution, 100)), ids(newestFirst))
          assert.deepStrictEqual(yield* repo.latest({ id: uniqueId("exe"), started_at: at(0), status: "running", ended_at: null }, 100), [])
        }))

      it.effect("windows an execution's events by cursor both ways and by page", () =>
        Effect.gen(function*() {
          const repo = yield* StepEventsRepo
          const { execution, newestFirst } = yield* givenTimeline
          const [e5, e4, e3, e2, e1] = newestFirst
          const list = (window: ListWindow, eventTypes?: ReadonlyArray<string>) =>
            Effect.map(
              repo.list(execution.project_id, execution, { event_types: eventTypes }, window),
              (s) => [ids(s.items), window.mode === "page" ? s.total : s.hasMore] as const
            )
          assert.deepStrictEqual(yield* list(cursor(2)), [ids([e5, e4]), true])
          assert.deepStrictEqual(yield* list({ mode: "cursor", limit: 2, after: eventKeyOf(e4) }), [ids([e3, e2]), true])
          assert.deepStrictEqual(yield* list({ mode: "cursor", limit: 2, after: eventKeyOf(e2) }), [ids([e1]), false])
          assert.deepStrictEqual(yield* list({ mode: "cursor", limit: 2, before: eventKeyOf(e2) }), [ids([e4, e3]), true])
          assert.deepStrictEqual(yield* list({ mode: "cursor", limit: 2, before: eventKeyOf(e3) }), [ids([e5, e4]), false])
          assert.deepStrictEqual(
            yield* list({ mode: "cursor", limit: 2, after: eventKeyOf(e5) }, ["step_entered", "execution_started"]),
            [ids([e4, e2]), true]
          )
          assert.deepStrictEqual(yield* list(page(2, 2)), [ids([e3, e2]), 5])
          assert.deepStrictEqual(yield* list(page(3, 2)), [ids([e1]), 5])
          assert.deepStrictEqual(yield* list(page(1, 10), ["step_entered"]), [ids([e4, e2]), 2])
        }))

      it.effect("places a cursor whose event is gone before every event of its instant", () =>
        Effect.gen(function*() {
          const repo = yield* StepEventsRepo
          const { execution, newestFirst } = yield* givenTimeline
          const [e5, e4, e3, e2, e1] = newestFirst
          const gone = { sortKey: at(2000), id: uniqueId("evt") }
          const older = yield* repo.list(execution.project_id, execution, {}, { mode: "cursor", limit: 10, after: gone })
          assert.deepStrictEqual(ids(older.items), ids([e1]))
          const newer = yield* repo.list(execution.project_id, execution, {}, { mode: "cursor", limit: 10, before: gone })
          assert.deepStrictEqual(ids(newer.items), ids([e5, e4, e3, e2]))
        }))

      it.effect("reads a run's events stamped up to a day before it started (hosts' clocks drift), none before", () =>
        Effect.gen(function*() {
          const repo = yield* StepEventsRepo
          const started = 3 * STEP_EVENT_SKEW_MS
          const execution = yield* givenExecution({ started_at: at(started), last_event_at: at(started) })
          assert.strictEqual(stepEventsSince(execution), at(started - STEP_EVENT_SKEW_MS))
          const make = (seq: number, ms: number) => makeStepEvent(execution, { seq, created_at: at(ms) })
          const skewed = make(1, started - STEP_EVENT_SKEW_MS)
          const earlier = make(2, started - HOUR)
          const later = make(3, started + 8 * STEP_EVENT_SKEW_MS)
          const tooEarly = make(0, started - STEP_EVENT_SKEW_MS - 1)
          yield* repo.append([tooEarly, skewed, earlier, later])
          const newestFirst = ids([later, earlier, skewed])
          assert.deepStrictEqual(ids(yield* repo.latest(execution, 10)), newestFirst)
          assert.deepStrictEqual(ids((yield* repo.list(execution.project_id, execution, {}, cursor(10))).items), newestFirst)
          const paged = yield* repo.list(execution.project_id, execution, {}, page(1, 2))
          assert.deepStrictEqual([ids(paged.items), paged.total], [ids([later, earlier]), 3])
          const after = yield* repo.list(execution.project_id, execution, {}, { mode: "cursor", limit: 10, after: eventKeyOf(earlier) })
          assert.deepStrictEqual(ids(after.items), ids([skewed]))
          const before = yield* repo.list(execution.project_id, execution, {}, { mode: "cursor", limit: 10, before: eventKeyOf(skewed) })
          assert.deepStrictEqual(ids(before.items), ids([later, earlier]))
          // Still found by id: `find` names no run.
          assert.deepStrictEqual(yield* repo.find(execution.project_id, tooEarly.id), Option.some(tooEarly))
        }))

      it.effect("reads an ended run's events stamped up to a day after it ended, none after; a live run's without end", () =>
        Effect.gen(function*() {
          const repo = yield* StepEventsRepo
          const started = 3 * STEP_EVENT_SKEW_MS
          const endedAt = started + 10 * STEP_EVENT_SKEW_MS
          const execution = yield* givenExecution({ started_at: at(started), last_event_at: at(endedAt), status: "ended", ended_at: at(endedAt) })
          assert.strictEqual(stepEventsUntil(execution), at(endedAt + STEP_EVENT_SKEW_MS))
          const make = (seq: number, ms: number) => makeStepEvent(execution, { seq, created_at: at(ms) })
          const first = make(0, started)
          const last = make(1, endedAt)
          const skewed = make(2, endedAt + STEP_EVENT_SKEW_MS)
          const tooLate = make(3, endedAt + STEP_EVENT_SKEW_MS + 1)
          yield* repo.append([first, last, skewed, tooLate])
          const newestFirst = ids([skewed, last, first])
          assert.deepStrictEqual(ids(yield* repo.latest(execution, 10)), newestFirst)
          assert.deepStrictEqual(ids((yield* repo.list(execution.project_id, execution, {}, cursor(10))).items), newestFirst)
          const paged = yield* repo.list(execution.project_id, execution, {}, page(1, 10))
          assert.deepStrictEqual([ids(paged.items), paged.total], [newestFirst, 3])
          // The same run while it could still move has no end to bound it.
          assert.isUndefined(stepEventsUntil({ ...execution, status: "waiting" }))
          assert.lengthOf(yield* repo.latest({ ...execution, status: "waiting" }, 10), 4)
        }))

      it.effect("finds an event by a UUIDv7 id stamped up to a day either side of it, none further (the id bounds the read)", () =>
        Effect.gen(function*() {
          const repo = yield* StepEventsRepo
          const execution = yield* givenExecution()
          const created = 3 * STEP_EVENT_SKEW_MS
          const make = (seq: number, stampedMs: number) =>
            makeStepEvent(execution, { id: uuidV7At(Date.parse(at(stampedMs))), seq, created_at: at(created) })
          const onTime = make(0, created + 40)
          const dayBefore = make(1, created - STEP_EVENT_SKEW_MS)
          const dayAfter = make(2, created + STEP_EVENT_SKEW_MS)
          const tooEarly = make(3, created - STEP_EVENT_SKEW_MS - 1)
          const tooLate = make(4, created + STEP_EVENT_SKEW_MS + 1)
          const notV7 = makeStepEvent(execution, { id: crypto.randomUUID(), seq: 5, created_at: at(created) })
          yield* repo.append([onTime, dayBefore, dayAfter, tooEarly, tooLate, notV7])
          assert.deepStrictEqual(stepEventSpan(onTime.id), { since: at(created + 40 - STEP_EVENT_SKEW_MS), until: at(created + 40 + STEP_EVENT_SKEW_MS) })
          assert.isUndefined(stepEventSpan(notV7.id))
          for (const e of [onTime, dayBefore, dayAfter, notV7]) assert.deepStrictEqual(yield* repo.find(execution.project_id, e.id), Option.some(e))
          for (const e of [tooEarly, tooLate]) assert.deepStrictEqual(yield* repo.find(execution.project_id, e.id), Option.none())
          // Every read by run still lists them all.
          assert.lengthOf(yield* repo.latest(execution, 10), 6)
        }))

      it.effect("is seen by the rest of its transaction and goes with its rollback", () =>
        Effect.gen(function*() {
          const repo = yield* StepEventsRepo
          const executions = yield* ExecutionsRepo
          const { withTransaction } = yield* Transactor
          const execution = yield* givenExecution()
          const checkpoint = (seq: number) =>
            Effect.gen(function*() {
              const event = makeStepEvent(execution, { seq, created_at: at(seq) })
              assert.isTrue(yield* executions.update({ ...execution, step_seq: seq, state_version: seq }, seq - 1))
              yield* repo.append([event])
              return event
            })
          const kept = yield* withTransaction(Effect.gen(function*() {
            const event = yield* checkpoint(1)
            assert.deepStrictEqual(ids(yield* repo.latest(execution, 10)), [event.id])
            return event
          }))
          const lost = yield* Effect.flip(withTransaction(Effect.flatMap(checkpoint(2), () => Effect.fail(new Boom()))))
          assert.instanceOf(lost, Boom)
          assert.deepStrictEqual(ids(yield* repo.latest(execution, 10)), [kept.id])
          assert.deepStrictEqual(Option.map(yield* executions.get(execution.id), (e) => e.state_version), Option.some(1))
        }))

      it.effect("prunes events created before a time, at most a given number at once", () =>
        Effect.gen(function*() {
          const repo = yield* StepEventsRepo
          const t = inEra(1998)
          const execution = yield* givenExecution({ started_at: t(0), last_event_at: t(0) })
          const old = [1, 2, 3].map((n) => makeStepEvent(execution, { seq: n, created_at: t(n * 1000) }))
          const boundary = makeStepEvent(execution, { seq: 4, created_at: t(10_000) })
          const recent = makeStepEvent(execution, { seq: 5, created_at: t(20_000) })
          yield* repo.append([...old, boundary, recent])
          assert.strictEqual(yield* repo.prune(t(10_000), 2), 2)
          assert.strictEqual(yield* repo.prune(t(10_000), 2), 1)
          assert.strictEqual(yield* repo.prune(t(10_000), 2), 0)
          assert.deepStrictEqual(ids(yield* repo.latest(execution, 10)), ids([recent, boundary]))
        }))
    })

    layer(storage, { excludeTestServices: true })("ExecutionInputsRepo", (it) => {
      it.effect("adds each message once, lists a pair's inputs in one state oldest first, and takes them for good", () =>
        Effect.gen(function*() {
          const repo = yield* ExecutionInputsRepo
          const project = yield* givenProject()
          const number = uniqueId("cfg")
          const contact = uniqueId("contact")
          const stem = uniqueId("msg")
          const make = (suffix: string, ms: number, overrides: Partial<ExecutionInputRecord> = {}) =>
            makeInput(project.id, {
              id: `${stem}-${suffix}`,
              msg_config_id: number,
              contact_id: contact,
              received_at: at(ms),
              ...overrides
            })
          const first = make("c", 1_000, {
            network_id: "wamid.1",
            value: { kind: "button", payload: { id: "yes", nested: [1, null, "ü"] } }
          })
          const tieA = make("a", 2_000)
          const tieB = make("b", 2_000, { received_at: "2026-03-04T07:06:09.089+02:00" })
          const queued = make("d", 500, { state: "queued" })
          const otherContact = make("e", 100, { contact_id: uniqueId("contact") })
          const otherNumber = make("f", 100, { msg_config_id: uniqueId("cfg") })
          for (const input of [tieB, first, queued, tieA, otherContact, otherNumber]) assert.isTrue(yield* repo.add(input))
          assert.isFalse(yield* repo.add(first))
          assert.isFalse(yield* repo.add({ ...first, state: "queued", value: "changed" }))
          const stored = (i: ExecutionInputRecord) => ({ ...i, received_at: at(2_000) })
          assert.deepStrictEqual(yield* repo.list(number, contact, "buffered"), [first, tieA, stored(tieB)])
          assert.deepStrictEqual(yield* repo.list(number, contact, "queued"), [queued])
          yield* repo.take([first.id, queued.id, uniqueId("msg")])
          yield* repo.take([])
          assert.deepStrictEqual(ids(yield* repo.list(number, contact, "buffered")), ids([tieA, tieB]))
          assert.deepStrictEqual(yield* repo.list(number, contact, "queued"), [])
          assert.isFalse(yield* repo.add(first), "a taken message is remembered as seen")
          assert.isFalse(yield* repo.add({ ...queued, state: "buffered" }))
          assert.deepStrictEqual(ids(yield* repo.list(number, contact, "buffered")), ids([tieA, tieB]))
          yield* dies(repo.add(makeInput(uniqueId("prj"))))
        }))

      it.effect("queues buffered inputs in place, leaving queued and taken ones as they are", () =>
        Effect.gen(function*() {
          const repo = yield* ExecutionInputsRepo
          const project = yield* givenProject()
          const number = uniqueId("cfg")
          const contact = uniqueId("contact")
          const make = (ms: number, overrides: Partial<ExecutionInputRecord> = {}) =>
            makeInput(project.id, { msg_config_id: number, contact_id: contact, received_at: at(ms), ...overrides })
          const a = make(1_000)
          const b = make(2_000)
          const c = make(3_000)
          const taken = make(500)
          for (const input of [a, b, c, taken]) assert.isTrue(yield* repo.add(input))
          yield* repo.take([taken.id])
          yield* repo.queue([a.id, b.id, taken.id, uniqueId("msg")])
          yield* repo.queue([])
          assert.deepStrictEqual(yield* repo.list(number, contact, "queued"), [{ ...a, state: "queued" }, { ...b, state: "queued" }])
          assert.deepStrictEqual(yield* repo.list(number, contact, "buffered"), [c])
          assert.isFalse(yield* repo.add(a), "a queued message is still seen")
          yield* repo.take([a.id])
          assert.deepStrictEqual(ids(yield* repo.list(number, contact, "queued")), ids([b]))
        }))

      it.effect("drops a pair's queued inputs only once no run owns the pair", () =>
        Effect.gen(function*() {
          const repo = yield* ExecutionInputsRepo
          const executions = yield* ExecutionsRepo
          const workflow = yield* givenWorkflow()
          const number = uniqueId("cfg")
          const contact = uniqueId("contact")
          const make = (ms: number, overrides: Partial<ExecutionInputRecord> = {}) =>
            makeInput(workflow.project_id, { msg_config_id: number, contact_id: contact, received_at: at(ms), ...overrides })
          const queued = make(1_000, { state: "queued" })
          const buffered = make(2_000)
          const elsewhere = make(1_000, { state: "queued", contact_id: uniqueId("contact") })
          for (const input of [queued, buffered, elsewhere]) assert.isTrue(yield* repo.add(input))
          const owner = makeExecution(workflow, { msg_config_id: number, contact_id: contact, status: "waiting", waiting_reason: "wait_for_response" })
          const observer = makeExecution(workflow, { msg_config_id: number, contact_id: contact, observer: true })
          yield* given(owner, observer)
          yield* repo.dropQueuedIfUnowned(number, contact)
          assert.deepStrictEqual(yield* repo.list(number, contact, "queued"), [queued], "a run owns the pair")
          yield* executions.update({ ...owner, status: "ended", ended_at: at(4_000), state_version: 1 }, 0)
          yield* repo.dropQueuedIfUnowned(number, contact)
          assert.deepStrictEqual(yield* repo.list(number, contact, "queued"), [], "an observer owns nothing")
          assert.deepStrictEqual(yield* repo.list(number, contact, "buffered"), [buffered], "buffered inputs stay")
          assert.deepStrictEqual(ids(yield* repo.list(number, elsewhere.contact_id, "queued")), ids([elsewhere]), "another pair's stay")
          assert.isFalse(yield* repo.add(queued), "a dropped message is remembered as seen")
        }))

      it.effect("lists buffered inputs received before a time, oldest first, up to a limit", () =>
        Effect.gen(function*() {
          const repo = yield* ExecutionInputsRepo
          const project = yield* givenProject()
          const t = inEra(1997)
          const make = (ms: number, overrides: Partial<ExecutionInputRecord> = {}) =>
            makeInput(project.id, { msg_config_id: uniqueId("cfg"), contact_id: uniqueId("contact"), received_at: t(ms), ...overrides })
          const stale = [make(3_000), make(1_000), make(2_000)]
          const taken = make(500)
          const queued = make(600, { state: "queued" })
          const boundary = make(10_000)
          const fresh = make(20_000)
          for (const input of [...stale, taken, queued, boundary, fresh]) assert.isTrue(yield* repo.add(input))
          yield* repo.take([taken.id])
          const oldestFirst = [stale[1]!, stale[2]!, stale[0]!]
          assert.deepStrictEqual(yield* repo.listStale(t(10_000), 10), oldestFirst)
          assert.deepStrictEqual(yield* repo.listStale(t(10_000), 2), oldestFirst.slice(0, 2))
          assert.deepStrictEqual(yield* repo.listStale(t(1_000), 10), [])
        }))
    })
  })
}
