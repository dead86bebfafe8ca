/**
 * Upstream webhook ingestion (decisions 4.11): the GET handshake, the POST
 * checked by `X-Hub-Signature-256` over the raw bytes and acknowledged once
 * the bytes are stored (the inbox), and the processing the job queue runs
 * afterwards: routing by number, the `upstream.payload` domain event and
 * `webhook_destination_url` forwards, inbound messages (media fetched and
 * kept), statuses, template status reports and quality updates.
 *
 * The HTTP route and the simulator's in-process sink both call `receive`, so
 * the simulator exercises the production path, signature check included.
 */
import { Clock, Context, Effect, Layer, Option, Predicate, Redacted, Schema } from "effect"
import { OptionalText } from "../shared/Json.ts"
import { createHash, timingSafeEqual } from "node:crypto"
import { JobQueue } from "../ports/JobQueue.ts"
import { requestTranscript, TranscriptionModel } from "./VoiceNotes.ts"
import { MessageConfigsRepo } from "./numbers/MessageConfigsRepo.ts"
import { MessagingNetwork } from "../network/MessagingNetwork.ts"
import { MessagesRepo, UpstreamInboxRepo } from "./MessagingRepo.ts"
import { type DomainEvent, Outbox } from "../ports/Outbox.ts"
import { DomainEventInterest } from "../outbox/Interest.ts"
import { Transactor } from "../ports/Transactor.ts"
import { Forbidden, NotFound, Unauthorized } from "../shared/ApiError.ts"
import { groupBy } from "../shared/Collections.ts"
import { Ids } from "../shared/Ids.ts"
import { LiveNumbers } from "./numbers/LiveNumbers.ts"
import { MessageConfigs } from "./numbers/MessageConfigs.ts"
import type { MessageConfigRecord } from "./numbers/MessageConfig.ts"
import { phoneDigits } from "./numbers/MessageConfig.ts"
import { UPSTREAM_PAYLOAD, type UpstreamPayloadEvent } from "./DomainEvents.ts"
import type { FetchedMedia, InboundInput } from "./InboundRecording.ts"
import { Messaging } from "./Messaging.ts"
import { Templates } from "./templates/Templates.ts"
import { type InboxEntry, MEDIA_TYPES } from "./Message.ts"
import { type ForwardJob, requestInboxProcessing, UPSTREAM_FORWARD_QUEUE } from "./Queues.ts"
import { UpstreamSettings } from "./Upstream.ts"
import { ConversationalSends } from "./ConversationalSends.ts"
import { decodeUpstream, type MessagesValue, senderOf, sendersOf, type UpstreamChange, type UpstreamMessage } from "./UpstreamPayload.ts"
import { LogRecorder } from "../logs/LogRecorder.ts"
import { upstreamChangeEntries } from "../logs/Sources.ts"
import { QualityChangeValue, TemplateStatusChangeValue, verifyHubSignature } from "../network/Webhook.ts"

/** What ingestion reads of a message's media object, each field absent when empty. */
const MediaTexts = Schema.Struct({ id: OptionalText, mime_type: OptionalText, filename: OptionalText })
const mediaTexts = Schema.decodeUnknownSync(MediaTexts)

/** The largest POST the network sends is 3 MB (decisions 4.11); the Platform's limit is 10 MB (8.4). */
export const MAX_UPSTREAM_BODY_BYTES = 10 * 1024 * 1024

/** The most messages a POST may carry to be recorded in the request that acknowledges it. */
const INLINE_MESSAGES_MAX = 10
/** The most status reports a POST applies before its acknowledgement; more go to the inbox job. */
const INLINE_STATUSES_MAX = 100

/** Updates of one POST applied at a time (each in its own transaction). */
const PAYLOAD_CONCURRENCY = 4


const decodeTemplateStatus = Schema.decodeUnknownOption(TemplateStatusChangeValue)
const decodeQuality = Schema.decodeUnknownOption(QualityChangeValue)

/** Equal strings, compared in constant time (over their digests, so lengths do not show). */
const sameSecret = (given: string, expected: string) =>
  timingSafeEqual(createHash("sha256").update(given).digest(), createHash("sha256").update(expected).digest())

