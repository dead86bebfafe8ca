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
 *
 * Webhook requests are never retried either (10.4): the node checkpoints a
 * `webhook` pending action first, and only the slice that wrote it makes the
 * request (the lease kept anyone else off the step meanwhile). A slice that
 * finds one it did not write (the host that wrote it died) cannot know
 * whether the request left, and fails the step as in doubt.
 */
import { Clock, Config, Context, Data, Deferred, Effect, FiberSet, Layer, Metric, Option, Schema, type Tracer } from "effect"
import { Outbound } from "../messaging/Outbound.ts"
import { ExecutionInputsRepo, ExecutionsRepo, StepEventsRepo } from "./ExecutionsRepo.ts"
import { JobQueue } from "../ports/JobQueue.ts"
import { type MessageConfigRecord, phoneDigits } from "../messaging/numbers/MessageConfig.ts"
import { Messaging } from "../messaging/Messaging.ts"
import { Outbox } from "../ports/Outbox.ts"
import { Transactor } from "../ports/Transactor.ts"
import { StoredWorkflows } from "../workflows/StoredWorkflows.ts"
import { revisionId } from "../workflows/Revision.ts"
import { ProjectSecrets, type ProjectSecretsUnreadable } from "../projects/ProjectSecrets.ts"
import { Ids } from "../shared/Ids.ts"
import type { Definition, Node } from "../workflows/Workflow.ts"
import {
  type ExecutionRecord,
  isTerminal,
  type PendingAgentTool,
  type PendingSend,
  type PendingWebhook,
  stepRef,
  takesInput,
  type StepEventRecord,
  type WorkflowRevision
} from "./Execution.ts"
import { type Graph, makeGraph } from "./Graph.ts"
import type { Secrets } from "./Interpolation.ts"
import { batchMessageIds, batchValue } from "./Inputs.ts"
import { RouteLocks } from "./RouteLocks.ts"
import { maskSecrets, shapePayload } from "./StepLog.ts"
import { callWebhook, type NodeServices, runNode } from "./Nodes.ts"
import type { EndReason, Spawn, StepFailed, StepOutcome } from "./Step.ts"
import { newExecution } from "./NewExecution.ts"
import * as ExecutionTelemetry from "./ExecutionTelemetry.ts"
import * as T from "./Transitions.ts"
import { afterSend, performTool } from "./agent/Agent.ts"
import { withAiValues } from "./ai/AiFields.ts"

export const RUN_QUEUE = "executions.run"
export const RunJob = Schema.Struct({ id: Schema.String })
export type RunJob = typeof RunJob.Type
export const TIMER_QUEUE = "executions.timer"
/** A wait's timer: the run and the wait it was armed for. */
export const TimerJob = Schema.Struct({ id: Schema.String, seq: Schema.Finite })
export type TimerJob = typeof TimerJob.Type
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

export interface KickOptions {
  readonly leased: boolean
  /**
   * The caller's `write` or `insert` of the run has committed: the slice starts from the record written instead of
   * reading it back (a round trip per start and resume).
   */
  readonly committed?: boolean | undefined
  /**
   * The run's number as its starter read it a moment ago (with `committed`): the slice's first step sends from it
   * without reading it again (a round trip before an API start's first send).
   */
  readonly sender?: MessageConfigRecord | null | undefined
}

/** Records written by `write`/`insert` a moment ago, kept for the kick that follows their commit (a bound on memory). */
const WRITTEN_MAX = 10_000

/** What one step writes: the transition, the secrets its events may hold, the child it creates. */
interface StepResult {
  readonly transition: T.Transition
  readonly secrets: ReadonlyArray<string>
  readonly spawn?: Spawn | undefined
  /** Queued inputs the step consumed: taken in the checkpoint's transaction. */
  readonly take?: ReadonlyArray<string> | undefined
  /** A send's number as its node read it (`Next` `Perform`). */
  readonly sender?: MessageConfigRecord | undefined
}

/** The pending action a slice recorded (its to perform right away), and a send's number as its node read it. */
interface Fresh {
  readonly key: string
  readonly sender?: MessageConfigRecord | undefined
}

/** A transition to write, with the stamped events of the steps before it that were not written on their own. */
type Checkpoint = T.Transition & { readonly carried?: ReadonlyArray<StepEventRecord> | undefined }

/** The checkpoint lost its compare-and-set: another host owns the run now. */
class Fenced extends Data.TaggedError("Fenced")<{}> {}


