/**
 * The sender of broadcasts (decisions 3.4, 8.2): takes a `sending` broadcast's
 * pending recipients batch after batch and hands each to `Outbound.send`, paced
 * by a token bucket per number below its throughput (80, 1,000 or 20
 * messages/s) and inside its portfolio's messaging limit.
 *
 * One sender per broadcast across hosts: it holds a lease on the record
 * (renewed every batch); a host that died leaves it to lapse and the sweep of
 * any host (every `sweepIntervalMs`, and at start) takes the broadcast over.
 * Jobs (`broadcasts.send`, queued by send and schedule) are hints that start
 * it sooner; the record decides.
 *
 * Never twice: every attempt of a recipient has a fixed message id
 * (`recipientMessageId`), and the batch is marked attempted before any send.
 * A recipient found attempted is looked up first: a recorded message with a
 * network id was sent, one the network refused is treated as that refusal, one
 * without an answer (the crash came between record and answer) is settled by
 * the network's status reports carrying its key; when none came within a
 * grace, the network never got it: that record fails as unconfirmed and the
 * recipient is sent again. A recipient without a recorded message never left
 * (messages are recorded before they go out) and is sent.
 *
 * Throughput refusals (130429, 131056) and an unreachable network are tried
 * again with backoff (1 s doubling, at most 60 s; a new attempt's id), never
 * failing the recipient. A paused or disabled template (at the start, every
 * 10 s, or refused as 132015/132016) and a disconnected number stop the
 * broadcast; pending recipients stay pending. A contact in the number's block
 * list, or refused as having stopped marketing messages (131050), is
 * `suppressed` and not sent.
 */
import { Clock, Config, Context, Effect, Fiber, FiberSet, Layer, Option, Schedule, Schema, Semaphore } from "effect"
import { templateComponents, templateEnvelope, TemplateMismatch } from "../executions/TemplateEnvelope.ts"
import { type RecipientsSnapshot, SendPolicy } from "../guardrails/SendPolicy.ts"
import { Outbound } from "../messaging/Outbound.ts"
import type { MessageRecord } from "../messaging/Message.ts"
import type { MessageConfigRecord } from "../messaging/numbers/MessageConfig.ts"
import { MessageConfigs } from "../messaging/numbers/MessageConfigs.ts"
import type { TemplateRecord } from "../messaging/templates/Template.ts"
import { Templates } from "../messaging/templates/Templates.ts"
import { SendPace } from "../messaging/numbers/SendPace.ts"
import { BroadcastsRepo, type RecipientOutcome, type RecipientRetry } from "./BroadcastsRepo.ts"
import { decodingPayload, JobQueue } from "../ports/JobQueue.ts"
import { Messaging } from "../messaging/Messaging.ts"
import { ConversationalSends } from "../messaging/ConversationalSends.ts"
import { MessagingNetwork } from "../network/MessagingNetwork.ts"
import { Ids } from "../shared/Ids.ts"
import { type BroadcastRecord, type RecipientRecord, recipientMessageId, recipientSendKey, type StopReason } from "./Broadcast.ts"
import { SEND_QUEUE, SendJob } from "./Broadcasts.ts"
import { observeBatch } from "./BroadcastTelemetry.ts"
import { makeSendWindow } from "./SendWindow.ts"

export interface BroadcastSettingsShape {
  /** How long a sender's hold on a broadcast lasts without renewal. */
  readonly leaseMs: number
  /** How often each host looks for broadcasts to start or take over. */
  readonly sweepIntervalMs: number
  /** How long a send in doubt waits for the network's status reports before it counts as never received. */
  readonly doubtGraceMs: number
  /** How often the host logs a sending broadcast's progress. */
  readonly progressIntervalMs: number
  /** The most broadcast sends the host keeps in flight (the window narrows below it while sends queue). */
  readonly maxInFlight: number
  /** The most it keeps in flight while sends inside conversations are in flight, or were (or a contact's message came) within `replyHoldMs`. */
  readonly replyInFlight: number
  readonly replyHoldMs: number
}

