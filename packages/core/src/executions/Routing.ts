/**
 * Inbound routing (decisions 10.1, 10.2, 10.3): what an inbound message
 * does once messaging recorded it. Each `msg.message.received` domain event
 * (relayed to the `executions-routing` subscriber, so a restart loses none)
 * starts the number's observers, then joins the debounce batch of its
 * (number, contact) pair; the released batch goes, oldest first, to the
 * pair's owner: a `waiting` run (wait_for_response) resumes with it, a
 * `running` one gets it queued for its next wait point (`Engine.ts` takes
 * queued inputs when a run parks), a `handoff` blocks it; with no owner an
 * active `inbound_message` trigger of an active workflow on the number
 * starts a run with it as `vars.last_user_input`; else nothing happens.
 * Then the taking workflow's read mode applies.
 *
 * Durability: a batch lives in `ExecutionInputsRepo` (`buffered`) from its
 * first message, and an `executions.debounce` job (carrying the window) is
 * armed at the batch's due time — its newest message plus the window, at
 * most its oldest plus `max(10 s, 3 × window)`. A job that fires early
 * re-arms itself; the sweep releases batches whose job was lost.
 * Everything routed to a pair happens under its route lock, in one
 * transaction with the input rows, so concurrent messages, hosts and
 * parking runs see each other's inputs.
 */
import { Clock, Context, Data, Effect, Layer, Option, Schema } from "effect"
import type { RouteLook, Routed } from "../messaging/InboundRouter.ts"
import type { MessageRecord, ProcessingStatus } from "../messaging/Message.ts"
import { Messaging } from "../messaging/Messaging.ts"
import type { MessageConfigRecord } from "../messaging/numbers/MessageConfig.ts"
import { type ExecutionInputRecord, ExecutionInputsRepo, ExecutionsRepo } from "./ExecutionsRepo.ts"
import { JobQueue } from "../ports/JobQueue.ts"
import { RoutedMessages } from "./RoutedMessages.ts"
import type { DomainEvent } from "../ports/Outbox.ts"
import { Transactor } from "../ports/Transactor.ts"
import { StoredWorkflows } from "../workflows/StoredWorkflows.ts"
import type { WorkflowRecord } from "../workflows/Workflow.ts"
import { groupBy } from "../shared/Collections.ts"
import { takesInput } from "./Execution.ts"
import { ExecutionEngine } from "./Engine.ts"
import { batchMessageIds, batchValue, messageValue } from "./Inputs.ts"
import { RouteLocks } from "./RouteLocks.ts"
import { Launcher } from "./Launcher.ts"
import { firingWorkflow } from "./Observers.ts"
import * as T from "./Transitions.ts"
import { ActiveTriggers } from "./TriggerIndex.ts"

export const DEBOUNCE_QUEUE = "executions.debounce"

/** A batch's timer: the pair, and the window it was armed with. */
export const DebounceJob = Schema.Struct({
  project_id: Schema.String,
  msg_config_id: Schema.String,
  contact_id: Schema.String,
  window_ms: Schema.Finite
})
export type DebounceJob = typeof DebounceJob.Type

/** The longest a batch can be held: the cap of the largest window (60 s, decisions 2.1). */
export const MAX_HOLD_MS = 180_000

/** A workflow's debounce window (decisions 10.2): null means 1 s, 0 none. */
export const windowMs = (w: WorkflowRecord) => (w.message_debounce_seconds ?? 1) * 1000
export const capMs = (window: number) => Math.max(10_000, 3 * window)

/** When a batch (oldest first) is released. */
export const dueOf = (batch: ReadonlyArray<ExecutionInputRecord>, window: number) =>
  Math.min(Date.parse(batch[batch.length - 1]!.received_at) + window, Date.parse(batch[0]!.received_at) + capMs(window))

/** The pair's waiting run kept moving while a batch was routed to it; the batch is routed again on retry. */
export class OwnerMoved extends Data.TaggedError("OwnerMoved")<{
  readonly executionId: string
  readonly msgConfigId: string
  readonly contactId: string
}> {}