export class ExecutionEngine extends Context.Service<ExecutionEngine, {
  /** This host's id (lease owner). */
  readonly hostId: string
  /** The graph of a revision (remembered: revisions never change). */
  readonly graph: (revisionId: string) => Effect.Effect<Graph>
  /**
   * Stores the revision of a definition if new; answers its id. Call inside the start's transaction. `lockVersion`:
   * the workflow's, when `definition` is its current one (its revision id is then remembered per version: hashing a
   * definition's canonical form costs more than the rest of a start's host work).
   */
  readonly pinRevision: (projectId: string, workflowId: string, definition: Definition, lockVersion?: number) => Effect.Effect<string>
  /**
   * Writes a transition (compare-and-set) with its events and webhook event; false when fenced out. A run it moves
   * from another status to running is leased to this host (the caller runs it here next). `joined`: the caller's
   * transaction holds the write, which then opens no savepoint of its own (a fenced write writes nothing to undo).
   */
  readonly write: (previous: ExecutionRecord, transition: T.Transition, options?: { readonly joined?: boolean }) => Effect.Effect<boolean>
  /**
   * Inserts a new record with its events; false when its dedupe key was taken. Runs in its caller's transaction
   * (`Launcher.launch`'s, which undoes the rest when it fails): a savepoint of its own cost a round trip per start.
   */
  readonly insert: (record: ExecutionRecord, events: ReadonlyArray<T.PlacedEvent>) => Effect.Effect<boolean>
  /**
   * Runs the execution here now (in the background) and leaves a job so another host runs it if this one dies; no
   * job for a run `leased` to this host (a start's insert, a resume's `write`): no other host could take it before
   * its lease ends, and the sweep recovers it then.
   */
  readonly kick: (id: string, options?: KickOptions) => Effect.Effect<void>
  /** Runs one slice in the calling fiber. */
  readonly runSlice: (id: string) => Effect.Effect<void>
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
      const messaging = yield* Messaging
      const workflows = yield* StoredWorkflows
      const projectSecrets = yield* ProjectSecrets
      const inputs = yield* ExecutionInputsRepo
      const locks = yield* RouteLocks
      const services = yield* Effect.context<NodeServices>()
      const hostId = yield* ids.uuid
      const { crashProbability, doubtGraceMs, leaseMs } = yield* ExecutionsSettings
      const crashPoint = crashProbability <= 0 ? Effect.void : Effect.sync(() => {
        if (Math.random() < crashProbability) process.kill(process.pid, "SIGKILL")
      })
      const fibers = yield* FiberSet.make()
      // Slices fork with the engine's own context, never the caller's: a kick made inside a transaction (a routed
      // start) must not hand that transaction's connection to a slice that outlives it.
      const forkSlice = yield* FiberSet.runtime(fibers)<never>()
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

      /** Revision ids of current definitions by `workflowId:lockVersion` (every save of a definition bumps the version). */
      const currentRevisions = new Map<string, string>()
      const revisionOf = (workflowId: string, definition: Definition, lockVersion: number | undefined) => {
        if (lockVersion === undefined) return revisionId(workflowId, definition)
        const key = `${workflowId}:${lockVersion}`
        const known = currentRevisions.get(key)
        if (known !== undefined) return known
        const id = revisionId(workflowId, definition)
        if (currentRevisions.size >= 1_000) currentRevisions.clear()
        currentRevisions.set(key, id)
        return id
      }

