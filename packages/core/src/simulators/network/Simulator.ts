/**
 * An in-process model of the messaging network that behaves like it: it
 * answers the network's API (`handle`, on the network's own paths, checking
 * bearer tokens), validates envelopes and answers the network's error objects,
 * issues message ids, keeps the 24-hour customer-service window, the
 * per-number throughput and the pair rate, reviews templates after a delay,
 * stores media, and reports statuses (sent → delivered → read, or failed with
 * errors) as signed webhooks in the network's format to a pluggable sink.
 * Simulated contacts write in with `inbound`; `outbox` lists what reached them.
 *
 * Time is Effect's `Clock`, read from the clock the layer was built with:
 * under `TestClock` every delay (status reports, template review, windows,
 * rate limits) moves only with `TestClock.adjust`.
 *
 * Transports: `Transport.ts` (in process, as an `HttpClient`, for the
 * `MessagingNetwork` port) and `@parley/http-node`'s `SimulatorServer` (HTTP).
 *
 * This module holds the service and its state; the API is decided in
 * `Routes.ts` and the modules it names, webhooks go out through
 * `Webhooks.ts`, and a contact writes in through `Inbound.ts`.
 *
 * Durability: with a `SimulatorStore` in context the simulator starts from
 * what the store holds and writes every change through it before it answers
 * (a send is "accepted" only once the store has it), so a restarted host
 * finds the network as it left it: windows open, templates reviewed, media
 * stored, outboxes listing what contacts received. Status reports still due,
 * and those due in the 10 minutes before the start (the stopped process may
 * not have delivered them), and template reviews still pending are scheduled
 * again at start, to go out once a sink is set; other webhooks waiting for a
 * retry when the process stopped are not. Without a store nothing outlives the
 * layer.
 */
import { Clock, Context, Effect, Exit, FiberSet, Layer, Option } from "effect"
import { SimulatorStore, type SimulatorStoreError } from "../../ports/SimulatorStore.ts"
import * as GroupCommit from "../../shared/GroupCommit.ts"
import { Ids } from "../../shared/Ids.ts"
import { restore, takeChanges } from "./Durability.ts"
import { flowCategories, flowView } from "./Flows.ts"
import { decideInbound, type InboundInput, type InboundResult } from "./Inbound.ts"
import {
  type FlowRecord,
  normalizePhone,
  numericId,
  type OutboundStatus,
  type SimulatedNumberInput,
  SimState
} from "./Model.ts"
import { errorBody, simError, SimulatorInputError, statusOf, unknownNumber } from "../../network/ErrorCodes.ts"
import { connectNumber } from "./Numbers.ts"
import { outboundStatus } from "./Outbound.ts"
import { envelope, templateEvent } from "./Payloads.ts"
import type { SimRequest, SimResponse, WebhookSink } from "./Protocol.ts"
import { OUTBOX_LIMIT, route, type SimConfig } from "./Routes.ts"
import { authorizeSignup, SIGNUP_CATALOGUE, type SignupAnswer, type SignupBusiness, type SignupChoice } from "./Signup.ts"
import { refreshTemplate } from "./TemplateManagement.ts"
import { makeWebhooks } from "./Webhooks.ts"

export type { SimulatedNumberInput } from "./Model.ts"
export type { SimBody, SimFile, SimRequest, SimResponse, WebhookSink } from "./Protocol.ts"

/** How far back, at a start, status reports a stopped process may have owed are delivered. */
const REPORT_CATCH_UP_MS = 10 * 60 * 1000

