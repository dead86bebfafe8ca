/**
 * The execution engine: runs an execution's steps in process, one at a time,
 * until it waits, hands off or ends, writing one checkpoint per transition
 * (the record, compare-and-set on `state_version`, with its step events).
 *
 * Ownership: a slice first takes a lease on the record (host id, 60 s,
 * renewed by every checkpoint); a host whose lease lapsed loses the
 * compare-and-set at its next checkpoint and stops. Jobs are hints, the
 * record is the truth: `executions.run` hands a slice to any host,
 * `executions.timer` carries (execution, wait seq) and does nothing once the
 * wait moved on, and the sweeper (`ExecutionsJobs.ts`) finds runs whose
 * host died or whose timer job was lost.
 *
 * Sends happen at most once (decisions 10.4): the node's envelope and a key
 * fixed per step visit are checkpointed first (`pending`, with the Parley id
 * the message will be recorded under), then `Outbound` records and sends it,
 * then the outcome is checkpointed. Whoever finds `pending` set (this slice,
 * or a host recovering it) asks for the recorded message: none means it
 * never left (it is recorded before it is sent) and is sent now; a network
 * id means it went out; a message still without one is in doubt and is
 * settled by the network's status reports (the key rides as
 * `biz_opaque_callback_data`) or failed after a grace period — never sent again.
 */
import { Clock, Config, Context, Data, Deferred, Effect, FiberSet, Layer, Option } from "effect"
import { createHash } from "node:crypto"
import { Outbound } from "../messaging/Outbound.ts"
import { ExecutionsRepo, StepEventsRepo } from "../ports/ExecutionsRepo.ts"
import { JobQueue } from "../ports/JobQueue.ts"
import { MessageConfigsRepo } from "../ports/MessageConfigsRepo.ts"
import { Outbox } from "../ports/Outbox.ts"
import { Transactor } from "../ports/Transactor.ts"
import { Ids } from "../shared/Ids.ts"
import type { Definition } from "../workflows/Workflow.ts"
import { type ExecutionRecord, isTerminal, stepRef, type StepEventRecord, type WorkflowRevision } from "./Execution.ts"
import { type Graph, makeGraph } from "./Graph.ts"
import { shapePayload } from "./StepLog.ts"
import { type NodeServices, runNode } from "./Nodes.ts"
import type { StepOutcome } from "./Step.ts"
import * as T from "./Transitions.ts"

export const RUN_QUEUE = "executions.run"
export const TIMER_QUEUE = "executions.timer"
export const LEASE_MS = 60_000
/** A run aborts after this many steps without entering `waiting` (decisions 2.2). */
export const STEP_LIMIT = 200
/** How long a send whose outcome a crash left unknown waits for the network's word before it fails. */
export const DOUBT_GRACE_MS = 60_000
/** Each host looks for runs whose host died and timers whose job was lost this often. */
export const SWEEP_INTERVAL_MS = 15_000

/** How long the engine trusts a silent host and a silent network; the defaults above, shorter in crash tests. */
export interface ExecutionsSettingsShape {
  /** A slice's lease: another host takes the run over this long after its last checkpoint. */
  readonly leaseMs: number
  /** See `DOUBT_GRACE_MS`. */
  readonly doubtGraceMs: number
  /** How often each host's recovery sweep runs (`ExecutionsJobs.ts`). */
  readonly sweepIntervalMs: number
  /**
   * Crash tests only (0 otherwise): the chance the process SIGKILLs itself at
   * each crash point (after a checkpoint commits, after the network answered a
   * send), the instants a kill from outside rarely hits.
   */
  readonly crashProbability: number
}

export class ExecutionsSettings extends Context.Reference<ExecutionsSettingsShape>("@parley/core/executions/ExecutionsSettings", {
  defaultValue: () => ({ leaseMs: LEASE_MS, doubtGraceMs: DOUBT_GRACE_MS, sweepIntervalMs: SWEEP_INTERVAL_MS, crashProbability: 0 })
}) {
  /**
   * From `PARLEY_EXECUTION_LEASE_MS`, `PARLEY_SEND_DOUBT_GRACE_MS`, `PARLEY_EXECUTION_SWEEP_MS` and
   * `PARLEY_TEST_CRASH_PROBABILITY`; unset keeps the defaults.
   */
  static readonly layerConfig = Layer.effect(
    ExecutionsSettings,
    Effect.gen(function*() {
      const ms = (name: string, fallback: number) =>
        Config.Int(name).pipe(Config.withDefault(fallback), Config.map((n) => Math.max(1, n)))
      return {
        leaseMs: yield* ms("PARLEY_EXECUTION_LEASE_MS", LEASE_MS),
        doubtGraceMs: yield* ms("PARLEY_SEND_DOUBT_GRACE_MS", DOUBT_GRACE_MS),
        sweepIntervalMs: yield* ms("PARLEY_EXECUTION_SWEEP_MS", SWEEP_INTERVAL_MS),
        crashProbability: yield* Config.Finite("PARLEY_TEST_CRASH_PROBABILITY").pipe(Config.withDefault(0))
      }
    }).pipe(Effect.orDie)
  )
}

