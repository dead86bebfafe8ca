/**
 * How the simulated network posts its webhooks: signed with the app secret, to the sink (when the account has the
 * app subscribed), retried after a failed delivery (`retryDelays`, then given up with a warning); the status reports
 * of an accepted message at each stage, batched per number (waiting `statusBatchMs`, at most `STATUS_BATCH_MAX` a
 * webhook); and a template's review when it ends. Every wait reads the clock the simulator was built with, and every
 * fiber runs in the simulator's own set, so its timers stop with the layer.
 */
import { type Clock, Duration, Effect, Exit, Latch } from "effect"
import { hubSignature, networkJson, type WebhookPayload } from "../../network/Webhook.ts"
import type { OutboundRecord, OutboundStatus, SimState } from "./Model.ts"
import { statusPayload, statusReport, type StatusReport, templateEvent } from "./Payloads.ts"
import type { WebhookSink } from "./Protocol.ts"
import type { SimConfig } from "./Routes.ts"
import { refreshTemplate } from "./TemplateManagement.ts"

/** The most status reports one webhook carries. */
export const STATUS_BATCH_MAX = 500

export interface WebhooksOptions {
  readonly state: SimState
  readonly config: SimConfig
  readonly clock: Clock.Clock
  /** Runs an effect in the simulator's fiber set. */
  readonly fork: (effect: Effect.Effect<unknown>) => unknown
  readonly sink: WebhookSink | undefined
  readonly retryDelays: ReadonlyArray<number>
  readonly statusBatchMs: number
}

export const makeWebhooks = (options: WebhooksOptions) => {
  const { clock, config, fork, retryDelays, state, statusBatchMs } = options
  let sink = options.sink
  // Open once a sink is first set: what a restart owes waits for a host to take it.
  const sinkSet = Latch.makeUnsafe(sink !== undefined)
  const now = () => clock.currentTimeMillisUnsafe()
  const sleepUntil = (at: number) => {
    const wait = at - now()
    return wait > 0 ? clock.sleep(Duration.millis(wait)) : Effect.void
  }

  const attempt = (raw: Uint8Array, signature: string) =>
    sink === undefined
      ? Effect.succeed(false)
      : Effect.map(Effect.exit(Effect.suspend(() => sink!(raw, signature))), Exit.isSuccess)

  const retry = (raw: Uint8Array, signature: string) =>
    Effect.gen(function*() {
      for (const delay of retryDelays) {
        yield* clock.sleep(Duration.millis(delay))
        if (yield* attempt(raw, signature)) return
      }
      yield* Effect.logWarning("NetworkSimulator: webhook not delivered, retries exhausted")
    })

  /** Posts a webhook to the sink if the account has a subscribed app; answers whether the first attempt landed. */
  const post = (businessAccountId: string, payload: WebhookPayload): Effect.Effect<boolean> =>
    Effect.gen(function*() {
      if (state.accounts.get(businessAccountId)?.subscription === undefined || sink === undefined) return false
      const raw = networkJson(payload)
      const signature = hubSignature(raw, config.appSecret)
      if (yield* attempt(raw, signature)) return true
      fork(retry(raw, signature))
      return false
    })

  // Due status reports of each number, waiting (at most `statusBatchMs`) to share one webhook.
  const dueReports = new Map<string, Array<StatusReport>>()

  const flushReports = (phoneNumberId: string, batch: Array<StatusReport>) =>
    Effect.suspend(() => {
      // A batch that filled up left the map when it did; its timer then finds it empty.
      if (dueReports.get(phoneNumberId) === batch) dueReports.delete(phoneNumberId)
      const number = state.numbers.get(phoneNumberId)
      if (number === undefined || batch.length === 0) return Effect.void
      const reports = batch.splice(0, batch.length)
      return post(number.businessAccountId, statusPayload(number, reports))
    })

  const report = (phoneNumberId: string, item: StatusReport) =>
    Effect.sync(() => {
      const batch = dueReports.get(phoneNumberId)
      if (batch !== undefined) {
        batch.push(item)
        if (batch.length >= STATUS_BATCH_MAX) {
          dueReports.delete(phoneNumberId)
          fork(flushReports(phoneNumberId, batch))
        }
        return
      }
      const fresh = [item]
      dueReports.set(phoneNumberId, fresh)
      const wait = statusBatchMs > 0 ? clock.sleep(Duration.millis(statusBatchMs)) : Effect.yieldNow
      fork(Effect.andThen(wait, flushReports(phoneNumberId, fresh)))
    })

  /** Reports the stages of `record` due at `from` or later. */
  const reportStatuses = (record: OutboundRecord, from = record.acceptedAt) =>
    Effect.gen(function*() {
      const { delivered, read, sent } = config.statusDelays
      const stages: Array<readonly [Exclude<OutboundStatus, "accepted">, number]> = record.failure !== undefined
        ? [["failed", sent]]
        : [["sent", sent], ["delivered", delivered], ...(read === undefined ? [] : [["read", read] as const])]
      for (const [status, delay] of stages) {
        const at = record.acceptedAt + delay
        if (at < from) continue
        yield* sleepUntil(at)
        if (!state.numbers.has(record.phoneNumberId)) return
        yield* report(record.phoneNumberId, statusReport(record, status, at))
      }
    })

  const reportReview = (templateId: string, generation: number, at: number) =>
    Effect.gen(function*() {
      yield* sleepUntil(at)
      const template = state.templates.get(templateId)
      if (template === undefined || template.deleted || template.generation !== generation) return
      // A timer may wake a millisecond before the wall clock reaches `at`: the review is over at `at` regardless.
      refreshTemplate(template, Math.max(now(), at))
      yield* post(template.businessAccountId, templateEvent(template, template.status))
    })

  return {
    post,
    reportStatuses,
    reportReview,
    /** Waits until a sink has been set (at once if one was given). */
    sinkSet: sinkSet.await,
    /** Where webhooks go from now on (`undefined`: nowhere). */
    setSink: (next: WebhookSink | undefined) => {
      sink = next
      if (next !== undefined) sinkSet.openUnsafe()
    }
  }
}