export interface NetworkSimulatorOptions {
  /** Signs every webhook (`X-Hub-Signature-256`); Parley's ingestion checks it with the same secret. */
  readonly appSecret: string
  /** Where webhooks go; none until `setSink`. */
  readonly sink?: WebhookSink | undefined
  /** How long templates stay `PENDING`; default 5 seconds. */
  readonly templateReviewMs?: number | undefined
  /** How long a display name change stays `PENDING_REVIEW`, and then approved before it shows; default 5 seconds. */
  readonly nameReviewMs?: number | undefined
  /** After acceptance; default sent 200 ms, delivered 1 s, read 3 s (`read: null`: contacts never read). */
  readonly statusDelays?: {
    readonly sent?: number | undefined
    readonly delivered?: number | undefined
    readonly read?: number | null | undefined
  } | undefined
  /**
   * How long a due status report waits for others of its number, so that one
   * webhook carries many (the network batches status changes too); default 0:
   * only reports due at the same moment share a webhook. At most
   * `STATUS_BATCH_MAX` reports go in one webhook.
   */
  readonly statusBatchMs?: number | undefined
  /** Delays of the retries of a failed webhook delivery; default 1, 2, 4, 8 and 16 seconds. */
  readonly retryDelaysMs?: ReadonlyArray<number> | undefined
  /** The app that receives the accounts' webhooks (as `subscribed_apps` reports it). */
  readonly appId?: string | undefined
  readonly appName?: string | undefined
  /** Messages a number's outbox remembers (the oldest are forgotten first); default 10,000. */
  readonly outboxLimit?: number | undefined
}

/** The simulated network's app (subscribed to accounts' webhooks, exchanging signup codes) unless `appId` says otherwise. */
export const SIMULATOR_APP_ID = "100000000000099"

export type { OutboxEntry } from "../../network/SimulatedNetwork.ts"
import type { OutboxEntry } from "../../network/SimulatedNetwork.ts"

export interface NumberPatch {
  readonly qualityRating?: string | undefined
  readonly messagingLimitTier?: string | undefined
  readonly status?: string | undefined
  readonly nameStatus?: string | undefined
  readonly verifiedName?: string | undefined
  readonly throughputPerSecond?: number | undefined
  /** Pair rate: burst size and refill interval (benchmarks raise them). */
  readonly pairBurst?: number | undefined
  readonly pairIntervalMs?: number | undefined
}

const qualityRank: Readonly<Record<string, number>> = { RED: 0, YELLOW: 1, GREEN: 2 }
const tierRank = ["TIER_50", "TIER_250", "TIER_1K", "TIER_2K", "TIER_10K", "TIER_100K", "TIER_UNLIMITED"]

const encoder = new TextEncoder()
const jsonContentType = "application/json; charset=UTF-8"

export class NetworkSimulator extends Context.Service<NetworkSimulator, {
  /** The network's API: one request on its own paths, answered as the network answers it. */
  readonly handle: (request: SimRequest) => Effect.Effect<SimResponse>
  /** Connects a number (and creates its account and token); registering it again updates it. */
  readonly registerNumber: (input: SimulatedNumberInput) => Effect.Effect<void>
  /** Changes facts of a number; a quality or tier change posts `phone_number_quality_update`. */
  readonly updateNumber: (phoneNumberId: string, patch: NumberPatch) => Effect.Effect<void, SimulatorInputError>
  /** A simulated contact writes: a signed inbound webhook, and the contact's window opens. */
  readonly inbound: (phoneNumberId: string, input: InboundInput) => Effect.Effect<InboundResult, SimulatorInputError>
  /** What the network accepted for the number's contacts, oldest first. */
  readonly outbox: (phoneNumberId: string) => Effect.Effect<ReadonlyArray<OutboxEntry>>
  /** Where webhooks go from now on (`undefined`: nowhere). */
  readonly setSink: (sink: WebhookSink | undefined) => Effect.Effect<void>
  /** Makes a contact (phone number or business-scoped id) undeliverable (131026) or deliverable again. */
  readonly setReachable: (contact: string, reachable: boolean) => Effect.Effect<void>
  /** Creates an interactive form of an account; answers its id. */
  readonly createFlow: (
    businessAccountId: string,
    input: { readonly name: string; readonly categories?: ReadonlyArray<string> | undefined }
  ) => Effect.Effect<string, SimulatorInputError>
  /** A form as the network reports it (`GET /<flow_id>`). */
  readonly flow: (flowId: string) => Effect.Effect<ReturnType<typeof flowView> | undefined>
  /** The token stops working (190, subcode 463), as an expired token does. */
  readonly expireToken: (accessToken: string) => Effect.Effect<void>
  /** Moves an existing template to a status (`PAUSED`, `DISABLED`, back to `APPROVED`...), with its webhook. */
  readonly setTemplateStatus: (templateId: string, status: string) => Effect.Effect<void, SimulatorInputError>
  /** The business accounts and numbers the signup dialog offers after the simulated login. */
  readonly signupCatalogue: ReadonlyArray<SignupBusiness>
  /**
   * The customer's choice in the signup dialog: a one-time code for the
   * number (registering it on the network, or provisioning a new one in
   * `provisionCountry`), or the network's refusal.
   */
  readonly authorizeSignup: (choice: SignupChoice) => Effect.Effect<SignupAnswer, SimulatorInputError>
}>()("@parley/core/messaging/simulator/NetworkSimulator") {
  /**
   * The simulator; needs `Ids` (message, media and template ids), and keeps
   * its state in the `SimulatorStore` when one is in context. Its timers stop
   * with the layer.
   */
  static readonly layer = (options: NetworkSimulatorOptions): Layer.Layer<NetworkSimulator, never, Ids> =>
    Layer.effect(NetworkSimulator, make(options))
}