const invalidSignature = () => new Unauthorized({ error: "Invalid signature" })

export interface HandshakeQuery {
  readonly mode?: string | undefined
  readonly verifyToken?: string | undefined
  readonly challenge?: string | undefined
}

/** What processing one acknowledged POST did, for logs and tests. */
export interface ProcessSummary {
  readonly messages: number
  readonly statuses: number
  readonly duplicates: number
  readonly dropped: number
  readonly failures: number
}

export class UpstreamIngestion extends Context.Service<UpstreamIngestion, {
  /** GET: the challenge when `hub.mode` is `subscribe` and the token matches; 403 otherwise. */
  readonly handshake: (query: HandshakeQuery, msgConfigId?: string) => Effect.Effect<string, Forbidden>
  /**
   * POST: checks the signature of the raw bytes (the config's app secret on
   * its own path, the host's otherwise), stores them and queues their
   * processing; 401 for a missing or wrong signature (nothing stored), 404
   * for an unknown config path.
   */
  readonly receive: (
    body: Uint8Array,
    signature: string | undefined,
    msgConfigId?: string
  ) => Effect.Effect<InboxEntry, Unauthorized | NotFound>
  /**
   * Processes a stored POST (the job). Each update is applied in its own
   * transaction and deduplicated, so a retry redoes only what failed. A
   * failure fails the whole run unless `final`, when it is logged and the
   * entry is closed.
   */
  readonly process: (inboxId: string, options?: { readonly final?: boolean | undefined }) => Effect.Effect<ProcessSummary, unknown>
}>()("@parley/core/messaging/UpstreamIngestion") {
  static readonly layer = Layer.effect(
    UpstreamIngestion,
    Effect.gen(function*() {
      const settings = yield* UpstreamSettings
      const configs = yield* MessageConfigsRepo
      const liveNumbers = yield* LiveNumbers
      const numbers = yield* MessageConfigs
      const inbox = yield* UpstreamInboxRepo
      const templates = yield* Templates
      const stored = yield* MessagesRepo
      const messaging = yield* Messaging
      const network = yield* MessagingNetwork
      const outbox = yield* Outbox
      const jobs = yield* JobQueue
      const tx = yield* Transactor
      const ids = yield* Ids
      const transcriptionModel = yield* TranscriptionModel
      const recorder = yield* LogRecorder
      const conversational = yield* ConversationalSends
      // Messaging built alone (its tests) has no registry of interests: then every event is worth writing, as the
      // registry itself answers when no subscriber declared one.
      const interest = yield* Effect.serviceOption(DomainEventInterest)
      const worthWriting = (event: DomainEvent) =>
        Option.match(interest, { onNone: () => Effect.succeed(true), onSome: (registry) => registry.worthWriting(event) })

      const iso = (ms: number) => new Date(ms).toISOString()
      const now = Effect.map(Clock.currentTimeMillis, iso)

      const handshake = Effect.fn("UpstreamIngestion.handshake")(function*(query: HandshakeQuery, msgConfigId?: string) {
        const refuse = new Forbidden({ error: "Verification failed" })
        if (query.mode !== "subscribe" || query.verifyToken === undefined || query.challenge === undefined) {
          return yield* refuse
        }
        if (msgConfigId === undefined) {
          if (Option.isNone(settings.verifyToken) || !sameSecret(query.verifyToken, Redacted.value(settings.verifyToken.value))) {
            return yield* refuse
          }
          return query.challenge
        }
        const config = yield* configs.findLiveById(msgConfigId)
        if (Option.isNone(config) || config.value.webhook_verify_token === null) return yield* refuse
        if (!sameSecret(query.verifyToken, Redacted.value(config.value.webhook_verify_token))) return yield* refuse
        const at = yield* now
        yield* configs.update({ ...config.value, webhook_verified_at: at, updated_at: at }).pipe(Effect.orDie)
        return query.challenge
      })

      const receive = Effect.fn("UpstreamIngestion.receive")(
        function*(body: Uint8Array, signature: string | undefined, msgConfigId?: string) {
          let secret: Option.Option<Redacted.Redacted<string>> = settings.appSecret
          if (msgConfigId !== undefined) {
            const config = yield* configs.findLiveById(msgConfigId)
            if (Option.isNone(config)) return yield* new NotFound({ error: "Not found" })
            secret = Option.fromNullishOr(config.value.app_secret)
          }
          if (Option.isNone(secret) || !verifyHubSignature(body, signature, Redacted.value(secret.value))) {
            return yield* invalidSignature()
          }
          const entry: InboxEntry = {
            id: yield* ids.uuid,
            msg_config_id: msgConfigId ?? null,
            body,
            signature: signature!.trim(),
            received_at: yield* now,
            fanned_out_at: null,
            processed_at: null,
            senders: []
          }
          const decoded = decodeUpstream(body)
          // A contact's message: its reply is under way from here (broadcasts yield to it, `ConversationalSends`).
                    if (decoded.some((change) => (change.messages?.messages.length ?? 0) > 0)) yield* conversational.arrived
          const inline = yield* receiveInline(entry, decoded).pipe(
            Effect.catchCause((cause) => Effect.as(Effect.logDebug("An upstream POST could not be recorded at once; queued", cause), false))
          )
          if (inline) return entry
          // Who wrote, for the 24-hour window of a message acknowledged but not recorded yet (`Outbound`).
          yield* inbox.insert({ ...entry, senders: sendersOf(decoded) })
          // Stored: the POST is acknowledged whatever happens next. A lost job is queued again by maintenance.
          yield* requestInboxProcessing(jobs, entry.id).pipe(
            Effect.catchCause((cause) => Effect.logWarning("Could not queue an upstream payload; maintenance will", cause))
          )
          return entry
        }
      )

      // -------------------------------------------------------------------------------------------
      // Processing

      /** Numbers a change speaks of: its `metadata.phone_number_id`, or the account's live numbers. */
      const numbersOf = (change: UpstreamChange) =>
        Effect.gen(function*() {
          if (change.messages !== undefined) {
            const pnid = change.messages.phoneNumberId
            return pnid === undefined ? [] : Option.toArray(yield* liveNumbers.byPhoneNumberId(pnid))
          }
          return yield* configs.listByBusinessAccount(change.accountId)
        })

      /** Configs the POST may speak for: on a config's own path, only numbers of that config's project. */
      const allowed = (entry: InboxEntry, owner: Option.Option<MessageConfigRecord>) => (config: MessageConfigRecord) =>
        entry.msg_config_id === null || (Option.isSome(owner) && owner.value.project_id === config.project_id)

      const fetchMedia = (config: MessageConfigRecord, message: UpstreamMessage) =>
        Effect.gen(function*() {
          const type = message.texts.type ?? ""
          const content = message.raw[type]
          if (!MEDIA_TYPES.includes(type) || !Predicate.isObject(content)) return undefined
          const texts = mediaTexts(content)
          const mediaId = texts.id
          if (mediaId === undefined) return undefined
          const access = { accessToken: config.access_token }
          const info = yield* network.getMedia(access, mediaId, { phoneNumberId: config.phone_number_id })
          const file = yield* network.downloadMedia(access, info.value.url)
          return {
            network_media_id: mediaId,
            bytes: file.value,
            content_type: texts.mime_type ?? info.value.mime_type,
            filename: texts.filename
          } satisfies FetchedMedia
        })

      const processMessages = (config: MessageConfigRecord, value: MessagesValue, final: boolean, counts: Counts) =>
        Effect.gen(function*() {
          counts.dropped += value.malformed
          // A contact's messages keep their order, in one transaction routed together; contacts run side by side.
          yield* Effect.forEach(groupBy(value.messages, senderOf), (group) => {
            const step = Effect.gen(function*() {
              const inputs: Array<InboundInput> = []
              for (const message of group) {
                // A duplicate is dropped before its media is fetched again (recording checks again, under a lock).
                if (
                  MEDIA_TYPES.includes(message.texts.type ?? "") &&
                  Option.isSome(yield* stored.findByNetworkId(config.phone_number_id, message.texts.id!))
                ) {
                  counts.duplicates++
                  continue
                }
                const media = yield* fetchMedia(config, message).pipe(
                  Effect.catchCause((cause) =>
                    final
                      ? Effect.as(Effect.logWarning("Inbound media could not be fetched; kept without it", cause), undefined)
                      : Effect.failCause(cause)
                  )
                )
                inputs.push({ message: message.raw, texts: message.texts, contact: message.contact, media })
              }
              if (inputs.length === 0) return
              for (const outcome of yield* messaging.recordInboundAll(config, inputs)) {
                if (outcome._tag === "Recorded") {
                  counts.messages++
                  // The transcript of a voice note comes later, from a job (`ai/VoiceNotes.ts`).
                  yield* requestTranscript(jobs, transcriptionModel, outcome.message)
                }
                else if (outcome._tag === "Duplicate") counts.duplicates++
                else counts.dropped++
              }
            })
            return guarded(step, counts)
          }, { concurrency: PAYLOAD_CONCURRENCY, discard: true })
          // Every status of the change in one transaction (the network sends many per webhook under load).
          const statuses = value.statuses
          const objects = statuses.filter(Predicate.isObject)
          counts.dropped += statuses.length - objects.length
          if (objects.length > 0) {
            yield* guarded(
              Effect.map(messaging.applyStatuses(config, objects), (outcomes) => {
                for (const outcome of outcomes) {
                  if (outcome._tag === "Duplicate") counts.duplicates++
                  else counts.statuses++
                }
              }),
              counts
            )
          }
          for (const error of value.errors) {
            yield* Effect.logWarning("The network reported an error for a number").pipe(
              Effect.annotateLogs({ phone_number_id: config.phone_number_id, error: JSON.stringify(error) })
            )
          }
        })

      interface Counts {
        messages: number
        statuses: number
        duplicates: number
        dropped: number
        failures: number
      }

      /** One update: a failure is counted and logged, so the rest of the POST still goes through. */
      const guarded = (step: Effect.Effect<void, unknown>, counts: Counts) =>
        Effect.catchCause(step, (cause) =>
          Effect.sync(() => void counts.failures++).pipe(
            Effect.andThen(Effect.logWarning("An upstream update failed", cause))
          ))

      const processTemplateStatus = (accountId: string, value: unknown, counts: Counts) =>
        Effect.gen(function*() {
          const decoded = decodeTemplateStatus(value)
          if (Option.isNone(decoded)) {
            counts.dropped++
            return
          }
          const v = decoded.value
          yield* inbox.recordTemplateStatus({
            id: yield* ids.uuid,
            business_account_id: accountId,
            template_id: String(v.message_template_id),
            template_name: v.message_template_name,
            language: v.message_template_language,
            event: v.event,
            reason: v.reason ?? null,
            category: v.message_template_category ?? null,
            received_at: yield* now
          })
          yield* templates.statusReported(accountId, String(v.message_template_id), v.event)
        })

      const processQuality = (accountId: string, value: unknown, counts: Counts) =>
        Effect.gen(function*() {
          const decoded = decodeQuality(value)
          if (Option.isNone(decoded)) {
            counts.dropped++
            return
          }
          const digits = phoneDigits(decoded.value.display_phone_number)
          for (const config of yield* configs.listByBusinessAccount(accountId)) {
            if (config.display_phone_number_normalized !== digits) continue
            const at = yield* now
            const updated = yield* configs.update({
              ...config,
              facts: { ...config.facts, throughput_tier: decoded.value.current_limit },
              updated_at: at
            }).pipe(Effect.orDie)
            // The webhook names the limit; the rating itself comes from the network.
            if (Option.isSome(updated)) yield* numbers.refreshFacts(updated.value)
          }
        })

      /** A change with the numbers it reaches. */
      type RoutedChange = UpstreamChange & { readonly configs: ReadonlyArray<MessageConfigRecord> }

      /** The numbers each change speaks for (on a config's own path, only that project's). */
      const routeChanges = Effect.fnUntraced(function*(entry: InboxEntry, changes: ReadonlyArray<UpstreamChange>) {
        const owner = entry.msg_config_id === null ? Option.none() : yield* configs.findLiveById(entry.msg_config_id)
        const routed: Array<RoutedChange> = []
        for (const change of changes) routed.push({ ...change, configs: (yield* numbersOf(change)).filter(allowed(entry, owner)) })
        return routed
      })

      const targetsOf = (changes: ReadonlyArray<RoutedChange>) => {
        const targets = new Map<string, MessageConfigRecord>()
        for (const change of changes) for (const config of change.configs) targets.set(config.id, config)
        return [...targets.values()]
      }

      /** The `upstream.payload` domain event of a POST that reached `targets` (none when it reached no number). */
      const payloadEvent = Effect.fnUntraced(function*(entry: InboxEntry, targets: ReadonlyArray<MessageConfigRecord>, at: string) {
        if (targets.length === 0) return undefined
        const projects = new Set(targets.map((c) => c.project_id))
        return {
          id: yield* ids.uuid,
          project_id: projects.size === 1 ? [...projects][0]! : null,
          type: UPSTREAM_PAYLOAD,
          payload: {
            phone_number_ids: [...new Set(targets.map((c) => c.phone_number_id))],
            body_base64: Buffer.from(entry.body).toString("base64")
          } satisfies UpstreamPayloadEvent,
          created_at: at
        } satisfies DomainEvent
      })

      /** Log search: every routed change once per POST, in the project of each number it reached. */
      const logChanges = (entry: InboxEntry, changes: ReadonlyArray<RoutedChange>) =>
        recorder.record(changes.flatMap((change) =>
          change.configs.flatMap((config) =>
            upstreamChangeEntries({
              projectId: config.project_id,
              receivedAt: entry.received_at,
              inboxId: entry.id,
              businessAccountId: change.accountId,
              field: change.field,
              value: change.value,
              phoneNumberId: config.phone_number_id,
              displayPhoneNumber: config.display_phone_number
            })
          )
        ))

      /**
       * The common case in the POST itself (decisions "One hop from the network to the run"): text-like messages for
       * one connected number, with no error, media or fan-out to carry, are recorded and routed in the transaction
       * that stores the acknowledged POST (already processed), so the 200 means recorded and routed; a POST of status
       * reports only is applied the same way (the inbox job's four round trips and its wait saved for each).
       * Answers false, having written nothing, when the POST is not that case: the inbox job takes it.
       */
      const receiveInline = Effect.fnUntraced(function*(entry: InboxEntry, decoded: ReadonlyArray<UpstreamChange>) {
        if (decoded.length === 0) return false
        const changes = yield* routeChanges(entry, decoded)
        const config = changes[0]!.configs[0]
        if (config === undefined || config.webhook_destination_url !== null) return false
        const messages: Array<UpstreamMessage> = []
        const statuses: Array<Record<string, unknown>> = []
        for (const change of changes) {
          const value = change.messages
          if (value === undefined || change.configs.length !== 1 || change.configs[0]!.id !== config.id) return false
          if (value.malformed > 0 || value.errors.length > 0) return false
          if (value.messages.some((m) => MEDIA_TYPES.includes(m.texts.type ?? ""))) return false
          messages.push(...value.messages)
          for (const status of value.statuses) {
            if (!Predicate.isObject(status)) return false
            statuses.push(status)
          }
        }
        // Messages and status reports are recorded in transactions of their own: a POST carrying both goes to the job.
        if (messages.length > 0 && statuses.length > 0) return false
        // A large batch (the network sends up to hundreds of updates a POST) goes to the inbox job: recorded inline, its
        // acknowledgement would wait for every message (100 took ~250 ms, the network's patience is the spec's target).
        // Status reports are applied in bulk (the same statements for one or a hundred).
        if (messages.length > INLINE_MESSAGES_MAX || statuses.length > INLINE_STATUSES_MAX) return false
        if (messages.length === 0 && statuses.length === 0) return false
        const at = yield* now
        const event = yield* payloadEvent(entry, [config], at)
        if (event !== undefined && (yield* worthWriting(event))) return false
        const acknowledged: InboxEntry = { ...entry, fanned_out_at: at, processed_at: at, senders: [] }
        if (statuses.length > 0) yield* messaging.applyStatuses(config, statuses, inbox.insert(acknowledged))
        else {
          yield* messaging.recordInboundAll(
            config,
            messages.map((m) => ({ message: m.raw, texts: m.texts, contact: m.contact })),
            inbox.insert(acknowledged)
          )
        }
        yield* logChanges(entry, changes)
        return true
      })

      const process = Effect.fn("UpstreamIngestion.process")(
        function*(inboxId: string, options?: { readonly final?: boolean | undefined }) {
          const final = options?.final === true
          const counts: Counts = { messages: 0, statuses: 0, duplicates: 0, dropped: 0, failures: 0 }
          const found = yield* inbox.find(inboxId)
          if (Option.isNone(found) || found.value.processed_at !== null) return { ...counts }
          const entry = found.value
          const decoded = decodeUpstream(entry.body)
          if (decoded.length === 0) {
            yield* Effect.logWarning("An upstream payload carried no entries; dropped").pipe(Effect.annotateLogs({ inbox_id: entry.id }))
            yield* inbox.markProcessed(entry.id, yield* now)
            return { ...counts, dropped: 1 }
          }
          // Route every change first: the numbers the POST speaks for.
          const changes = yield* routeChanges(entry, decoded)

          // Fan out once per POST: the raw bytes to `kind: upstream` webhooks (domain event) and destination URLs.
          let fannedOut = entry.fanned_out_at !== null
          if (!fannedOut) {
            const targets = targetsOf(changes)
            for (const config of targets) {
              if (config.webhook_destination_url === null) continue
              yield* jobs.enqueue(UPSTREAM_FORWARD_QUEUE, { inbox_id: entry.id, msg_config_id: config.id } satisfies ForwardJob, {
                dedupeKey: `forward:${entry.id}:${config.id}`,
                retryLimit: 2,
                retryDelayMs: 10_000
              })
            }
            const at = yield* now
            const event = yield* payloadEvent(entry, targets, at)
            // The mark keeps a retry from appending the event twice. With no event to write (no webhook wants it),
            // the forwards' dedupe keys and `processed_at` suffice: the mark waits for a failure (below).
            if (event !== undefined && (yield* worthWriting(event))) {
              yield* tx.withTransaction(Effect.andThen(outbox.append(event), inbox.markFannedOut(entry.id, at)))
              fannedOut = true
            }
            yield* logChanges(entry, changes)
          }

          for (const change of changes) {
            if (change.configs.length === 0) {
              counts.dropped++
              yield* Effect.logInfo("An upstream change for no connected number; dropped").pipe(
                Effect.annotateLogs({ inbox_id: entry.id, field: change.field, business_account_id: change.accountId })
              )
              continue
            }
            switch (change.field) {
              case "messages":
                if (change.messages !== undefined) yield* processMessages(change.configs[0]!, change.messages, final, counts)
                break
              case "message_template_status_update":
                yield* guarded(processTemplateStatus(change.accountId, change.value, counts), counts)
                break
              case "phone_number_quality_update":
                yield* guarded(processQuality(change.accountId, change.value, counts), counts)
                break
              default:
                yield* Effect.logInfo("An upstream change Parley does not act on").pipe(
                  Effect.annotateLogs({ inbox_id: entry.id, field: change.field })
                )
            }
          }
          if (counts.failures > 0 && !final) {
            // The retry must not log the changes (or forward) again.
            if (!fannedOut) yield* inbox.markFannedOut(entry.id, yield* now)
            return yield* Effect.fail(new Error(`${counts.failures} upstream update(s) failed; retrying the payload`))
          }
          yield* inbox.markProcessed(entry.id, yield* now)
          return { ...counts }
        }
      )

      return UpstreamIngestion.of({ handshake, receive, process })
    })
  )
}
