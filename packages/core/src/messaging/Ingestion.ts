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
import { OptionalText, parseJson } from "../shared/Json.ts"
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
import type { FetchedMedia } from "./InboundRecording.ts"
import { Messaging } from "./Messaging.ts"
import { Templates } from "./templates/Templates.ts"
import { type InboxEntry, MEDIA_TYPES } from "./Message.ts"
import { type ForwardJob, requestInboxProcessing, UPSTREAM_FORWARD_QUEUE } from "./Queues.ts"
import { UpstreamSettings } from "./Upstream.ts"
import { inboundMessageTexts } from "./Recording.ts"
import { LogRecorder } from "../logs/LogRecorder.ts"
import { upstreamChangeEntries } from "../logs/Sources.ts"
import { QualityChangeValue, TemplateStatusChangeValue, verifyHubSignature, WebhookContact } from "../network/Webhook.ts"

type Json = Record<string, unknown>

/** What routing reads of an upstream POST's entries, changes and media objects, each field absent when empty. */
const EntryTexts = Schema.Struct({ id: OptionalText })
const ChangeTexts = Schema.Struct({ field: OptionalText })
const MetadataTexts = Schema.Struct({ phone_number_id: OptionalText })
const MediaTexts = Schema.Struct({ id: OptionalText, mime_type: OptionalText, filename: OptionalText })
const entryTexts = Schema.decodeUnknownSync(EntryTexts)
const changeTexts = Schema.decodeUnknownSync(ChangeTexts)
const metadataTexts = Schema.decodeUnknownSync(MetadataTexts)
const mediaTexts = Schema.decodeUnknownSync(MediaTexts)
const array = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])

/** The largest POST the network sends is 3 MB (decisions 4.11); the Platform's limit is 10 MB (8.4). */
export const MAX_UPSTREAM_BODY_BYTES = 10 * 1024 * 1024

/** Updates of one POST applied at a time (each in its own transaction). */
const PAYLOAD_CONCURRENCY = 4