/**
 * Sends in flight at once in a host, at most: enough to keep 1,000/s going while each waits for its commit and the
 * network (the real network answers in 0.1-0.5 s). Fewer (16-32, tried for issue 30 so a saturated host would serve
 * replies sooner) cut the rate wherever sends are slow rather than CPU-bound: the window (`SendWindow`) narrows to
 * `MIN_IN_FLIGHT` only while sends take longer than their baseline, that is while they queue inside the host.
 */
const IN_FLIGHT = 128
const MIN_IN_FLIGHT = 8
/**
 * While replies are under way: the window's floor. 2 served the reply better on a host short of CPU (p50 62-111 ms
 * against 140-320 ms at 8) but cost the broadcast 60 % of its rate where the host was less loaded, and a window of 2
 * caps sends that wait on a real network (0.1-0.5 s) at 4-20/s: decisions "Broadcasts yield to a contact's message".
 */
const REPLY_IN_FLIGHT = MIN_IN_FLIGHT
// The doubt grace outlasts the network's first webhook retries to a host that was down: a report still owed after
// it would make the send again a duplicate.
const DEFAULTS: BroadcastSettingsShape = {
  leaseMs: 30_000,
  sweepIntervalMs: 15_000,
  doubtGraceMs: 300_000,
  progressIntervalMs: 5_000,
  maxInFlight: IN_FLIGHT,
  replyInFlight: REPLY_IN_FLIGHT,
  replyHoldMs: 1_000
}

/**
 * From `PARLEY_BROADCAST_LEASE_MS`, `PARLEY_BROADCAST_SWEEP_MS`, `PARLEY_BROADCAST_DOUBT_GRACE_MS`,
 * `PARLEY_BROADCAST_PROGRESS_MS`, `PARLEY_BROADCAST_MAX_IN_FLIGHT`, `PARLEY_BROADCAST_REPLY_IN_FLIGHT` (at
 * `PARLEY_BROADCAST_MAX_IN_FLIGHT` or above, broadcasts do not yield to replies), `PARLEY_BROADCAST_REPLY_HOLD_MS`;
 * unset keeps the defaults.
 */
const settingsFromConfig = Effect.gen(function*() {
  const ms = (name: string, fallback: number) => Config.Int(name).pipe(Config.withDefault(fallback), Config.map((n) => Math.max(1, n)))
  return {
    leaseMs: yield* ms("PARLEY_BROADCAST_LEASE_MS", DEFAULTS.leaseMs),
    sweepIntervalMs: yield* ms("PARLEY_BROADCAST_SWEEP_MS", DEFAULTS.sweepIntervalMs),
    doubtGraceMs: yield* ms("PARLEY_BROADCAST_DOUBT_GRACE_MS", DEFAULTS.doubtGraceMs),
    progressIntervalMs: yield* ms("PARLEY_BROADCAST_PROGRESS_MS", DEFAULTS.progressIntervalMs),
    maxInFlight: Math.max(MIN_IN_FLIGHT, yield* ms("PARLEY_BROADCAST_MAX_IN_FLIGHT", DEFAULTS.maxInFlight)),
    replyInFlight: yield* ms("PARLEY_BROADCAST_REPLY_IN_FLIGHT", DEFAULTS.replyInFlight),
    replyHoldMs: yield* Config.Int("PARLEY_BROADCAST_REPLY_HOLD_MS").pipe(Config.withDefault(DEFAULTS.replyHoldMs), Config.map((n) => Math.max(0, n)))
  } satisfies BroadcastSettingsShape
}).pipe(Effect.orDie)