      const pinRevision = Effect.fnUntraced(function*(projectId: string, workflowId: string, definition: Definition, lockVersion?: number) {
        const id = revisionOf(workflowId, definition, lockVersion)
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

      /** A `call` node's child, inserted with its parent's checkpoint (decisions 2.3.11). */
      const spawnChild = Effect.fnUntraced(function*(spawn: Spawn, parent: ExecutionRecord, at: string) {
        const w = spawn.launch.workflow
        const revision = yield* pinRevision(w.project_id, w.id, w.definition, w.lock_version)
        const g = yield* graph(revision)
        const child = newExecution({ ...spawn.launch, parent }, { id: spawn.id, trackingId: spawn.trackingId }, at, revision, g)
        if (!(yield* repo.insert(child.record))) return false
        yield* Metric.update(ExecutionTelemetry.started({ trigger: child.record.trigger_type }), 1)
        yield* events.append(yield* stamp(child.record, child.events, []))
        yield* workflows.countExecution(w.project_id, w.id, at)
        return true
      })

      /** The reason an `execution_ended` event of the transition gives, if it has one. */
      const endReasonOf = (transition: T.Transition): EndReason => {
        const ended = transition.events.find((p) => p.draft.event_type === "execution_ended")
        return (ended?.draft.payload.reason as EndReason | undefined) ?? "completed"
      }

      /** The pair of a routed run that ends: inputs queued for it and never taken must not feed the pair's next run. */
      const endingPair = (previous: ExecutionRecord, r: ExecutionRecord) =>
        isTerminal(r.status) && !isTerminal(previous.status) && !r.observer && r.msg_config_id !== null && r.contact_id !== null
          ? { configId: r.msg_config_id, contactId: r.contact_id }
          : undefined

      /**
       * The checkpoint's writes, inside the caller's transaction: the record (compare-and-set), its events, its webhook
       * event, the child it spawns, the move its parent makes when a `call` child's state changed, and the queued
       * inputs of a routed pair whose run ended. `kicks` collects the runs to start once the transaction committed (a
       * spawned child, a parent that left its call).
       */
      const writeIn = (
        previous: ExecutionRecord,
        transition: Checkpoint,
        secrets: ReadonlyArray<string>,
        kicks: Array<string>,
        spawn?: Spawn | undefined
      ): Effect.Effect<boolean> =>
        Effect.gen(function*() {
          const pair = endingPair(previous, transition.record)
          // The route lock before the row, in the order routing takes them.
          if (pair !== undefined) yield* locks.lock(pair.configId, pair.contactId)
          const ok = yield* repo.checkpoint(transition.record, previous.state_version, [
            ...(transition.carried ?? []),
            ...(yield* stamp(transition.record, transition.events, secrets))
          ])
          if (!ok) return false
          if (isTerminal(transition.record.status) && !isTerminal(previous.status)) {
            yield* Metric.update(ExecutionTelemetry.ended({ status: transition.record.status, trigger: transition.record.trigger_type }), 1)
          }
          // Another run still owning the pair (an older one ended) keeps them.
          if (pair !== undefined) yield* inputs.dropQueuedIfUnowned(pair.configId, pair.contactId)
          yield* webhook(transition.record, previous)
          if (spawn !== undefined && (yield* spawnChild(spawn, previous, transition.record.last_event_at))) kicks.push(spawn.id)
          const child = transition.record
          if (
            child.parent_execution_id !== null &&
            (child.status !== previous.status || child.resumable_execution_id !== previous.resumable_execution_id)
          ) yield* moveParent(child, endReasonOf(transition), kicks)
          // A parent ended or failed while its call ran (PATCH, workflow deleted): its child does not run on alone.
          const callee = previous.wait?.kind === "call" ? previous.wait.child_id : undefined
          if (callee !== undefined && isTerminal(transition.record.status)) yield* endChild(callee, endReasonOf(transition), kicks)
          return true
        })

      const endChild = (id: string, reason: EndReason, kicks: Array<string>): Effect.Effect<void> =>
        Effect.gen(function*() {
          for (let attempt = 0; attempt < 5; attempt++) {
            const found = yield* repo.get(id)
            if (Option.isNone(found) || isTerminal(found.value.status)) return
            const ended = T.end(found.value, yield* graph(found.value.revision_id), reason, (yield* now).iso)
            if (yield* writeIn(found.value, ended, [], kicks)) return
          }
        })

      /** The parent of a `call` child follows it (`T.followChild`), in the child's transaction; retried when raced. */
      const moveParent = (child: ExecutionRecord, reason: EndReason, kicks: Array<string>): Effect.Effect<void> =>
        Effect.gen(function*() {
          for (let attempt = 0; attempt < 5; attempt++) {
            const found = yield* repo.get(child.parent_execution_id!)
            if (Option.isNone(found)) return
            const parent = found.value
            if (isTerminal(parent.status) || parent.wait?.kind !== "call" || parent.wait.child_id !== child.id) return
            const moved = T.followChild(parent, yield* graph(parent.revision_id), child, reason, (yield* now).iso)
            if (moved === undefined) return
            if (yield* writeIn(parent, moved, [], kicks)) {
              if (moved.record.status === "running" && moved.record.wait === null) kicks.push(parent.id)
              return
            }
          }
          yield* Effect.logWarning("A call's parent kept changing while its child moved; its next slice looks again").pipe(
            Effect.annotateLogs({ execution_id: child.parent_execution_id, child_id: child.id })
          )
        })

      /** A checkpoint `writeIn` would write nothing beside (no webhook event, pair, child or parent to move). */
      const alone = (previous: ExecutionRecord, r: ExecutionRecord, spawn: Spawn | undefined) =>
        spawn === undefined && r.status === previous.status && r.resumable_execution_id === previous.resumable_execution_id &&
        previous.wait?.kind !== "call"

      const writeWith = (
        previous: ExecutionRecord,
        transition: Checkpoint,
        secrets: ReadonlyArray<string>,
        spawn?: Spawn | undefined,
        joined = false
      ) =>
        Effect.gen(function*() {
          // One statement, atomic on its own: no transaction, one round trip.
          if (alone(previous, transition.record, spawn)) {
            return yield* repo.checkpoint(transition.record, previous.state_version, [
              ...(transition.carried ?? []),
              ...(yield* stamp(transition.record, transition.events, secrets))
            ])
          }
          const kicks: Array<string> = []
          const writing = writeIn(previous, transition, secrets, kicks, spawn)
          const ok = yield* (joined ? writing : tx.withTransaction(writing))
          // The records are the durability (running, no lease: any host recovers them); the kick is for speed.
          if (ok) yield* Effect.forEach(kicks, (id) => kick(id), { discard: true })
          return ok
        })

      // The runnable records `write` and `insert` wrote, until the kick after their commit takes them (`KickOptions`).
      const written = new Map<string, ExecutionRecord>()
      const remember = (record: ExecutionRecord) => {
        if (record.status !== "running" || record.lease_owner !== hostId) return
        if (written.size >= WRITTEN_MAX) written.clear()
        written.set(record.id, record)
      }

      // A run this host resumes runs here next (its kick, a timer's slice): leased to it already, that slice writes no claim.
      const write = (previous: ExecutionRecord, transition: T.Transition, options?: { readonly joined?: boolean }) =>
        Effect.gen(function*() {
          const next = previous.status === "running" ? transition : leased(transition, yield* Clock.currentTimeMillis)
          const ok = yield* writeWith(previous, next, [], undefined, options?.joined === true)
          if (ok) remember(next.record)
          return ok
        })

      const insert = (record: ExecutionRecord, placed: ReadonlyArray<T.PlacedEvent>) =>
        Effect.gen(function*() {
          // Leased to this host from the start: the slice its kick runs here needs no claim (a write) of its own.
          const owned = record.status === "running" ? leased({ record, events: [] }, yield* Clock.currentTimeMillis).record : record
          if (!(yield* repo.insert(owned))) return false
          yield* Metric.update(ExecutionTelemetry.started({ trigger: record.trigger_type }), 1)
          yield* events.append(yield* stamp(record, placed, []))
          remember(owned)
          return true
        })

      /** `withinTransaction`: the timer commits with the checkpoint that waits (on PostgreSQL, no round trip of its own). */
      const armTimer = (record: ExecutionRecord, withinTransaction?: boolean) => {
        const wait = record.wait
        if (wait === null || wait.due_at === null) return Effect.void
        const job: TimerJob = { id: record.id, seq: wait.seq }
        return jobs.enqueue(TIMER_QUEUE, job, {
          runAt: Date.parse(wait.due_at),
          dedupeKey: `timer:${record.id}:${wait.seq}`,
          withinTransaction
        }).pipe(Effect.asVoid)
      }

      // A step reads the time three times, mostly within one millisecond: its text is formatted once per millisecond.
      let lastMs = Number.NaN
      let lastIso = ""
      const now = Effect.map(Clock.currentTimeMillis, (ms) => {
        if (ms !== lastMs) {
          lastIso = new Date(ms).toISOString()
          lastMs = ms
        }
        return { ms, iso: lastIso }
      })

      /** Takes (or renews) the lease; None when another live host holds it or the run is not `running`. */
      const claim = Effect.fnUntraced(function*(record: ExecutionRecord) {
        const t = yield* now
        if (record.status !== "running") return Option.none<ExecutionRecord>()
        const held = record.lease_owner !== null && record.lease_owner !== hostId && record.lease_until !== null && Date.parse(record.lease_until) > t.ms
        if (held) return Option.none<ExecutionRecord>()
        // Still ours for a while (taken at insert or by the last checkpoint): nothing to write, and every checkpoint's
        // compare-and-set fences as before.
        if (record.lease_owner === hostId && record.lease_until !== null && Date.parse(record.lease_until) - t.ms > leaseMs / 2) {
          return Option.some(record)
        }
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

      /**
       * The pending send: settle what is known, send what never left. `fresh`: this slice recorded it itself, so nothing
       * can be recorded under its new message id yet (no lookup).
       */
      const perform = Effect.fn("ExecutionEngine.send")(function*(
        record: ExecutionRecord,
        g: Graph,
        t: { ms: number; iso: string },
        pending: PendingSend,
        fresh: boolean,
        sender?: MessageConfigRecord
      ) {
        yield* ExecutionTelemetry.annotatePending(record, pending)
        const node = g.node(pending.node_id)!
        const recorded = fresh ? Option.none() : yield* outbound.findRecorded(record.project_id, pending.message_id)
        // An agent's send settles its tool call (or its text) and the run stays on the agent node (decisions 10.6).
        const agentSettled = (at: string, outcome: Parameters<typeof afterSend>[2], withRecord: ExecutionRecord = record) =>
          T.apply(withRecord, g, node, afterSend(withRecord, pending, outcome), at, t.ms - Date.parse(pending.started_at))
        // `phoneNumberId`: the sender's network number id, as the recorded message or the config has it (6.8).
        const performed = (networkId: string, conversationId: string, contactId: string, phoneNumberId: string | null) =>
          pending.agent !== undefined
            ? agentSettled(t.iso, { messageId: networkId }, {
              ...record,
              msg_conversation_id: record.msg_conversation_id ?? conversationId,
              contact_id: record.contact_id ?? contactId
            })
            : T.leave(
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
                payload: { action: node.data.node_type, message_id: networkId, to: pending.to, phone_number_id: phoneNumberId },
                direction: "outbound"
              },
              node
            }]
          )
        if (Option.isSome(recorded)) {
          const m = recorded.value
          if (m.network_id !== null) return performed(m.network_id, m.conversation_id, m.contact_id, m.phone_number_id)
          if (m.status === "failed") {
            if (pending.agent !== undefined) return agentSettled(t.iso, { error: "The network refused the message" })
            return T.fail(record, g, { message: "The network refused the message" }, t.iso, [
              { event_type: "action_failed", payload: { action: node.data.node_type, error: { message: "The network refused the message" } } }
            ])
          }
          // Recorded, no answer known: in doubt. Never sent again; the network's status reports may still settle it.
          const config = yield* messaging.findNumber(record.project_id, pending.msg_config_id)
          const settled = Option.isSome(config)
            ? yield* outbound.settleFromReports(config.value, m, pending.key, pending.started_at)
            : Option.none()
          if (Option.isSome(settled) && settled.value.network_id !== null) {
            return performed(settled.value.network_id, settled.value.conversation_id, settled.value.contact_id, settled.value.phone_number_id)
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
          if (pending.agent !== undefined) {
            return agentSettled(t.iso, { error: "Unverified: a restart interrupted this send and whether it left is unknown; it was not sent again", code: "send_in_doubt" })
          }
          return T.fail(record, g, { message: "The send's outcome is unknown after a restart; it was not sent again", code: "send_in_doubt" }, t.iso, [
            { event_type: "action_failed", payload: { action: node.data.node_type, error: { message: "outcome unknown", code: "send_in_doubt" } } }
          ])
        }
        // Recorded by this slice: the number its node read a moment ago (no second read).
        const config = fresh && sender?.id === pending.msg_config_id
          ? Option.some(sender)
          : yield* messaging.findNumber(record.project_id, pending.msg_config_id)
        if (Option.isNone(config) || config.value.deleted_at !== null) {
          if (pending.agent !== undefined) return agentSettled(t.iso, { error: "No sender number" })
          return T.fail(record, g, { message: "No sender number" }, t.iso)
        }
        // To the run's own contact (its phone number in the context): recording reads its conversation beside it.
        const phone = record.execution_context.context["phone_number"]
        const ownContact = typeof phone === "string" && phoneDigits(phone) === pending.to ? record.contact_id ?? undefined : undefined
        const outcome = yield* outbound.send(config.value, pending.envelope as Record<string, unknown>, {
          origin: "workflow",
          messageId: pending.message_id,
          contactId: ownContact
        })
        yield* crashPoint
        const after = yield* now
        switch (outcome._tag) {
          case "Accepted": {
            const m = Option.getOrUndefined(outcome.message)
            return performed(outcome.networkId ?? "", m?.conversation_id ?? "", m?.contact_id ?? "", config.value.phone_number_id)
          }
          case "OutsideWindow":
            if (pending.agent !== undefined) return agentSettled(after.iso, { error: "Re-engagement message: the 24-hour window is closed", code: "131047" })
            return T.fail(record, g, { message: "Re-engagement message: the 24-hour window is closed", code: "131047" }, after.iso, [
              { event_type: "action_failed", payload: { action: node.data.node_type, error: { message: "Re-engagement message", code: "131047" } } }
            ])
          case "Withheld": {
            // The guardrails' refusal (guardrails/SendPolicy.ts): nothing was recorded or sent.
            const { message, reason: code, until } = outcome.withheld
            if (pending.agent !== undefined) return agentSettled(after.iso, { error: message, code })
            if (until !== null) {
              // Quiet hours: the send waits, unrecorded, until they end; its timer brings the step back to send it.
              return T.apply(record, g, node, {
                context: record.execution_context,
                events: [],
                next: { _tag: "Park", reason: null, wait: { kind: "quiet_hours", seq: record.step_seq, node_id: node.id, due_at: until, timeout_seconds: null } }
              }, after.iso, 0)
            }
            // Opted out or capped: the send is skipped, with its reason, and the run goes on.
            return T.leave(record, g, node, "next", record.execution_context, after.iso, after.ms - Date.parse(pending.started_at), [{
              draft: { event_type: "action_skipped", payload: { action: node.data.node_type, to: pending.to, error: { message, code } }, direction: "outbound" },
              node
            }])
          }
          default: {
            const message = outcome._tag === "Refused" ? outcome.error.message : outcome._tag === "Unavailable" ? "The network could not be reached" : "The media belongs to another business account"
            const code = outcome._tag === "Refused" ? String(outcome.error.code) : undefined
            if (pending.agent !== undefined) return agentSettled(after.iso, { error: message, code })
            return T.fail(record, g, { message, code }, after.iso, [
              { event_type: "action_failed", payload: { action: node.data.node_type, error: { message, ...(code !== undefined ? { code } : {}) } } }
            ])
          }
        }
      })

      /** The project's secrets, decrypted, when the node names one (`${ENV:NAME}`, decisions 2.4.3, 10.5.4). */
      // Whether a node names a secret, once per node of a cached graph: an agent's config (knowledge bases up to
      // 200,000 characters each) is read at every step of its activation.
      const namesSecret = new WeakMap<Node, boolean>()
      const secretsFor = (record: ExecutionRecord, node: Node): Effect.Effect<Secrets, ProjectSecretsUnreadable> => {
        let names = namesSecret.get(node)
        if (names === undefined) namesSecret.set(node, names = JSON.stringify(node.data.config).includes("${ENV:"))
        return names ? projectSecrets.resolve(record.project_id) : Effect.succeed(new Map())
      }

      const unreadable = (record: ExecutionRecord, g: Graph, e: ProjectSecretsUnreadable, now: string) =>
        T.fail(record, g, { message: e.message, code: "secrets_unreadable" }, now)

      const failedStep = (record: ExecutionRecord) => (e: StepFailed) =>
        Effect.succeed<StepOutcome>({
          context: record.execution_context,
          events: e.events ?? [],
          // The message stays beside the log (error_details, the failed webhook event): secrets masked there too.
          next: { _tag: "Fail", message: maskSecrets(e.message, e.secrets ?? []), code: e.code },
          secrets: e.secrets
        })

      /**
       * The pending webhook request: made only by the slice that recorded it (`fresh`), which the lease kept the
       * only one running the step since; anyone else cannot know whether it left, and never makes it again.
       */
      const performWebhook = Effect.fn("ExecutionEngine.webhookNode", { kind: "client" })(function*(
        record: ExecutionRecord,
        g: Graph,
        t: { ms: number; iso: string },
        pending: PendingWebhook,
        fresh: string | undefined
      ) {
        yield* ExecutionTelemetry.annotatePending(record, pending)
        const stored = g.node(pending.node_id)
        const node = stored === undefined ? undefined : withAiValues(stored, pending.ai_values)
        if (node === undefined || pending.key !== fresh) {
          const message = "The webhook request's outcome is unknown after a restart; it was not made again"
          return {
            transition: T.fail(record, g, { message, code: "webhook_in_doubt" }, t.iso, [
              { event_type: "action_failed", payload: { action: "webhook", error: { message, code: "webhook_in_doubt" } } }
            ]),
            secrets: [] as ReadonlyArray<string>
          }
        }
        const secrets = yield* Effect.result(secretsFor(record, node))
        if (secrets._tag === "Failure") return { transition: unreadable(record, g, secrets.failure, t.iso), secrets: [] as ReadonlyArray<string> }
        const outcome: StepOutcome = yield* callWebhook({ execution: record, graph: g, node, secrets: secrets.success, now: t.iso, afterDelay: false }).pipe(
          Effect.catchTag("StepFailed", failedStep(record))
        )
        const done = yield* now
        return { transition: T.apply(record, g, node, outcome, done.iso, done.ms - Date.parse(pending.started_at)), secrets: outcome.secrets ?? [] }
      })

      /** The pending outside tool call of an agent: made by the slice that recorded it, unverified for anyone else. */
      const performAgentTool = Effect.fn("ExecutionEngine.toolCall")(function*(
        record: ExecutionRecord,
        g: Graph,
        t: { ms: number; iso: string },
        pending: PendingAgentTool,
        fresh: string | undefined
      ) {
        yield* ExecutionTelemetry.annotatePending(record, pending)
        const node = g.node(pending.node_id)!
        const secrets = yield* Effect.result(secretsFor(record, node))
        if (secrets._tag === "Failure") return { transition: unreadable(record, g, secrets.failure, t.iso), secrets: [] as ReadonlyArray<string> }
        const input = { execution: record, graph: g, node, secrets: secrets.success, now: t.iso, afterDelay: false }
        const outcome: StepOutcome = yield* performTool(input, pending, pending.key === fresh)
        const done = yield* now
        return { transition: T.apply(record, g, node, outcome, done.iso, done.ms - t.ms), secrets: outcome.secrets ?? [] }
      })

      /** One step of a claimed, running record: the transition to write. `fresh`: the pending key this slice recorded. */
      const step = Effect.fnUntraced(function*(record: ExecutionRecord, g: Graph, fresh: Fresh | undefined, sender: MessageConfigRecord | undefined) {
        const t = yield* now
        if (record.pending !== null) {
          if (record.pending.kind === "webhook") return yield* performWebhook(record, g, t, record.pending, fresh?.key)
          if (record.pending.kind === "agent_tool") return yield* performAgentTool(record, g, t, record.pending, fresh?.key)
          const transition = yield* perform(record, g, t, record.pending, record.pending.key === fresh?.key, fresh?.sender)
          return { transition, secrets: [] as ReadonlyArray<string> }
        }
        const node = record.current_node === null ? undefined : g.node(record.current_node)
        if (node === undefined) return { transition: T.end(record, g, "completed", t.iso), secrets: [] }
        const afterDelay = record.wait?.kind === "delay"
        const secrets = yield* Effect.result(secretsFor(record, node))
        if (secrets._tag === "Failure") return { transition: unreadable(record, g, secrets.failure, t.iso), secrets: [] }
        const outcome: StepOutcome = yield* runNode({
          execution: { ...record, wait: null },
          graph: g,
          node,
          secrets: secrets.success,
          now: t.iso,
          afterDelay,
          sender
        }).pipe(
          Effect.catchTag("StepFailed", failedStep(record))
        )
        const done = yield* now
        if (outcome.next._tag === "Perform") {
          const pending = outcome.next.pending.kind === "send"
            ? { ...outcome.next.pending, message_id: yield* ids.uuid }
            : outcome.next.pending
          return {
            transition: T.apply({ ...record, wait: null }, g, node, { ...outcome, next: { _tag: "Perform", pending } }, done.iso, 0),
            secrets: outcome.secrets ?? [],
            sender: outcome.next.sender
          }
        }
        return {
          transition: T.apply({ ...record, wait: null }, g, node, outcome, done.iso, done.ms - t.ms),
          secrets: outcome.secrets ?? [],
          spawn: outcome.next._tag === "Park" ? outcome.spawn : undefined,
          take: outcome.take
        }
      })

      /**
       * A step whose transition is written with the next checkpoint instead of its own: a start or set_variable node
       * (nothing outside the record: no send, request, call, input or timer) that moved the run on to its next node.
       * A crash before that checkpoint loses it with its successor, and the slice that recovers the run takes it again
       * from the last checkpoint; nobody was told of it meanwhile (decisions of engine.md §6 bullet 20).
       */
      const carries = (before: ExecutionRecord, g: Graph, after: T.Transition, spawn: Spawn | undefined) => {
        const type = before.current_node === null ? undefined : g.node(before.current_node)?.data.node_type
        return (type === "start" || type === "set_variable") && before.pending === null && spawn === undefined &&
          after.record.status === "running" && after.record.wait === null && after.record.pending === null
      }

      /** A parent parked on a call whose child moved without it: the move it missed. */
      const catchUpWithChild = Effect.fnUntraced(function*(parent: ExecutionRecord) {
        const childId = parent.wait?.child_id
        const child = childId === undefined ? Option.none<ExecutionRecord>() : yield* repo.get(childId)
        const g = yield* graph(parent.revision_id)
        const t = yield* now
        if (Option.isNone(child)) return T.fail(parent, g, { message: "The called execution no longer exists", code: "call_failed" }, t.iso)
        return T.followChild(parent, g, child.value, "completed", t.iso)
      })

      /**
       * Writes a step's transition. A run that parks on `wait_for_response` while inbound inputs wait queued for
       * its (number, contact) pair takes them at once instead (decisions 10.1), under the pair's route lock so an
       * input routed meanwhile is either seen here or finds the run waiting.
       */
      const writeStep = (
        previous: ExecutionRecord,
        next: Checkpoint,
        g: Graph,
        secrets: ReadonlyArray<string>,
        ms: number,
        spawn?: Spawn | undefined,
        take: ReadonlyArray<string> = []
      ) => {
        const r = next.record
        const asked = (ok: boolean) => (ok ? Option.some(next) : Option.none<T.Transition>())
        const parks = r.status === "waiting" && takesInput(r.wait) && !r.observer && r.msg_config_id !== null && r.contact_id !== null
        if (take.length > 0) {
          // The inputs the step consumed leave the queue with the checkpoint that journaled them.
          return Effect.map(tx.withTransaction(Effect.gen(function*() {
            const ok = yield* writeIn(previous, next, secrets, [], spawn)
            if (ok) yield* inputs.take(take)
            if (ok) yield* armTimer(r, true)
            return ok
          })), asked)
        }
        if (!parks || r.msg_config_id === null || r.contact_id === null) {
          return Effect.map(
            Effect.tap(writeWith(previous, next, secrets, spawn), (ok) => (ok ? armTimer(r) : Effect.void)),
            asked
          )
        }
        const configId = r.msg_config_id
        const contactId = r.contact_id
        const kicks: Array<string> = []
        return tx.withTransaction(Effect.gen(function*() {
          yield* locks.lock(configId, contactId)
          const queued = yield* inputs.list(configId, contactId, "queued")
          if (queued.length === 0) {
            const ok = yield* writeIn(previous, next, secrets, kicks, spawn)
            if (ok) yield* armTimer(r, true)
            return asked(ok)
          }
          const resumed = leased(T.resume(r, g, {
            value: batchValue(queued),
            reason: "user_input",
            source: "inbound",
            kind: "message",
            messageIds: batchMessageIds(queued)
          }, r.last_event_at), ms)
          const taken: Checkpoint = { record: resumed.record, events: [...next.events, ...resumed.events], carried: next.carried }
          if (!(yield* writeIn(previous, taken, secrets, kicks, spawn))) return Option.none<T.Transition>()
          yield* inputs.take(queued.map((i) => i.id))
          return Option.some(taken)
        })).pipe(
          // Runs the checkpoint made runnable start once it committed.
          Effect.tap((written) => Option.isSome(written) ? Effect.forEach(kicks, (id) => kick(id), { discard: true }) : Effect.void)
        )
      }

      /** `step` in a span of its own (node id and type, the status it left), its duration in the histogram by node type. */
      const observedStep = (record: ExecutionRecord, g: Graph, fresh: Fresh | undefined, startMs: number, sender: MessageConfigRecord | undefined) => {
        const nodeType = (record.current_node === null ? undefined : g.node(record.current_node)?.data.node_type) ?? "none"
        return step(record, g, fresh, sender).pipe(
          Effect.tap((result) =>
            Effect.flatMap(Clock.currentTimeMillis, (ms) =>
              Effect.andThen(
                ExecutionTelemetry.annotateStep(record, nodeType, result.transition.record.status),
                Metric.update(ExecutionTelemetry.stepDuration({ node_type: nodeType }), Math.max(0, ms - startMs) / 1000)
              ))
          ),
          // No call-site stack trace per step: it is the same line every time, and capturing it cost ~3% of the
          // host's CPU on a chain of steps.
          Effect.withSpan("ExecutionEngine.step", undefined, { captureStackTrace: false })
        )
      }

      // A trace of its own per slice, linked to the span that asked for it (a request, the routing of a message).
      // `known`: the record its kick's caller committed (no read back).
      // The nodes' services are provided once per slice: per step, merging them into the fiber's context copied it
      // (about 5% of the host's CPU per step of a chain of `set_variable`).
      const slice = (id: string, links: ReadonlyArray<Tracer.SpanLink>, known: ExecutionRecord | undefined, sender: MessageConfigRecord | undefined) =>
        Effect.withSpan(Effect.provideContext(sliceOf(id, known, sender), services), "ExecutionEngine.runSlice", { root: true, links, captureStackTrace: false })

      const sliceOf = Effect.fnUntraced(function*(id: string, known: ExecutionRecord | undefined, knownSender: MessageConfigRecord | undefined) {
        const found = known !== undefined ? Option.some(known) : yield* repo.get(id)
        if (Option.isNone(found)) return
        const claimed = yield* claim(found.value)
        if (Option.isNone(claimed)) return
        let record = claimed.value
        yield* ExecutionTelemetry.annotateExecution(record)
        let fresh: Fresh | undefined
        // Only until the slice's first checkpoint: what its starter read is not kept for long.
        let sender = known === undefined ? undefined : knownSender
        // The last record written, and the stamped events of the steps taken since (`carries`).
        let durable = record
        let carried: Array<StepEventRecord> = []
        const g = yield* graph(record.revision_id)
        for (let steps = 0;; steps++) {
          const t = yield* now
          if (record.status !== "running") return
          if (record.wait?.kind === "call") {
            // The child's moves reach the parent in the child's own transactions; this catches up if one was missed.
            const moved = yield* catchUpWithChild(record)
            if (moved !== undefined) {
              if (!(yield* writeWith(record, leased(moved, t.ms), []))) return yield* Effect.fail(new Fenced())
              record = leased(moved, t.ms).record
              continue
            }
          }
          if (record.wait !== null && (record.wait.due_at === null || Date.parse(record.wait.due_at) > t.ms)) {
            // Parked on a timer (delay, doubt): hand the lease back; the timer brings it back.
            yield* writeWith(record, { record: { ...record, lease_owner: null, lease_until: null, state_version: record.state_version + 1 }, events: [] }, [])
            return yield* armTimer(record)
          }
          const stepNode = record.current_node
          const result: StepResult = steps >= STEP_LIMIT
            ? { transition: T.fail(record, g, { message: "Step limit exceeded" }, t.iso), secrets: [] }
            : yield* observedStep(record, g, fresh, t.ms, sender)
          const { secrets, spawn, take, transition } = result
          if (steps < STEP_LIMIT && carries(record, g, transition, spawn)) {
            // The lease is renewed by the checkpoint that writes the carried steps, not by each of them.
            carried.push(...(yield* stamp(transition.record, transition.events, secrets)))
            record = transition.record
            continue
          }
          const moved = leased(transition, t.ms)
          if (spawn !== undefined && carried.length > 0) {
            // A call's child starts from its parent's record as written: the carried steps first.
            record = leased({ record, events: [] }, t.ms).record
            if (!(yield* writeWith(durable, { record, events: [], carried }, []))) return yield* Effect.fail(new Fenced())
            durable = record
            carried = []
          }
          const written = yield* writeStep(durable, { ...moved, carried }, g, secrets, t.ms, spawn, take)
          if (Option.isNone(written)) return yield* Effect.fail(new Fenced())
          sender = undefined
          yield* crashPoint
          const next = written.value
          // A pending action this slice recorded is this slice's to perform, right away.
          fresh = next.record.pending !== null && record.pending === null ? { key: next.record.pending.key, sender: result.sender } : undefined
          record = durable = next.record
          carried = []
          // An agent's own steps are bounded by its max_iterations (decisions 10.6), not by the step limit.
          if (record.agent !== null && record.current_node === stepNode) steps--
        }
      }, (effect) => effect.pipe(Effect.catchTag("Fenced", () => Effect.void)))

      // One slice per execution in this process: the lease fences other hosts, not this host's own fibers (a kick and
      // its job both land here). A second caller asks the running slice to go round once more and waits for it, so a
      // job completes only once the work it stands for is done.
      const active = new Map<string, { again: boolean; readonly done: Deferred.Deferred<void> }>()
      const runSlice = (
        id: string,
        links: ReadonlyArray<Tracer.SpanLink> = [],
        known?: ExecutionRecord,
        knownSender?: MessageConfigRecord
      ): Effect.Effect<void> =>
        Effect.suspend(() => {
          const running = active.get(id)
          if (running !== undefined) {
            running.again = true
            return Deferred.await(running.done)
          }
          const entry = { again: false, done: Deferred.makeUnsafe<void>() }
          active.set(id, entry)
          let first = known
          const loop: Effect.Effect<void> = Effect.suspend(() => {
            entry.again = false
            const from = first
            first = undefined
            return Effect.andThen(slice(id, links, from, from === undefined ? undefined : knownSender), Effect.suspend(() => (entry.again ? loop : Effect.void)))
          })
          return loop.pipe(Effect.ensuring(Effect.suspend(() => {
            active.delete(id)
            return Deferred.succeed(entry.done, undefined)
          })))
        })

      const kick = (id: string, options?: KickOptions) =>
        Effect.gen(function*() {
          const known = written.get(id)
          written.delete(id)
          // The slice starts first, the job's round trip beside it. The job is the durability of an unleased run: if
          // this process dies mid-slice, another host runs it.
          const caller = yield* Effect.option(Effect.currentSpan)
          const links = Option.isSome(caller) ? [ExecutionTelemetry.triggerLink(caller.value)] : []
          forkSlice(
            runSlice(id, links, options?.committed === true ? known : undefined, options?.sender ?? undefined).pipe(
              Effect.catchCause((cause) => Effect.logError("An execution slice failed", cause))
            )
          )
          if (options?.leased !== true) yield* jobs.enqueue(RUN_QUEUE, { id } satisfies RunJob, { dedupeKey: `run:${id}` })
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
          if (yield* write(record, resumed)) {
            const known = written.get(record.id)
            written.delete(record.id)
            yield* runSlice(record.id, [], known)
          }
          return
        }
        if (record.status === "running") yield* runSlice(record.id)
      })

      const idle: Effect.Effect<void> = FiberSet.awaitEmpty(fibers)

      return ExecutionEngine.of({ hostId, graph, pinRevision, write, insert, kick, runSlice: (id) => runSlice(id), fire, idle })
    })
  )
}