/** What routing reads of a `msg.message.received` entry (`messaging/DomainEvents.ts`). */
const Received = Schema.Struct({
  data: Schema.Struct({ message: Schema.Struct({ id: Schema.String }), phone_number_id: Schema.String })
})
const decodeReceived = Schema.decodeUnknownOption(Received)

export class InboundRouting extends Context.Service<InboundRouting, {
  /** A `msg.message.received` entry of a message still `pending` (recorded where no router was registered): debounce or routing. */
  readonly received: (entry: DomainEvent) => Effect.Effect<void, OwnerMoved>
  /** A debounce timer fired: releases the pair's batch when due, else arms the timer again. */
  readonly release: (job: DebounceJob) => Effect.Effect<void, OwnerMoved>
  /** Releases batches held longer than any window allows (their timer was lost). */
  readonly sweep: Effect.Effect<void, OwnerMoved>
  /** Takes a pair's route lock and reads its owner and held batch, ahead of its messages' recording (`InboundRouter`). */
  readonly lookAhead: (config: MessageConfigRecord, contactId: string) => Effect.Effect<RouteLook>
  /** Messages recorded a moment ago, routed in the transaction that records them, before their rows (`InboundRouter`). */
  readonly routeRecorded: (
    config: MessageConfigRecord,
    messages: ReadonlyArray<MessageRecord>,
    looks?: ReadonlyMap<string, RouteLook>
  ) => Effect.Effect<Routed, OwnerMoved>
}>()("@parley/core/executions/InboundRouting") {
  static readonly layer = Layer.effect(
    InboundRouting,
    Effect.gen(function*() {
      const repo = yield* ExecutionsRepo
      const inputs = yield* ExecutionInputsRepo
      const messages = yield* RoutedMessages
      const workflows = yield* StoredWorkflows
      const locks = yield* RouteLocks
      const tx = yield* Transactor
      const jobs = yield* JobQueue
      const engine = yield* ExecutionEngine
      const launcher = yield* Launcher
      const triggers = yield* ActiveTriggers
      const messaging = yield* Messaging
      const repos = yield* Effect.context<StoredWorkflows>()

      const nowMs = Clock.currentTimeMillis
      const iso = (ms: number) => new Date(ms).toISOString()

      /** The active `inbound_message` trigger's workflow on the number, if it can fire. */
      const inboundWorkflow = Effect.fnUntraced(function*(config: MessageConfigRecord) {
        const trigger = (yield* triggers.list(config.project_id, "inbound_message"))
          .find((t) => t.triggerable["phone_number_id"] === config.phone_number_id)
        if (trigger === undefined) return Option.none<{ readonly trigger: string; readonly workflow: WorkflowRecord }>()
        const workflow = yield* firingWorkflow(trigger).pipe(Effect.provideContext(repos))
        return Option.map(workflow, (w) => ({ trigger: trigger.id, workflow: w }))
      })

      /** The pair's owner and the workflow that would take its next input (decisions 10.2), for its window. */
      const taking = Effect.fnUntraced(function*(config: MessageConfigRecord, contactId: string) {
        // The owner and its workflow in one statement.
        const { owner, workflow } = yield* repo.findRoutedWithWorkflow(config.id, contactId)
        if (Option.isSome(owner)) {
          if (owner.value.status === "handoff") return { owner, workflow: Option.none<WorkflowRecord>() }
          return { owner, workflow }
        }
        return { owner, workflow: Option.map(yield* inboundWorkflow(config), (t) => t.workflow) }
      })

      /** Records where the batch's messages ended up (`processing_status`). */
      const settle = (batch: ReadonlyArray<ExecutionInputRecord>, status: ProcessingStatus) =>
        batch.length === 0 ? Effect.void : messages.settle(batch[0]!.project_id, batch.map((i) => i.id), status)

      /**
       * Read mode of the workflow that took the batch (decisions 10.3): its newest message, handed to the mark-readers
       * (`messaging/ReadMarks.ts`), which mark it read through the network as the proxy does, after this returns.
       */
      const applyReadMode = (workflow: Option.Option<WorkflowRecord>, config: MessageConfigRecord, batch: ReadonlyArray<ExecutionInputRecord>) => {
        const mode = Option.match(workflow, { onNone: () => "disabled" as const, onSome: (w) => w.inbound_message_read_mode })
        const newest = batch[batch.length - 1]
        if (mode === "disabled" || newest === undefined || newest.network_id === null) return Effect.void
        return messaging.markReadLater({
          config,
          conversationId: newest.conversation_id,
          messageId: newest.network_id,
          receivedAt: newest.received_at,
          typingIndicator: mode === "read_with_typing"
        })
      }

      /**
       * Routes a released batch (oldest first) to its pair's owner or a new run, inside the caller's transaction
       * holding the route lock; answers what to do once it commits (run the resumed or started execution, read mode).
       * `known`: what `taking` read under the same lock (not read again). `unstored`: inputs of the batch that have no
       * row (routed where they were recorded: the message's own insert is their once-only mark); their messages are not
       * written yet either, so where they end up goes to `settled` (their insert carries it) instead of an update.
       */
      const route = Effect.fnUntraced(function*(
        config: MessageConfigRecord,
        contactId: string,
        batch: ReadonlyArray<ExecutionInputRecord>,
        attempt = 0,
        known?: Effect.Success<ReturnType<typeof taking>>,
        unstored: ReadonlySet<string> = new Set(),
        settled: Map<string, ProcessingStatus> = new Map()
      ): Effect.fn.Return<Effect.Effect<void>, OwnerMoved> {
        if (batch.length === 0) return Effect.void
        const rows = batch.filter((i) => !unstored.has(i.id))
        const stored = rows.map((i) => i.id)
        const settleBatch = (status: ProcessingStatus) => {
          for (const i of batch) if (unstored.has(i.id)) settled.set(i.id, status)
          return settle(rows, status)
        }
        const done = (status: ProcessingStatus) =>
          Effect.andThen(stored.length === 0 ? Effect.void : inputs.take(stored), settleBatch(status))
        const owner = known !== undefined ? known.owner : yield* repo.findRouted(config.id, contactId)
        if (Option.isSome(owner)) {
          const o = owner.value
          if (Date.parse(o.started_at) > Date.parse(batch[batch.length - 1]!.received_at)) {
            // The run did not exist when the contact wrote (an API start overtook routing): the batch is not its input.
            yield* done("completed")
            return Effect.void
          }
          if (o.status === "handoff") {
            yield* done("blocked")
            return Effect.void
          }
          const workflow = known !== undefined ? known.workflow : yield* workflows.findById(o.project_id, o.workflow_id)
          if (o.status === "waiting" && takesInput(o.wait)) {
            const g = yield* engine.graph(o.revision_id)
            const input = { value: batchValue(batch), reason: "user_input", source: "inbound", kind: "message", messageIds: batchMessageIds(batch) } as const
            const resumed = T.resume(o, g, input, iso(yield* nowMs))
            // Its timer fired or the API moved it meanwhile: look again. In routing's transaction (no savepoint).
            if (!(yield* engine.write(o, resumed, { joined: true }))) {
              if (attempt < 3) return yield* route(config, contactId, batch, attempt + 1, undefined, unstored, settled)
              return yield* new OwnerMoved({ executionId: o.id, msgConfigId: config.id, contactId })
            }
            yield* done("completed")
            // The run first (its slice forks), then read mode's network call.
            return Effect.andThen(
              resumed.record.status === "running" ? engine.kick(o.id, { leased: resumed.record.wait === null, committed: true }) : Effect.void,
              applyReadMode(workflow, config, batch)
            )
          }
          // Running (or waiting on something else): the batch waits for the run's next wait point.
          if (stored.length > 0) yield* inputs.queue(stored)
          for (const i of batch) if (unstored.has(i.id)) yield* inputs.add({ ...i, state: "queued" })
          yield* settleBatch("completed")
          return applyReadMode(workflow, config, batch)
        }
        const started = yield* inboundWorkflow(config)
        const contact = Option.isNone(started) ? Option.none() : yield* messages.contact(config.project_id, contactId)
        if (Option.isNone(started) || Option.isNone(contact)) {
          yield* done("completed")
          return Effect.void
        }
        const launched = yield* launcher.launch({
          workflow: started.value.workflow,
          triggerType: "inbound_message",
          observer: false,
          config,
          contact: contact.value,
          conversationId: batch[batch.length - 1]!.conversation_id,
          phone: contact.value.wa_id,
          recipient: contact.value.business_scoped_user_id,
          vars: {},
          context: {},
          initialData: undefined,
          metadata: {},
          system: {},
          dedupeKey: `inbound:${started.value.trigger}:${batch[0]!.id}`,
          firstInput: { value: batchValue(batch), messageIds: batchMessageIds(batch) }
        }, { kick: false })
        yield* done("completed")
        // Run once this transaction, around the launch's, committed.
        const kick = Option.match(launched, {
          onNone: () => Effect.void,
          onSome: (e) => e.status === "running" ? engine.kick(e.id, { leased: true, committed: true }) : Effect.void
        })
        return Effect.andThen(kick, applyReadMode(Option.some(started.value.workflow), config, batch))
      })

      /** The pair's route lock, then its owner and held batch side by side (one round trip). */
      const look = (config: MessageConfigRecord, contactId: string) =>
        Effect.andThen(
          locks.lock(config.id, contactId),
          Effect.all([taking(config, contactId), inputs.list(config.id, contactId, "buffered")], { concurrency: 2 })
        )

      /** What `look` read for a contact ahead of its messages' recording, under the lock it took. */
      class Looked implements RouteLook {
        readonly contactId: string
        readonly read: Effect.Success<ReturnType<typeof look>>
        constructor(contactId: string, read: Effect.Success<ReturnType<typeof look>>) {
          this.contactId = contactId
          this.read = read
        }
      }
      const lookAhead = (config: MessageConfigRecord, contactId: string) =>
        Effect.map(look(config, contactId), (read): RouteLook => new Looked(contactId, read))

      /**
       * Messages just recorded (oldest first), in the transaction that recorded them (`messaging/InboundRouter.ts`):
       * per contact, under its route lock, they join the pair's held batch; a batch due now (window 0, or the window
       * passed) is routed at once without an input row, else its rows and timer are written as routing does. `looks`:
       * contacts whose lock and reads `lookAhead` took in this transaction already.
       */
      const routeRecorded = Effect.fn("InboundRouting.routeRecorded")(function*(
        config: MessageConfigRecord,
        recorded: ReadonlyArray<MessageRecord>,
        looks: ReadonlyMap<string, RouteLook> = new Map()
      ) {
        const afters: Array<Effect.Effect<void>> = []
        const settled = new Map<string, ProcessingStatus>()
        for (const group of groupBy(recorded, (m) => m.contact_id)) {
          const contactId = group[0]!.contact_id
          const ahead = looks.get(contactId)
          const [taker, held] = ahead instanceof Looked ? ahead.read : yield* look(config, contactId)
          const window = Option.match(taker.workflow, { onNone: () => 0, onSome: windowMs })
          const fresh = group.map((m) => toInput(m, "buffered"))
          const batch = [...held, ...fresh]
          const due = dueOf(batch, window)
          if (window === 0 || due <= (yield* nowMs)) {
            afters.push(yield* route(config, contactId, batch, 0, taker, new Set(fresh.map((i) => i.id)), settled))
            continue
          }
          for (const input of fresh) yield* inputs.add(input)
          yield* arm({ project_id: config.project_id, msg_config_id: config.id, contact_id: contactId, window_ms: window }, due)
        }
        return { after: Effect.all(afters, { discard: true }), settled } satisfies Routed
      })

      const arm = (job: DebounceJob, due: number) =>
        jobs.enqueue(DEBOUNCE_QUEUE, job, { runAt: due, dedupeKey: `debounce:${job.msg_config_id}:${job.contact_id}:${due}` })

      const received = Effect.fn("InboundRouting.received")(function*(entry: DomainEvent) {
        const decoded = decodeReceived(entry.payload)
        if (entry.project_id === null || Option.isNone(decoded)) {
          return yield* Effect.logWarning("Dropped a received-message entry that does not decode").pipe(Effect.annotateLogs({ entry: entry.id }))
        }
        const projectId = entry.project_id
        const message = yield* messages.findInbound(projectId, decoded.value.data.phone_number_id, decoded.value.data.message.id)
        // Settled already: a repeated delivery of the entry.
        if (Option.isNone(message) || message.value.processing_status !== "pending") return
        const m = message.value
        // The number's live config as remembered (ingestion read it moments ago).
        const config = yield* messages.number(projectId, m.msg_config_id, m.phone_number_id)
        if (Option.isNone(config) || !config.value.inbound_processing_enabled) {
          return yield* tx.withTransaction(settle([toInput(m, "buffered")], "blocked"))
        }
        const after = yield* tx.withTransaction(Effect.gen(function*() {
          yield* locks.lock(m.msg_config_id, m.contact_id)
          if (!(yield* inputs.add(toInput(m, "buffered")))) return Effect.void
          const taker = yield* taking(config.value, m.contact_id)
          const window = Option.match(taker.workflow, { onNone: () => 0, onSome: windowMs })
          const batch = yield* inputs.list(m.msg_config_id, m.contact_id, "buffered")
          const due = dueOf(batch, window)
          if (window === 0 || due <= (yield* nowMs)) return yield* route(config.value, m.contact_id, batch, 0, taker)
          yield* arm({ project_id: projectId, msg_config_id: m.msg_config_id, contact_id: m.contact_id, window_ms: window }, due)
          return Effect.void
        }))
        yield* after
      })

      const release = Effect.fn("InboundRouting.release")(function*(job: DebounceJob) {
        const config = yield* messages.number(job.project_id, job.msg_config_id)
        const after = yield* tx.withTransaction(Effect.gen(function*() {
          yield* locks.lock(job.msg_config_id, job.contact_id)
          const batch = yield* inputs.list(job.msg_config_id, job.contact_id, "buffered")
          if (batch.length === 0) return Effect.void
          if (Option.isNone(config)) {
            // The number is gone: nothing can take the batch.
            yield* inputs.take(batch.map((i) => i.id))
            yield* settle(batch, "blocked")
            return Effect.void
          }
          const due = dueOf(batch, job.window_ms)
          if (due > (yield* nowMs)) {
            yield* arm(job, due)
            return Effect.void
          }
          return yield* route(config.value, job.contact_id, batch)
        }))
        yield* after
      })

      const sweep = Effect.gen(function*() {
        const stale = yield* inputs.listStale(iso((yield* nowMs) - MAX_HOLD_MS - 60_000), 500)
        const pairs = new Map<string, DebounceJob>()
        for (const i of stale) {
          pairs.set(`${i.msg_config_id}:${i.contact_id}`, { project_id: i.project_id, msg_config_id: i.msg_config_id, contact_id: i.contact_id, window_ms: 0 })
        }
        yield* Effect.forEach(pairs.values(), release, { discard: true })
      }).pipe(Effect.withSpan("InboundRouting.sweep"))

      return InboundRouting.of({ received, release, sweep, lookAhead, routeRecorded })
    })
  )
}

/** The input a stored inbound message stands for. */
const toInput = (m: MessageRecord, state: ExecutionInputRecord["state"]): ExecutionInputRecord => ({
  id: m.id,
  project_id: m.project_id,
  msg_config_id: m.msg_config_id,
  contact_id: m.contact_id,
  conversation_id: m.conversation_id,
  network_id: m.network_id,
  value: messageValue(m),
  received_at: m.created_at,
  state
})