/** Recipients taken per batch at most: outcomes are written per batch, so about a second's worth of the number's pace. */
const BATCH = 500
const MIN_BATCH = 20
/** Share of the number's throughput the bucket uses: inbound messages count against the same level. */
const THROUGHPUT_SHARE = 0.98
const RECHECK_MS = 10_000
const MAX_BACKOFF_MS = 60_000
const DAY_MS = 24 * 60 * 60 * 1000

/** Messages per second of a number (decisions 8.2). */
export const throughputOf = (config: MessageConfigRecord): number =>
  config.facts.is_coexistence === true ? 20 : config.facts.throughput_level === "HIGH" ? 1000 : 80

/** Unique contacts per rolling 24 hours of a messaging-limit tier; undefined when unlimited or unknown. */
export const messagingLimitOf = (tier: string | null): number | undefined =>
  ({ TIER_50: 50, TIER_250: 250, TIER_1K: 1000, TIER_2K: 2000, TIER_10K: 10_000, TIER_100K: 100_000 } as Record<string, number>)[tier ?? ""]

const THROTTLED = new Set([130429, 131056])
const TEMPLATE_STOPPED = new Set([132015, 132016])
const STOPPED_MARKETING = 131050

type Attempt =
  /** Not sent: the broadcast stopped meanwhile; the recipient stays pending as it was. */
  | { readonly _tag: "Skip" }
  | { readonly _tag: "Done"; readonly outcome: RecipientOutcome }
  | { readonly _tag: "Later"; readonly retry: RecipientRetry }
  | { readonly _tag: "Stop"; readonly reason: StopReason; readonly retry: RecipientRetry }

const ErrorObject = Schema.Struct({ code: Schema.optionalKey(Schema.Finite), message: Schema.optionalKey(Schema.String), error_subcode: Schema.optionalKey(Schema.Finite) })
const FailedReport = Schema.Struct({ status: Schema.Literal("failed"), errors: Schema.Array(ErrorObject) })

/** The network's error stored on a message it refused (its `failed` status, as `Outbound` records a refusal). */
const storedError = (m: MessageRecord) =>
  Option.flatMap(
    Option.fromNullishOr(m.statuses.map((s) => Schema.decodeUnknownOption(FailedReport)(s)).find(Option.isSome)),
    (report) => Option.fromNullishOr(report.value.errors[0])
  )

