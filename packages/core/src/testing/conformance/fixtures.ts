/** Records for the storage conformance suites: unique ids per call, so tests sharing one store never meet. */
import { assert } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber, Queue, Stream } from "effect"
import { Transactor } from "../../ports/Transactor.ts"
import { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import type { ApiKey, Project } from "../../projects/Project.ts"
import type { TriggerRecord } from "../../workflows/Trigger.ts"
import type { WorkflowRecord } from "../../workflows/Workflow.ts"

export const uniqueId = (prefix: string) => `${prefix}_${crypto.randomUUID()}`

/**
 * Listens to a port's change signals, past what it says on connecting: `next` waits (at most 5 s) for the
 * next signal, `stop` ends the listening.
 */
export const listenTo = (changes: Stream.Stream<void>) =>
  Effect.gen(function*() {
    const signals = yield* Queue.unbounded<void>()
    const listener = yield* Stream.runForEach(changes, () => Queue.offer(signals, undefined)).pipe(Effect.forkChild)
    // Let the subscription settle, then forget whatever it said on connecting.
    yield* Effect.sleep("300 millis")
    yield* Queue.clear(signals)
    return { next: Queue.take(signals).pipe(Effect.timeout("5 seconds")), stop: Fiber.interrupt(listener) }
  })

/** A millisecond-precise instant `ms` after a fixed origin, as records store it. */
export const at = (ms: number) => new Date(Date.UTC(2026, 2, 4, 5, 6, 7, 89) + ms).toISOString()

export const makeProject = (overrides: Partial<Project> = {}): Project => ({
  id: uniqueId("prj"),
  name: "Acme",
  disabled: false,
  created_at: at(0),
  updated_at: at(0),
  ...overrides
})

export const makeKey = (projectId: string, overrides: Partial<ApiKey> = {}): ApiKey => ({
  id: uniqueId("key"),
  project_id: projectId,
  name: "ci",
  key_hash: crypto.randomUUID().replaceAll("-", "").repeat(2),
  prefix: "pk_live_abc",
  created_at: at(0),
  revoked_at: null,
  ...overrides
})

export const makeWorkflow = (projectId: string, overrides: Partial<WorkflowRecord> = {}): WorkflowRecord => {
  const id = overrides.id ?? uniqueId("wf")
  return {
    id,
    project_id: projectId,
    name: `Workflow ${id}`,
    slug: `slug-${id}`,
    description: null,
    status: "draft",
    lock_version: 0,
    message_debounce_seconds: null,
    agent_default_tools_version: null,
    inbound_message_read_mode: "disabled",
    created_at: at(0),
    updated_at: at(0),
    execution_count: 0,
    last_executed_at: null,
    created_by: { id: "key_1", name: "ci" },
    definition: { nodes: [], edges: [] },
    ...overrides
  }
}

export const makeTrigger = (
  projectId: string,
  workflowId: string,
  overrides: Partial<TriggerRecord> = {}
): TriggerRecord => ({
  id: uniqueId("trg"),
  project_id: projectId,
  workflow_id: workflowId,
  trigger_type: "api_call",
  active: true,
  display_name: "API call",
  triggerable: {},
  created_at: at(0),
  updated_at: at(0),
  ...overrides
})

/** Inserts a fresh project and answers it. */
export const givenProject = (overrides: Partial<Project> = {}) =>
  Effect.gen(function*() {
    const project = makeProject(overrides)
    yield* (yield* ProjectsRepo).insert(project)
    return project
  })

/** Fails the test unless `effect` dies: a broken storage rule (foreign or primary key) is a defect, not a domain error. */
export const dies = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause) && !Cause.hasFails(exit.cause), "expected a defect")
  })

/**
 * Whether a transaction taking a lock with `second` waited for one that took it with `first` to commit. A lock
 * covers what the transaction reads or stores after it (a store may send it with the next statement), so each side
 * reads (`read`, any statement) once it has locked.
 */
export const waitsForHolder = <R1, R2, R3>(
  first: Effect.Effect<void, never, R1>,
  second: Effect.Effect<void, never, R2>,
  read: Effect.Effect<unknown, never, R3>
) =>
  Effect.gen(function*() {
    const tx = yield* Transactor
    const taken = yield* Deferred.make<void>()
    let committed = false
    const holder = yield* Effect.forkChild(tx.withTransaction(Effect.gen(function*() {
      yield* first
      yield* read
      yield* Deferred.succeed(taken, undefined)
      yield* Effect.sleep("150 millis")
      committed = true
    })))
    yield* Deferred.await(taken)
    const seen = yield* tx.withTransaction(Effect.andThen(second, Effect.andThen(read, Effect.sync(() => committed))))
    yield* Fiber.join(holder)
    return seen
  })