const make = (options: NetworkSimulatorOptions) =>
  Effect.gen(function*() {
    const ids = yield* Ids
    // The clock the layer was built with: every delay and every "now" reads it, whoever calls.
    const clock = yield* Clock.Clock
    const fork = yield* FiberSet.makeRuntime<never>()
    const state = new SimState(options.appSecret + ":urls")
    const store = Option.getOrUndefined(yield* Effect.serviceOption(SimulatorStore))
    const config: SimConfig = {
      templateReviewMs: options.templateReviewMs ?? 5_000,
      nameReviewMs: options.nameReviewMs ?? 5_000,
      statusDelays: {
        sent: options.statusDelays?.sent ?? 200,
        delivered: options.statusDelays?.delivered ?? 1_000,
        read: options.statusDelays?.read === null ? undefined : options.statusDelays?.read ?? 3_000
      },
      appId: options.appId ?? SIMULATOR_APP_ID,
      appSecret: options.appSecret,
      appName: options.appName ?? "Parley",
      outboxLimit: options.outboxLimit ?? OUTBOX_LIMIT
    }
    const now = () => clock.currentTimeMillisUnsafe()
    const { post, reportReview, reportStatuses, setSink, sinkSet } = makeWebhooks({
      state,
      config,
      clock,
      fork,
      sink: options.sink,
      retryDelays: options.retryDelaysMs ?? [1_000, 2_000, 4_000, 8_000, 16_000],
      statusBatchMs: options.statusBatchMs ?? 0
    })

    // -------------------------------------------------------------------------------------------
    // Durability

    /** Saves what changed; one writer, so saves land in the order the changes were made. */
    const save = Effect.suspend(() => {
      const taken = store === undefined ? undefined : takeChanges(state)
      if (taken === undefined) return Effect.void
      // The objects are read again when the statement is built: never older than taken, and a later
      // change to one of them is saved again by the next save anyway.
      return Effect.tapError(store!.save(taken.changes), () => Effect.sync(taken.putBack))
    })
    // Requests that change the network while a save is under way share the next one.
    const submitSave = yield* GroupCommit.make<void, void, SimulatorStoreError>({
      max: 100_000,
      many: (items) => Effect.map(Effect.exit(save), (exit) => items.map(() => exit)),
      one: () => save
    })
    /** Waits until the changes made so far are stored (at once when there are none). */
    const saved = Effect.suspend(() => (state.hasChanges ? submitSave(undefined) : Effect.void))
    /** For the control surface: a store that fails there is a defect of the test or host driving it. */
    const savedOrDie = Effect.orDie(saved)

    if (store !== undefined) {
      state.durable = true
      restore(state, yield* Effect.orDie(store.load), config.outboxLimit)
      const at = now()
      // What the stopped process owed goes out once a host takes webhooks (its sink is set just after this start).
      for (const template of state.templates.values()) {
        if (!template.deleted && template.review !== undefined) {
          fork(Effect.andThen(sinkSet, reportReview(template.id, template.generation, template.review.at)))
        }
      }
      // Like the network retrying webhooks a stopped host could not take, the reports due in the last minutes before
      // this start are delivered (again: at least once), the rest when due.
      for (const record of state.outbound.values()) {
        fork(Effect.andThen(sinkSet, reportStatuses(record, at - REPORT_CATCH_UP_MS)))
      }
      yield* savedOrDie
    }

    // -------------------------------------------------------------------------------------------
    // The API

    const render = (status: number, json: unknown): SimResponse => ({
      status,
      contentType: jsonContentType,
      body: encoder.encode(JSON.stringify(json))
    })

    const handle = (request: SimRequest): Effect.Effect<SimResponse> =>
      Effect.gen(function*() {
        const uuid = yield* ids.uuid
        const outcome = route(state, config, request, { now: now(), uuid, baseUrl: request.baseUrl })
        // Nothing is answered before the store has it: a host killed right after a send was accepted
        // still finds it delivered.
        const stored = yield* Effect.exit(saved)
        for (const followup of outcome.followups) {
          if (followup._tag === "Statuses") {
            const record = state.outbound.get(followup.messageId)
            if (record !== undefined) fork(reportStatuses(record))
          } else if (followup._tag === "TemplateReview") {
            fork(reportReview(followup.templateId, followup.generation, followup.at))
          } else {
            fork(post(followup.businessAccountId, envelope(followup.businessAccountId, followup.field, followup.value)))
          }
        }
        if (Exit.isFailure(stored)) {
          yield* Effect.logWarning("NetworkSimulator: the store failed; answering temporarily unavailable", stored.cause)
          return render(503, errorBody(simError(2, "The network could not store the request; retry later"), state.nextTraceId()))
        }
        if (outcome.error !== undefined) return render(statusOf(outcome.error), errorBody(outcome.error, state.nextTraceId()))
        if (outcome.bytes !== undefined) {
          return { status: outcome.status, contentType: outcome.bytes.contentType, body: outcome.bytes.body }
        }
        return render(outcome.status, outcome.json)
      })

    // -------------------------------------------------------------------------------------------
    // Control surface

    const registerNumber = (input: SimulatedNumberInput) =>
      Effect.sync(() => connectNumber(state, input)).pipe(Effect.andThen(savedOrDie))

    const updateNumber = (phoneNumberId: string, patch: NumberPatch) =>
      Effect.gen(function*() {
        const number = state.numbers.get(phoneNumberId)
        if (number === undefined) return yield* unknownNumber(phoneNumberId)
        const before = { quality: number.qualityRating, tier: number.messagingLimitTier }
        if (patch.qualityRating !== undefined) number.qualityRating = patch.qualityRating
        if (patch.messagingLimitTier !== undefined) number.messagingLimitTier = patch.messagingLimitTier
        if (patch.status !== undefined) number.status = patch.status
        if (patch.nameStatus !== undefined) number.nameStatus = patch.nameStatus
        if (patch.verifiedName !== undefined) number.verifiedName = patch.verifiedName
        if (patch.throughputPerSecond !== undefined) number.throughputPerSecond = patch.throughputPerSecond
        if (patch.pairBurst !== undefined) number.pairBurst = patch.pairBurst
        if (patch.pairIntervalMs !== undefined) number.pairIntervalMs = patch.pairIntervalMs
        state.touch("number", number.phoneNumberId)
        yield* savedOrDie
        if (before.quality === number.qualityRating && before.tier === number.messagingLimitTier) return
        const worse = (qualityRank[number.qualityRating] ?? 0) < (qualityRank[before.quality] ?? 0) ||
          tierRank.indexOf(number.messagingLimitTier) < tierRank.indexOf(before.tier)
        yield* post(
          number.businessAccountId,
          envelope(number.businessAccountId, "phone_number_quality_update", {
            display_phone_number: number.displayPhoneNumber.replace(/\D/g, ""),
            event: worse ? "DOWNGRADE" : "UPGRADE",
            current_limit: number.messagingLimitTier
          })
        )
      })

    const inbound = (phoneNumberId: string, input: InboundInput) =>
      Effect.gen(function*() {
        const uuids = [yield* ids.uuid, yield* ids.uuid] as const
        const decided = decideInbound(state, now(), phoneNumberId, input, uuids)
        // The window is open for good before the business hears of the message (and may answer it).
        yield* savedOrDie
        if (decided instanceof SimulatorInputError) return yield* decided
        if (decided.blocked) return { id: decided.id, payload: decided.payload, delivered: false, blocked: true }
        const delivered = yield* post(decided.number.businessAccountId, decided.payload)
        return { id: decided.id, payload: decided.payload, delivered, blocked: false }
      })

    const outbox = (phoneNumberId: string) =>
      Effect.sync(() => {
        const at = now()
        return (state.outboxes.get(phoneNumberId)?.toArray() ?? []).map((record): OutboxEntry => ({
          id: record.id,
          phoneNumberId: record.phoneNumberId,
          to: record.recipient.waId,
          userId: record.recipient.userId,
          type: record.type,
          envelope: record.envelope,
          raw: record.raw,
          version: record.version,
          acceptedAt: record.acceptedAt,
          status: outboundStatus(config, record, at)
        }))
      })

    const createFlow = (
      businessAccountId: string,
      input: { readonly name: string; readonly categories?: ReadonlyArray<string> | undefined }
    ) =>
      Effect.gen(function*() {
        if (!state.accounts.has(businessAccountId)) {
          return yield* new SimulatorInputError({ message: `unknown business account ${businessAccountId}` })
        }
        const categories = [...(input.categories ?? ["OTHER"])]
        if (!categories.every((c) => (flowCategories as ReadonlyArray<string>).includes(c))) {
          return yield* new SimulatorInputError({ message: `categories must be among ${flowCategories.join(", ")}` })
        }
        const flow: FlowRecord = {
          id: numericId(yield* ids.uuid),
          businessAccountId,
          name: input.name,
          categories,
          endpointUri: undefined,
          applicationId: undefined
        }
        state.flows.set(flow.id, flow)
        state.touch("flow", flow.id)
        yield* savedOrDie
        return flow.id
      })

    const setTemplateStatus = (templateId: string, status: string) =>
      Effect.gen(function*() {
        const template = state.templates.get(templateId)
        if (template === undefined || template.deleted) {
          return yield* new SimulatorInputError({ message: `unknown template ${templateId}` })
        }
        refreshTemplate(template, now())
        const event = template.status === "PAUSED" && status === "APPROVED" ? "REINSTATED" : status
        template.status = status
        template.review = undefined
        template.generation++
        state.touch("template", template.id)
        yield* savedOrDie
        yield* post(template.businessAccountId, templateEvent(template, event))
      })

    return NetworkSimulator.of({
      handle,
      registerNumber,
      updateNumber,
      inbound,
      outbox,
      setSink: (next) => Effect.sync(() => setSink(next)),
      setReachable: (contact, reachable) =>
        Effect.sync(() => {
          const key = normalizePhone(contact) ?? contact
          if (reachable) state.unreachable.delete(key)
          else state.unreachable.add(key)
          state.touch("unreachable", key)
        }).pipe(Effect.andThen(savedOrDie)),
      createFlow,
      flow: (flowId) => Effect.sync(() => {
        const flow = state.flows.get(flowId)
        return flow === undefined ? undefined : flowView(flow)
      }),
      expireToken: (accessToken) =>
        Effect.sync(() => {
          const token = state.tokens.get(accessToken)
          if (token !== undefined) token.expired = true
          state.touch("token", accessToken)
        }).pipe(Effect.andThen(savedOrDie)),
      setTemplateStatus,
      signupCatalogue: SIGNUP_CATALOGUE,
      authorizeSignup: (choice) => authorizeSignup(state, { uuid: ids.uuid, now, registerNumber }, choice)
    })
  })