export class BroadcastSender extends Context.Service<BroadcastSender, {
  /** Starts sending the broadcast in this process unless it already does; the lease decides who sends. */
  readonly kick: (projectId: string, id: string) => Effect.Effect<void>
  /** Sends the broadcast here until it ends, stops, or another host holds it. */
  readonly run: (projectId: string, id: string) => Effect.Effect<void>
  /** One pass of the sweep: scheduled broadcasts due and sending ones (a dead host's) are kicked here. */
  readonly sweep: Effect.Effect<number>
}>()("@parley/core/broadcasts/BroadcastSender") {
  static readonly layer = Layer.effect(
    BroadcastSender,
    Effect.gen(function*() {
      const settings = yield* settingsFromConfig
      const repo = yield* BroadcastsRepo
      const messaging = yield* Messaging
      const configs = yield* MessageConfigs
      const templates = yield* Templates
      const outbound = yield* Outbound
      const policy = yield* SendPolicy
      const network = yield* MessagingNetwork
      const owner = `host-${yield* (yield* Ids).uuid}`
      const running = new Set<string>()
      const fibers = yield* FiberSet.make()

      // One pace per number, shared by every broadcast it sends in this process and yielding to its replies.
      const pace = yield* SendPace
      const conversational = yield* ConversationalSends
      // The host's broadcast sends in flight, every broadcast's: as many as do not queue inside the host, where the
      // replies of conversations would wait behind them (issue 30 §2); fewer while replies are under way.
      const window = makeSendWindow({
        max: settings.maxInFlight,
        min: MIN_IN_FLIGHT,
        tolerance: 2,
        slackMs: 5,
        whileConversing: settings.replyInFlight,
        holdMs: settings.replyHoldMs
      })
      const inFlight = yield* Semaphore.make(settings.maxInFlight)
      /** `send` once it has a place in the window, unless the broadcast halted meanwhile (none). */
      const inWindow = <A, E, R>(halted: () => boolean, send: Effect.Effect<A, E, R>) =>
        inFlight.withPermits(1)(Effect.gen(function*() {
          if (halted()) return Option.none<A>()
          const start = yield* Clock.currentTimeMillis
          const outcome = yield* send
          const end = yield* Clock.currentTimeMillis
          yield* inFlight.resize(window.observe(end - start, end, yield* conversational.current))
          return Option.some(outcome)
        }))

      const iso = (ms: number) => new Date(ms).toISOString()

      const stop = Effect.fnUntraced(function*(b: BroadcastRecord, reason: StopReason) {
        const now = iso(yield* Clock.currentTimeMillis)
        yield* repo.transition({ ...b, status: "stopped", stopped_at: now, stop_reason: reason, updated_at: now }, ["sending"])
        yield* Effect.logWarning("Broadcast stopped").pipe(Effect.annotateLogs({ broadcast_id: b.id, stop_reason: reason }))
      })

      /** The number and template to send with now, or why the broadcast cannot go on. */
      const readiness = Effect.fnUntraced(function*(b: BroadcastRecord) {
        const found = yield* messaging.findNumber(b.project_id, b.msg_config_id)
        if (Option.isNone(found) || found.value.deleted_at !== null) return "number_disconnected" as const
        const config = yield* configs.refreshFacts(found.value)
        if (config.facts.status === "DISCONNECTED") return "number_disconnected" as const
        const template = yield* templates.forSend(b.project_id, b.msg_template_id)
        if (Option.isNone(template) || template.value.status !== "approved") return "template_paused" as const
        return { config, template: template.value }
      })

      /** The wa_ids the number blocked: never sent to (suppressed). */
      const blockedOf = Effect.fnUntraced(function*(config: MessageConfigRecord) {
        const blocked = new Set<string>()
        let after: string | undefined
        for (let page = 0; page < 20; page++) {
          const answer = yield* Effect.result(network.listBlockedUsers({ accessToken: config.access_token }, config.phone_number_id, { limit: 100, after }))
          if (answer._tag === "Failure") break
          for (const u of answer.success.value.data) if (u.wa_id !== undefined) blocked.add(u.wa_id)
          after = answer.success.value.paging?.next !== undefined ? answer.success.value.paging.cursors?.after : undefined
          if (after === undefined || answer.success.value.data.length === 0) break
        }
        return blocked
      })

      const backoff = (attempts: number) => Math.min(1000 * 2 ** Math.min(attempts, 6), MAX_BACKOFF_MS)

      const attemptOne = Effect.fnUntraced(function*(
        b: BroadcastRecord,
        config: MessageConfigRecord,
        template: TemplateRecord,
        blocked: ReadonlySet<string>,
        runStart: number,
        halted: () => boolean,
        facts: Effect.Effect<RecipientsSnapshot>,
        r: RecipientRecord
      ) {
        const now = yield* Clock.currentTimeMillis
        const done = (status: RecipientOutcome["status"], error?: { message: string; code: string; subcode?: string | null }): Attempt => ({
          _tag: "Done",
          outcome: {
            id: r.id,
            status,
            at: iso(now),
            error_message: error?.message ?? null,
            error_details: error === undefined ? null : { error_code: error.code, error_subcode: error.subcode ?? null }
          }
        })
        const again = (attempts: number, at: number): RecipientRetry => ({
          id: r.id,
          message_id: recipientMessageId(r.id, attempts),
          attempts,
          retry_at: iso(at),
          attempted_at: null
        })
        const refused = (code: number | undefined, message: string, subcode: number | undefined): Attempt => {
          if (code !== undefined && THROTTLED.has(code)) return { _tag: "Later", retry: again(r.attempts + 1, now + backoff(r.attempts)) }
          if (code !== undefined && TEMPLATE_STOPPED.has(code)) return { _tag: "Stop", reason: "template_paused", retry: again(r.attempts + 1, now) }
          if (code === STOPPED_MARKETING) return done("suppressed", { message, code: String(code) })
          return done("failed", { message, code: String(code ?? "unknown"), subcode: subcode === undefined ? null : String(subcode) })
        }
        if (blocked.has(r.phone_number)) return done("suppressed", { message: "The contact is blocked on this number", code: "blocked" })

        if (r.attempted_at !== null) {
          // Taken before (a restart): the attempt may have left.
          const recorded = yield* outbound.findRecorded(b.project_id, r.message_id)
          if (Option.isSome(recorded)) {
            const m = recorded.value
            if (m.network_id !== null) return done("sent")
            if (m.status === "failed") {
              const error = storedError(m)
              return refused(Option.getOrUndefined(error)?.code, Option.getOrUndefined(error)?.message ?? "The network refused the message", Option.getOrUndefined(error)?.error_subcode)
            }
            const settled = yield* outbound.settleFromReports(config, m, recipientSendKey(r.id), r.attempted_at)
            if (Option.isSome(settled) && settled.value.network_id !== null) return done("sent")
            // The grace runs from when this sender started too: reports the network still owed a dead host's sends
            // come after the restart.
            const waitFrom = Math.max(Date.parse(r.attempted_at), runStart)
            if (now - waitFrom < settings.doubtGraceMs) {
              return { _tag: "Later", retry: { id: r.id, message_id: r.message_id, attempts: r.attempts, retry_at: iso(waitFrom + settings.doubtGraceMs), attempted_at: r.attempted_at } } satisfies Attempt
            }
            // The network reports every message it accepts (`sent` or `failed`): silent for the whole grace, it never
            // got this one. Its record fails as unconfirmed and the recipient goes again under a new attempt's id.
            yield* outbound.failUnconfirmed(config, m)
            return { _tag: "Later", retry: again(r.attempts + 1, now) } satisfies Attempt
          }
        }

        const components = templateComponents(template, r.template_parameters)
        if (components instanceof TemplateMismatch) return done("failed", { message: components.message, code: "template_parameter_mismatch" })
        if (halted()) return { _tag: "Skip" } satisfies Attempt
        yield* pace.bulk(config.phone_number_id, throughputOf(config) * THROUGHPUT_SHARE)
        if (halted()) return { _tag: "Skip" } satisfies Attempt
        const envelope = {
          messaging_product: "whatsapp",
          recipient_type: "individual",
          to: r.phone_number,
          ...templateEnvelope(template, components),
          biz_opaque_callback_data: recipientSendKey(r.id)
        }
        const sent = yield* inWindow(
          halted,
          Effect.flatMap(facts, (guardrailFacts) => outbound.send(config, envelope, { origin: "broadcast", messageId: r.message_id, guardrailFacts }))
        )
        if (Option.isNone(sent)) return { _tag: "Skip" } satisfies Attempt
        const outcome = sent.value
        switch (outcome._tag) {
          case "Accepted":
            return done("sent")
          case "Refused":
            return refused(outcome.error.code, outcome.error.message, outcome.error.error_subcode)
          case "Unavailable":
            return { _tag: "Later", retry: again(r.attempts + 1, (yield* Clock.currentTimeMillis) + backoff(r.attempts)) } satisfies Attempt
          case "AccountMismatch":
            return done("failed", { message: `The media ${outcome.mediaId} belongs to another business account`, code: "account_mismatch" })
          case "OutsideWindow":
            return done("failed", { message: "Re-engagement message: the 24-hour window is closed", code: "131047" })
          case "Withheld": {
            // Guardrails: quiet hours hold the recipient until they end; an opt-out or a frequency cap suppresses it.
            const { message, reason, until } = outcome.withheld
            if (until === null) return done("suppressed", { message, code: reason })
            return { _tag: "Later", retry: { ...again(r.attempts + 1, Date.parse(until)), held_until: until } } satisfies Attempt
          }
        }
      })

      const run = Effect.fn("BroadcastSender.run")(function*(projectId: string, id: string) {
        const leased = (at: number) => repo.lease(id, owner, iso(at), iso(at + settings.leaseMs))
        let now = yield* Clock.currentTimeMillis
        const runStart = now
        const first = yield* leased(now)
        if (Option.isNone(first) || first.value.project_id !== projectId) return
        let b = first.value
        if (b.status === "scheduled") {
          if (b.scheduled_at === null || Date.parse(b.scheduled_at) > now) return yield* repo.release(id, owner)
          const { total } = yield* repo.progress(id)
          const at = iso(now)
          const next: BroadcastRecord = total === 0
            ? { ...b, status: "completed", started_at: at, completed_at: at, stop_reason: "no_recipients", updated_at: at }
            : { ...b, status: "sending", started_at: at, updated_at: at }
          const moved = yield* repo.transition(next, ["scheduled"])
          if (Option.isNone(moved) || moved.value.status !== "sending") return yield* repo.release(id, owner)
          b = moved.value
        }
        if (b.status !== "sending") return yield* repo.release(id, owner)

        const ready = yield* readiness(b)
        if (typeof ready === "string") {
          yield* stop(b, ready)
          return yield* repo.release(id, owner)
        }
        let { config, template } = ready
        let checkedAt = now
        const blocked = yield* blockedOf(config)
        const progressStart = yield* repo.progress(id)
        let lastLog = { at: now, pending: progressStart.pending }
        yield* Effect.logInfo("Broadcast sending").pipe(Effect.annotateLogs({
          broadcast_id: id,
          total: progressStart.total,
          pending: progressStart.pending,
          throughput_per_second: throughputOf(config)
        }))

        for (;;) {
          now = yield* Clock.currentTimeMillis
          const held = yield* leased(now)
          // Another host took over (this one stalled past its lease), or the broadcast was stopped.
          if (Option.isNone(held)) return
          b = held.value
          if (b.status !== "sending") return yield* repo.release(id, owner)
          if (now - checkedAt >= RECHECK_MS) {
            const again = yield* readiness(b)
            if (typeof again === "string") {
              yield* stop(b, again)
              return yield* repo.release(id, owner)
            }
            config = again.config
            template = again.template
            checkedAt = now
          }
          let size = Math.max(MIN_BATCH, Math.min(BATCH, Math.round(throughputOf(config))))
          // The tier as last read (at the start and every 10 s): a raised limit frees the held recipients.
          const limit = messagingLimitOf(config.facts.throughput_tier)
          if (limit !== undefined) {
            const configIds = (yield* messaging.numbersOfAccount(config.business_account_id)).map((c) => c.id)
            size = Math.min(size, limit - (yield* repo.contactsReachedSince(configIds, iso(now - DAY_MS))))
          }
          const batch = size > 0 ? yield* repo.pendingBatch(id, iso(now), size) : []
          if (batch.length === 0) {
            const { pending } = yield* repo.progress(id)
            if (pending === 0) {
              const at = iso(yield* Clock.currentTimeMillis)
              yield* repo.transition({ ...b, status: "completed", completed_at: at, updated_at: at }, ["sending"])
              yield* Effect.logInfo("Broadcast completed").pipe(Effect.annotateLogs({ broadcast_id: id, total: progressStart.total }))
              return yield* repo.release(id, owner)
            }
            // Waiting for retries or for the messaging limit to free up.
            yield* Effect.sleep(size > 0 ? 1000 : RECHECK_MS)
            continue
          }
          yield* repo.markAttempted(id, batch.filter((r) => r.attempted_at === null).map((r) => r.id), iso(now))
          // The batch's opt-outs and time zones in one read (again each second the batch lasts), instead of one per
          // send: each send's check decides from it while it is fresh (`SendPolicy`, `SNAPSHOT_FRESH_MS`).
          const { current: facts } = yield* policy.batchFacts({ projectId: b.project_id, msgConfigId: config.id }, batch.map((r) => r.phone_number))
          // A stop (this host's API or another's) is seen within 250 ms: no send of the batch starts after it.
          let halt = false
          const watch = yield* repo.findById(projectId, id).pipe(
            Effect.tap((found) => Effect.sync(() => void (halt = Option.isNone(found) || found.value.status !== "sending"))),
            Effect.repeat(Schedule.spaced(250)),
            Effect.forkChild
          )
          const results = yield* Effect.forEach(batch, (r) => attemptOne(b, config, template, blocked, runStart, () => halt, facts, r), { concurrency: settings.maxInFlight })
          yield* Fiber.interrupt(watch)
          const settled = results.flatMap((a) => (a._tag === "Done" ? [a.outcome] : []))
          const retries = results.flatMap((a) => (a._tag === "Later" || a._tag === "Stop" ? [a.retry] : []))
          yield* repo.settle(id, settled)
          yield* repo.postpone(id, retries)
          yield* observeBatch(settled, retries.length)
          const stopped = results.find((a): a is Extract<Attempt, { _tag: "Stop" }> => a._tag === "Stop")
          if (stopped !== undefined) {
            yield* stop(b, stopped.reason)
            return yield* repo.release(id, owner)
          }
          const at = yield* Clock.currentTimeMillis
          if (at - lastLog.at >= settings.progressIntervalMs) {
            const p = yield* repo.progress(id)
            const rate = ((lastLog.pending - p.pending) * 1000) / (at - lastLog.at)
            yield* Effect.logInfo("Broadcast progress").pipe(Effect.annotateLogs({
              broadcast_id: id,
              sent: p.total - p.pending,
              total: p.total,
              rate_per_second: Math.round(rate * 10) / 10,
              eta_seconds: rate > 0 ? Math.ceil(p.pending / rate) : null
            }))
            lastLog = { at, pending: p.pending }
          }
        }
      })

      const kick = (projectId: string, id: string) =>
        Effect.suspend(() => {
          if (running.has(id)) return Effect.void
          running.add(id)
          return FiberSet.run(fibers, run(projectId, id).pipe(
            Effect.catchCause((cause) => Effect.logError("A broadcast's sender failed; the sweep takes it up again", cause).pipe(Effect.annotateLogs({ broadcast_id: id }))),
            Effect.ensuring(Effect.sync(() => running.delete(id)))
          )).pipe(Effect.asVoid)
        })

      const sweep = Effect.gen(function*() {
        const due = yield* repo.listRunnable(iso(yield* Clock.currentTimeMillis), 100)
        yield* Effect.forEach(due, (b) => kick(b.project_id, b.id), { discard: true })
        return due.length
      }).pipe(Effect.withSpan("BroadcastSender.sweep"))

      return BroadcastSender.of({ kick, run, sweep })
    })
  )
}

/** The sender's job consumer and the sweep, for as long as the layer lives. */
export const layerBroadcastsWorkers = Layer.effectDiscard(Effect.gen(function*() {
  const jobs = yield* JobQueue
  const sender = yield* BroadcastSender
  const { sweepIntervalMs } = yield* settingsFromConfig
  yield* jobs.work(SEND_QUEUE, { concurrency: 16 }, decodingPayload(SendJob, (p) => sender.kick(p.project_id, p.id)))
  yield* sender.sweep.pipe(
    Effect.catchCause((cause) => Effect.logError("The broadcasts sweep failed", cause)),
    Effect.repeat(Schedule.spaced(sweepIntervalMs)),
    Effect.forkScoped
  )
}))