const decoder = new TextDecoder()
const decodeContact = Schema.decodeUnknownOption(WebhookContact)
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
            processed_at: null
          }
          yield* inbox.insert(entry)
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
      const numbersOf = (accountId: string, field: string, value: unknown) =>
        Effect.gen(function*() {
          if (field === "messages" && Predicate.isObject(value) && Predicate.isObject(value["metadata"])) {
            const pnid = metadataTexts(value["metadata"]).phone_number_id
            if (pnid === undefined) return []
            return Option.toArray(yield* liveNumbers.byPhoneNumberId(pnid))
          }
          return yield* configs.listByBusinessAccount(accountId)
        })

      /** Configs the POST may speak for: on a config's own path, only numbers of that config's project. */
      const allowed = (entry: InboxEntry, owner: Option.Option<MessageConfigRecord>) => (config: MessageConfigRecord) =>
        entry.msg_config_id === null || (Option.isSome(owner) && owner.value.project_id === config.project_id)

      const fetchMedia = (config: MessageConfigRecord, message: Json) =>
        Effect.gen(function*() {
          const type = inboundMessageTexts(message).type ?? ""
          const content = message[type]
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

      const processMessages = (config: MessageConfigRecord, value: Json, final: boolean, counts: Counts) =>
        Effect.gen(function*() {
          const contacts = array(value["contacts"]).flatMap((c) => Option.toArray(decodeContact(c)))
          const contactOf = (message: Json) => {
            const texts = inboundMessageTexts(message)
            return contacts.find((c) =>
              (c.wa_id !== undefined && c.wa_id === texts.from) ||
              (c.user_id !== undefined && c.user_id === texts.from_user_id)
            ) ?? (contacts.length === 1 ? contacts[0] : undefined)
          }

          // Updates of one contact (messages) or of one message (statuses) keep their order; the rest run side by side.
          const byContact = groupBy(array(value["messages"]), (raw) => {
            if (!Predicate.isObject(raw)) return ""
            const texts = inboundMessageTexts(raw)
            return texts.from ?? texts.from_user_id ?? ""
          })
          yield* Effect.forEach(byContact, (group) =>
            Effect.forEach(group, (raw) => {
              const texts = Predicate.isObject(raw) ? inboundMessageTexts(raw) : undefined
              if (!Predicate.isObject(raw) || texts?.id === undefined) return Effect.sync(() => void counts.dropped++)
              const networkId = texts.id
              const step = Effect.gen(function*() {
                // A duplicate is dropped before its media is fetched again (recording checks again, under a lock).
                const type = texts.type ?? ""
                if (MEDIA_TYPES.includes(type) && Option.isSome(yield* stored.findByNetworkId(config.phone_number_id, networkId))) {
                  counts.duplicates++
                  return
                }
                const media = yield* fetchMedia(config, raw).pipe(
                  Effect.catchCause((cause) =>
                    final
                      ? Effect.as(Effect.logWarning("Inbound media could not be fetched; kept without it", cause), undefined)
                      : Effect.failCause(cause)
                  )
                )
                const outcome = yield* messaging.recordInbound(config, { message: raw, contact: contactOf(raw), media })
                if (outcome._tag === "Recorded") {
                  counts.messages++
                  // The transcript of a voice note comes later, from a job (`ai/VoiceNotes.ts`).
                  yield* requestTranscript(jobs, transcriptionModel, outcome.message)
                }
                else if (outcome._tag === "Duplicate") counts.duplicates++
                else counts.dropped++
              })
              return guarded(step, counts)
            }, { discard: true }), { concurrency: PAYLOAD_CONCURRENCY, discard: true })
          // Every status of the change in one transaction (the network sends many per webhook under load).
          const statuses = array(value["statuses"])
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
          for (const error of array(value["errors"])) {
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

      const process = Effect.fn("UpstreamIngestion.process")(
        function*(inboxId: string, options?: { readonly final?: boolean | undefined }) {
          const final = options?.final === true
          const counts: Counts = { messages: 0, statuses: 0, duplicates: 0, dropped: 0, failures: 0 }
          const found = yield* inbox.find(inboxId)
          if (Option.isNone(found) || found.value.processed_at !== null) return { ...counts }
          const entry = found.value
          const parsed = parseJson(decoder.decode(entry.body))
          const entries = Option.isSome(parsed) && Predicate.isObject(parsed.value) ? array(parsed.value["entry"]) : []
          if (entries.length === 0) {
            yield* Effect.logWarning("An upstream payload carried no entries; dropped").pipe(Effect.annotateLogs({ inbox_id: entry.id }))
            yield* inbox.markProcessed(entry.id, yield* now)
            return { ...counts, dropped: 1 }
          }
          const owner = entry.msg_config_id === null ? Option.none() : yield* configs.findLiveById(entry.msg_config_id)

          // Route every change first: the numbers the POST speaks for.
          const changes: Array<{ readonly accountId: string; readonly field: string; readonly value: unknown; readonly configs: ReadonlyArray<MessageConfigRecord> }> = []
          for (const e of entries) {
            if (!Predicate.isObject(e)) continue
            const accountId = entryTexts(e).id ?? ""
            for (const change of array(e["changes"])) {
              if (!Predicate.isObject(change)) continue
              const field = changeTexts(change).field ?? ""
              const routed = (yield* numbersOf(accountId, field, change["value"])).filter(allowed(entry, owner))
              changes.push({ accountId, field, value: change["value"], configs: routed })
            }
          }

          // Fan out once per POST: the raw bytes to `kind: upstream` webhooks (domain event) and destination URLs.
          let fannedOut = entry.fanned_out_at !== null
          if (!fannedOut) {
            const targets = new Map<string, MessageConfigRecord>()
            for (const change of changes) for (const config of change.configs) targets.set(config.id, config)
            const projects = new Set([...targets.values()].map((c) => c.project_id))
            for (const config of targets.values()) {
              if (config.webhook_destination_url === null) continue
              yield* jobs.enqueue(UPSTREAM_FORWARD_QUEUE, { inbox_id: entry.id, msg_config_id: config.id } satisfies ForwardJob, {
                dedupeKey: `forward:${entry.id}:${config.id}`,
                retryLimit: 2,
                retryDelayMs: 10_000
              })
            }
            const at = yield* now
            const event: DomainEvent | undefined = targets.size === 0 ? undefined : {
              id: yield* ids.uuid,
              project_id: projects.size === 1 ? [...projects][0]! : null,
              type: UPSTREAM_PAYLOAD,
              payload: {
                phone_number_ids: [...new Set([...targets.values()].map((c) => c.phone_number_id))],
                body_base64: Buffer.from(entry.body).toString("base64")
              } satisfies UpstreamPayloadEvent,
              created_at: at
            }
            // The mark keeps a retry from appending the event twice. With no event to write (no webhook wants it),
            // the forwards' dedupe keys and `processed_at` suffice: the mark waits for a failure (below).
            if (event !== undefined && (yield* worthWriting(event))) {
              yield* tx.withTransaction(Effect.andThen(outbox.append(event), inbox.markFannedOut(entry.id, at)))
              fannedOut = true
            }
            // Log search: every routed change once per POST, in the project of each number it reached.
            yield* recorder.record(changes.flatMap((change) =>
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
                if (Predicate.isObject(change.value)) yield* processMessages(change.configs[0]!, change.value, final, counts)
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