export interface TimerJob {
  readonly id: string
  readonly seq: number
}

/** The checkpoint lost its compare-and-set: another host owns the run now. */
class Fenced extends Data.TaggedError("Fenced")<{}> {}

/** The revision id of a definition: its content hash, so equal graphs share one row. */
export const revisionId = (workflowId: string, definition: Definition) =>
  `${workflowId}:${createHash("sha256").update(JSON.stringify(definition)).digest("hex").slice(0, 32)}`

export class ExecutionEngine extends Context.Service<ExecutionEngine, {
  /** This host's id (lease owner). */
  readonly hostId: string
  /** The graph of a revision (remembered: revisions never change). */
  readonly graph: (revisionId: string) => Effect.Effect<Graph>
  /** Stores the revision of a definition if new; answers its id. Call inside the start's transaction. */
  readonly pinRevision: (projectId: string, workflowId: string, definition: Definition) => Effect.Effect<string>
  /** Writes a transition (compare-and-set) with its events and webhook event; false when fenced out. */
  readonly write: (previous: ExecutionRecord, transition: T.Transition) => Effect.Effect<boolean>
  /** Inserts a new record with its events; false when its dedupe key was taken. */
  readonly insert: (record: ExecutionRecord, events: ReadonlyArray<T.PlacedEvent>) => Effect.Effect<boolean>
  /** Runs the execution here now (in the background) and leaves a job so another host runs it if this one dies. */
  readonly kick: (id: string) => Effect.Effect<void>
  /** Runs one slice in the calling fiber. */
  readonly runSlice: (id: string) => Effect.Effect<void>
  /** Arms the timer of the record's wait, if it has one. */
  readonly armTimer: (record: ExecutionRecord) => Effect.Effect<void>
  /** A timer job fired. */
  readonly fire: (job: TimerJob) => Effect.Effect<void>
  /** Waits until no slice runs in this process (tests, shutdown). */
  readonly idle: Effect.Effect<void>
}>()("@parley/core/executions/ExecutionEngine") {
  static readonly layer = Layer.effect(
    ExecutionEngine,
    Effect.gen(function*() {
      const repo = yield* ExecutionsRepo
      const events = yield* StepEventsRepo
      const tx = yield* Transactor
      const jobs = yield* JobQueue
      const ids = yield* Ids
      const outbox = yield* Outbox
      const outbound = yield* Outbound
      const configs = yield* MessageConfigsRepo
      const services = yield* Effect.context<NodeServices>()
      const hostId = yield* ids.uuid
      const { crashProbability, doubtGraceMs, leaseMs } = yield* ExecutionsSettings
      const crashPoint = crashProbability <= 0 ? Effect.void : Effect.sync(() => {
        if (Math.random() < crashProbability) process.kill(process.pid, "SIGKILL")
      })
      const fibers = yield* FiberSet.make()
      const graphs = new Map<string, Graph>()

      const graph = (id: string) =>
        Effect.suspend(() => {
          const known = graphs.get(id)
          if (known !== undefined) return Effect.succeed(known)
          return repo.getRevision(id).pipe(
            Effect.map((rev) => {
              const g = makeGraph(Option.match(rev, { onNone: () => ({ nodes: [], edges: [] }), onSome: (r) => r.definition }))
              if (Option.isSome(rev)) graphs.set(id, g)
              return g
            })
          )
        })

      const pinRevision = Effect.fnUntraced(function*(projectId: string, workflowId: string, definition: Definition) {
        const id = revisionId(workflowId, definition)
        if (!graphs.has(id)) {
          const revision: WorkflowRevision = { id, workflow_id: workflowId, project_id: projectId, definition, created_at: new Date(yield* Clock.currentTimeMillis).toISOString() }
          yield* repo.putRevision(revision)
        }
        return id
      })

      const stamp = Effect.fnUntraced(function*(record: ExecutionRecord, placed: ReadonlyArray<T.PlacedEvent>, secrets: ReadonlyArray<string>) {
        const stamped: Array<StepEventRecord> = []
        for (const [index, p] of placed.entries()) {
          stamped.push({
            id: yield* ids.uuid,
            project_id: record.project_id,
            execution_id: record.id,
            seq: record.state_version * 1000 + index,
            event_type: p.draft.event_type,
            direction: p.draft.direction ?? null,
            edge_label: p.draft.edge_label ?? null,
            created_at: record.last_event_at,
            payload: shapePayload(p.draft.payload, secrets) as Record<string, unknown>,
            step: p.node === null ? null : stepRef(record.workflow_id, p.node)
          })
        }
        return stamped
      })

      const webhook = (record: ExecutionRecord, previous: ExecutionRecord | undefined) => {
        if (previous !== undefined && previous.status === record.status) return Effect.void
        const body = T.webhookBody(record, record.last_event_at)
        if (body === undefined) return Effect.void
        return Effect.flatMap(ids.uuid, (id) =>
          outbox.append({ id, project_id: record.project_id, type: body.type, payload: body.body, created_at: record.last_event_at }))
      }

      const writeWith = (previous: ExecutionRecord, transition: T.Transition, secrets: ReadonlyArray<string>) =>
        tx.withTransaction(Effect.gen(function*() {
          const ok = yield* repo.update(transition.record, previous.state_version)
          if (!ok) return false
          yield* events.append(yield* stamp(transition.record, transition.events, secrets))
          yield* webhook(transition.record, previous)
          return true
        }))

      const write = (previous: ExecutionRecord, transition: T.Transition) => writeWith(previous, transition, [])

      const insert = (record: ExecutionRecord, placed: ReadonlyArray<T.PlacedEvent>) =>
        tx.withTransaction(Effect.gen(function*() {
          if (!(yield* repo.insert(record))) return false
          yield* events.append(yield* stamp(record, placed, []))
          return true
        }))

      const armTimer = (record: ExecutionRecord) => {
        const wait = record.wait
        if (wait === null || wait.due_at === null) return Effect.void
        const job: TimerJob = { id: record.id, seq: wait.seq }
        return jobs.enqueue(TIMER_QUEUE, job, { runAt: Date.parse(wait.due_at), dedupeKey: `timer:${record.id}:${wait.seq}` }).pipe(Effect.asVoid)
      }

      const now = Effect.map(Clock.currentTimeMillis, (ms) => ({ ms, iso: new Date(ms).toISOString() }))

      /** Takes (or renews) the lease; None when another live host holds it or the run is not `running`. */
      const claim = Effect.fnUntraced(function*(record: ExecutionRecord) {
        const t = yield* now
        if (record.status !== "running") return Option.none<ExecutionRecord>()
        const held = record.lease_owner !== null && record.lease_owner !== hostId && record.lease_until !== null && Date.parse(record.lease_until) > t.ms
        if (held) return Option.none<ExecutionRecord>()
        const leased: ExecutionRecord = {
          ...record,
          lease_owner: hostId,
          lease_until: new Date(t.ms + leaseMs).toISOString(),
          state_version: record.state_version + 1
        }
        return (yield* repo.update(leased, record.state_version)) ? Option.some(leased) : Option.none<ExecutionRecord>()
      })

      /** Keeps the lease on every checkpoint of a slice. */
      const leased = (t: T.Transition, ms: number): T.Transition =>
        t.record.status === "running" && t.record.wait === null
          ? { ...t, record: { ...t.record, lease_owner: hostId, lease_until: new Date(ms + leaseMs).toISOString() } }
          : t

      /** The pending send: settle what is known, send what never left. */
      const perform = Effect.fnUntraced(function*(record: ExecutionRecord, g: Graph, t: { ms: number; iso: string }) {
        const pending = record.pending!
        const node = g.node(pending.node_id)!
        const recorded = yield* outbound.findRecorded(record.project_id, pending.message_id)
        const performed = (networkId: string, conversationId: string, contactId: string) =>
          T.leave(
            {
              ...record,
              msg_conversation_id: record.msg_conversation_id ?? conversationId,
              contact_id: record.contact_id ?? contactId
            },
            g,
            node,
            "next",
            record.execution_context,
            t.iso,
            t.ms - Date.parse(pending.started_at),
            [{
              draft: {
                event_type: "action_performed",
                payload: { action: node.data.node_type, message_id: networkId, to: pending.to, phone_number_id: pending.envelope.phone_number_id ?? null },
                direction: "outbound"
              },
              node
            }]
          )
        if (Option.isSome(recorded)) {
          const m = recorded.value
          if (m.network_id !== null) return performed(m.network_id, m.conversation_id, m.contact_id)
          if (m.status === "failed") {
            return T.fail(record, g, { message: "The network refused the message" }, t.iso, [
              { event_type: "action_failed", payload: { action: node.data.node_type, error: { message: "The network refused the message" } } }
            ])
          }
          // Recorded, no answer known: in doubt. Never sent again; the network's status reports may still settle it.
          const config = yield* configs.findById(record.project_id, pending.msg_config_id)
          const settled = Option.isSome(config)
            ? yield* outbound.settleFromReports(config.value, m, pending.key, pending.started_at)
            : Option.none()
          if (Option.isSome(settled) && settled.value.network_id !== null) {
            return performed(settled.value.network_id, settled.value.conversation_id, settled.value.contact_id)
          }
          if (t.ms - Date.parse(pending.started_at) < doubtGraceMs) {
            return T.apply(record, g, node, {
              context: record.execution_context,
              events: [],
              next: {
                _tag: "Park",
                reason: null,
                wait: { kind: "doubt", seq: record.step_seq, node_id: node.id, due_at: new Date(Date.parse(pending.started_at) + doubtGraceMs).toISOString(), timeout_seconds: null }
              }
            }, t.iso, 0)
          }
          return T.fail(record, g, { message: "The send's outcome is unknown after a restart; it was not sent again", code: "send_in_doubt" }, t.iso, [
            { event_type: "action_failed", payload: { action: node.data.node_type, error: { message: "outcome unknown", code: "send_in_doubt" } } }
          ])
        }
        const config = yield* configs.findById(record.project_id, pending.msg_config_id)
        if (Option.isNone(config) || config.value.deleted_at !== null) {
          return T.fail(record, g, { message: "No sender number" }, t.iso)
        }
        const outcome = yield* outbound.send(config.value, pending.envelope as Record<string, unknown>, {
          origin: "api",
          messageId: pending.message_id
        })
        yield* crashPoint
        const after = yield* now
        switch (outcome._tag) {
          case "Accepted": {
            const m = Option.getOrUndefined(outcome.message)
            return performed(outcome.networkId ?? "", m?.conversation_id ?? "", m?.contact_id ?? "")
          }
          case "OutsideWindow":
            return T.fail(record, g, { message: "Re-engagement message: the 24-hour window is closed", code: "131047" }, after.iso, [
              { event_type: "action_failed", payload: { action: node.data.node_type, error: { message: "Re-engagement message", code: "131047" } } }
            ])
          default: {
            const message = outcome._tag === "Refused" ? outcome.error.message : outcome._tag === "Unavailable" ? "The network could not be reached" : "The media belongs to another business account"
            const code = outcome._tag === "Refused" ? String(outcome.error.code) : undefined
            return T.fail(record, g, { message, code }, after.iso, [
              { event_type: "action_failed", payload: { action: node.data.node_type, error: { message, ...(code !== undefined ? { code } : {}) } } }
            ])
          }
        }
      })

      /** One step of a claimed, running record: the transition to write. */
      const step = Effect.fnUntraced(function*(record: ExecutionRecord, g: Graph) {
        const t = yield* now
        if (record.pending !== null) return { transition: yield* perform(record, g, t), secrets: [] as ReadonlyArray<string> }
        const node = record.current_node === null ? undefined : g.node(record.current_node)
        if (node === undefined) return { transition: T.end(record, g, "completed", t.iso), secrets: [] }
        const afterDelay = record.wait?.kind === "delay"
        const outcome: StepOutcome = yield* runNode({
          execution: { ...record, wait: null },
          graph: g,
          node,
          secrets: new Map(),
          now: t.iso,
          afterDelay
        }).pipe(
          Effect.provideContext(services),
          Effect.catchTag("StepFailed", (e) => Effect.succeed<StepOutcome>({
            context: record.execution_context,
            events: e.events ?? [],
            next: { _tag: "Fail", message: e.message, code: e.code }
          }))
        )
        const done = yield* now
        if (outcome.next._tag === "Perform") {
          const pending = { ...outcome.next.pending, message_id: yield* ids.uuid }
          return {
            transition: T.apply({ ...record, wait: null }, g, node, { ...outcome, next: { _tag: "Perform", pending } }, done.iso, 0),
            secrets: outcome.secrets ?? []
          }
        }
        return { transition: T.apply({ ...record, wait: null }, g, node, outcome, done.iso, done.ms - t.ms), secrets: outcome.secrets ?? [] }
      })

      const slice = Effect.fn("ExecutionEngine.runSlice")(function*(id: string) {
        const found = yield* repo.get(id)
        if (Option.isNone(found)) return
        const claimed = yield* claim(found.value)
        if (Option.isNone(claimed)) return
        let record = claimed.value
        const g = yield* graph(record.revision_id)
        for (let steps = 0;; steps++) {
          const t = yield* now
          if (record.status !== "running") return
          if (record.wait !== null && (record.wait.due_at === null || Date.parse(record.wait.due_at) > t.ms)) {
            // Parked on a timer (delay, doubt): hand the lease back; the timer brings it back.
            yield* writeWith(record, { record: { ...record, lease_owner: null, lease_until: null, state_version: record.state_version + 1 }, events: [] }, [])
            return yield* armTimer(record)
          }
          const { secrets, transition } = steps >= STEP_LIMIT
            ? { transition: T.fail(record, g, { message: "Step limit exceeded" }, t.iso), secrets: [] }
            : yield* step(record, g)
          const next = leased(transition, t.ms)
          if (!(yield* writeWith(record, next, secrets))) return yield* Effect.fail(new Fenced())
          yield* crashPoint
          record = next.record
          if (record.wait !== null && record.wait.due_at !== null) yield* armTimer(record)
        }
      }, (effect) => effect.pipe(Effect.catchTag("Fenced", () => Effect.void)))

      // One slice per execution in this process: the lease fences other hosts, not this host's own fibers (a kick and
      // its job both land here). A second caller asks the running slice to go round once more and waits for it, so a
      // job completes only once the work it stands for is done.
      const active = new Map<string, { again: boolean; readonly done: Deferred.Deferred<void> }>()
      const runSlice = (id: string): Effect.Effect<void> =>
        Effect.suspend(() => {
          const running = active.get(id)
          if (running !== undefined) {
            running.again = true
            return Deferred.await(running.done)
          }
          const entry = { again: false, done: Deferred.makeUnsafe<void>() }
          active.set(id, entry)
          const loop: Effect.Effect<void> = Effect.suspend(() => {
            entry.again = false
            return Effect.andThen(slice(id), Effect.suspend(() => (entry.again ? loop : Effect.void)))
          })
          return loop.pipe(Effect.ensuring(Effect.suspend(() => {
            active.delete(id)
            return Deferred.succeed(entry.done, undefined)
          })))
        })

      const kick = (id: string) =>
        Effect.gen(function*() {
          // The job is the durability: if this process dies mid-slice, another host runs it.
          yield* jobs.enqueue(RUN_QUEUE, { id }, { dedupeKey: `run:${id}` })
          yield* FiberSet.run(fibers, runSlice(id).pipe(
            Effect.catchCause((cause) => Effect.logError("An execution slice failed", cause))
          ))
        })

      const fire = Effect.fn("ExecutionEngine.fire")(function*(job: TimerJob) {
        const found = yield* repo.get(job.id)
        if (Option.isNone(found)) return
        const record = found.value
        if (record.wait === null || record.wait.seq !== job.seq || isTerminal(record.status)) return
        if (record.status === "waiting" && record.wait.kind === "wait_for_response") {
          const g = yield* graph(record.revision_id)
          const t = yield* now
          const resumed = T.resume(record, g, { value: undefined, reason: "timeout", source: "timeout", kind: "timeout", messageIds: [] }, t.iso)
          if (yield* write(record, resumed)) yield* runSlice(record.id)
          return
        }
        if (record.status === "running") yield* runSlice(record.id)
      })

      const idle: Effect.Effect<void> = FiberSet.awaitEmpty(fibers)

      return ExecutionEngine.of({ hostId, graph, pinRevision, write, insert, kick, runSlice, armTimer, fire, idle })
    })
  )
}

