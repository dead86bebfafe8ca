/**
 * Broadcasts over the API (decisions 2.14, 3.4, 4.9): create, recipients,
 * schedule, cancel, send, stop. Sending itself is `BroadcastSender`'s: a send
 * moves the record to `sending` and queues the sender's job; a schedule queues
 * the job at its time.
 *
 * Rules decided here, where the spec is silent:
 * - `scheduled_at` in the create body is checked as a schedule's and kept on
 *   the draft; POST schedule may then omit it.
 * - A recipient's error names its 0-based position in the call's array.
 * - A template that is not approved (now, in the mirror) refuses the create,
 *   as one of another business account does.
 */
import { Clock, Context, Effect, Layer, Option, Predicate, Schema } from "effect"
import { TemplateMismatch, templateComponents } from "../executions/TemplateEnvelope.ts"
import { type MessageConfigRecord, phoneDigits } from "../messaging/numbers/MessageConfig.ts"
import type { TemplateRecord } from "../messaging/templates/Template.ts"
import { BroadcastsRepo } from "./BroadcastsRepo.ts"
import { JobQueue } from "../ports/JobQueue.ts"
import { Messaging } from "../messaging/Messaging.ts"
import { Templates } from "../messaging/templates/Templates.ts"
import type { Principal } from "../projects/Projects.ts"
import { type NotFound, notFound, type Unprocessable, unprocessable } from "../shared/ApiError.ts"
import { Ids } from "../shared/Ids.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import { toIso } from "../shared/Time.ts"
import {
  type BroadcastCounts,
  type BroadcastFilter,
  type BroadcastRecord,
  type MsgBroadcastCreateInput,
  MsgBroadcastRecipientInput,
  type RecipientRecord,
  type RecipientStatus,
  type RecipientView,
  recipientMessageId
} from "./Broadcast.ts"

/** The sender's queue: payload `{ project_id, id }`; a hint, the record's status and lease decide. */
export const SEND_QUEUE = "broadcasts.send"
export const SendJob = Schema.Struct({ project_id: Schema.String, id: Schema.String })
export type SendJob = typeof SendJob.Type

/** Recipients per call (decisions 4.9). */
export const MAX_RECIPIENTS_PER_CALL = 1000
const MINUTE_MS = 60_000
const MAX_SCHEDULE_AHEAD_MS = 30 * 24 * 60 * MINUTE_MS

/** A broadcast as answered: the record and its counters read now. */
export interface BroadcastView {
  readonly broadcast: BroadcastRecord
  readonly counts: BroadcastCounts
}

export interface RecipientsAdded {
  readonly added: number
  readonly duplicates: number
  readonly errors: ReadonlyArray<string>
}

export interface BroadcastPatch {
  readonly status?: string | undefined
  readonly name?: string | undefined
}

const iso = (ms: number) => new Date(ms).toISOString()

/** E.164 allows 15 digits; fewer than 7 is no phone number anywhere. */
const plausiblePhone = (digits: string) => digits.length >= 7 && digits.length <= 15

export class Broadcasts extends Context.Service<Broadcasts, {
  readonly create: (principal: Principal, input: MsgBroadcastCreateInput) => Effect.Effect<BroadcastView, Unprocessable>
  readonly get: (principal: Principal, id: string) => Effect.Effect<BroadcastView, NotFound>
  readonly list: (principal: Principal, filter: BroadcastFilter, window: ListWindow) => Effect.Effect<ListSlice<BroadcastView>>
  readonly update: (principal: Principal, id: string, patch: BroadcastPatch) => Effect.Effect<BroadcastView, NotFound | Unprocessable>
  readonly send: (principal: Principal, id: string) => Effect.Effect<BroadcastView, NotFound | Unprocessable>
  readonly schedule: (principal: Principal, id: string, scheduledAt: string | undefined) => Effect.Effect<BroadcastView, NotFound | Unprocessable>
  readonly cancel: (principal: Principal, id: string) => Effect.Effect<BroadcastView, NotFound | Unprocessable>
  readonly addRecipients: (
    principal: Principal,
    id: string,
    recipients: ReadonlyArray<unknown>
  ) => Effect.Effect<RecipientsAdded, NotFound | Unprocessable>
  readonly listRecipients: (
    principal: Principal,
    id: string,
    status: RecipientStatus | undefined,
    window: ListWindow
  ) => Effect.Effect<ListSlice<RecipientView>, NotFound>
  readonly clearRecipients: (principal: Principal, id: string) => Effect.Effect<BroadcastView, NotFound | Unprocessable>
}>()("@parley/core/broadcasts/Broadcasts") {
  static readonly layer = Layer.effect(
    Broadcasts,
    Effect.gen(function*() {
      const repo = yield* BroadcastsRepo
      const messaging = yield* Messaging
      const templates = yield* Templates
      const jobs = yield* JobQueue
      const ids = yield* Ids

      const view = (broadcast: BroadcastRecord) =>
        Effect.map(repo.counts(broadcast.project_id, broadcast.id), (counts): BroadcastView => ({ broadcast, counts }))

      const find = Effect.fnUntraced(function*(principal: Principal, id: string) {
        const found = yield* repo.findById(principal.project.id, id)
        if (Option.isNone(found)) return yield* notFound("Broadcast", id)
        return found.value
      })

      /** Writes the move, or refuses when another move won the race meanwhile. */
      const move = Effect.fnUntraced(function*(next: BroadcastRecord, from: ReadonlyArray<BroadcastRecord["status"]>) {
        const written = yield* repo.transition(next, from)
        if (Option.isNone(written)) return yield* unprocessable("The broadcast changed meanwhile; reload and retry")
        return written.value
      })

      const scheduleTime = Effect.fnUntraced(function*(raw: string) {
        const at = toIso(raw)
        const now = yield* Clock.currentTimeMillis
        if (at === undefined) return yield* unprocessable("scheduled_at must be an ISO 8601 date-time", [{ path: "scheduled_at", message: "invalid" }])
        const ms = Date.parse(at)
        if (ms < now + MINUTE_MS || ms > now + MAX_SCHEDULE_AHEAD_MS) {
          return yield* unprocessable("scheduled_at must be at least 1 minute and at most 30 days ahead", [{ path: "scheduled_at", message: "out of range" }])
        }
        return at
      })

      const ownConfig = Effect.fnUntraced(function*(projectId: string, input: MsgBroadcastCreateInput) {
        const found: Option.Option<MessageConfigRecord> = input.msg_config_id !== undefined
          ? yield* messaging.findNumber(projectId, input.msg_config_id)
          : input.phone_number_id !== undefined
          ? yield* messaging.findNumberOf(projectId, input.phone_number_id)
          : Option.none()
        const field = input.msg_config_id !== undefined ? "msg_config_id" : "phone_number_id"
        if (input.msg_config_id === undefined && input.phone_number_id === undefined) {
          return yield* unprocessable("msg_config_id or phone_number_id is required", [{ path: "msg_config_id", message: "required" }])
        }
        const config = Option.filter(found, (c) => c.project_id === projectId && c.deleted_at === null)
        if (Option.isNone(config)) return yield* unprocessable(`${field} does not name a connected number of the project`, [{ path: field, message: "unknown" }])
        if (config.value.kind !== "production") {
          return yield* unprocessable("Broadcasts are sent from production numbers only", [{ path: field, message: "not a production number" }])
        }
        return config.value
      })

      const create = Effect.fn("Broadcasts.create")(function*(principal: Principal, input: MsgBroadcastCreateInput) {
        const projectId = principal.project.id
        if (input.name.trim().length === 0) return yield* unprocessable("name must not be blank", [{ path: "name", message: "blank" }])
        const config = yield* ownConfig(projectId, input)
        const template = yield* templates.find(projectId, input.msg_template_id)
        if (Option.isNone(template) || template.value.business_account_id !== config.business_account_id) {
          return yield* unprocessable("Template not linked to number", [{ path: "msg_template_id", message: "not a template of the number's business account" }])
        }
        const t = template.value
        if (t.status !== "approved") {
          return yield* unprocessable(`Template ${t.name} (${t.language}) is not approved: its status is ${t.status}`, [{ path: "msg_template_id", message: "not approved" }])
        }
        const scheduledAt = input.scheduled_at === undefined || input.scheduled_at === null ? null : yield* scheduleTime(input.scheduled_at)
        const now = iso(yield* Clock.currentTimeMillis)
        const record: BroadcastRecord = {
          id: yield* ids.uuid,
          project_id: projectId,
          name: input.name,
          status: "draft",
          msg_config_id: config.id,
          msg_template_id: t.id,
          template: { id: t.id, name: t.name, language_code: t.language, category: t.category, status: t.status },
          scheduled_at: scheduledAt,
          started_at: null,
          completed_at: null,
          stopped_at: null,
          stop_reason: null,
          lease_owner: null,
          lease_until: null,
          created_at: now,
          updated_at: now
        }
        yield* repo.insert(record)
        return { broadcast: record, counts: { total: 0, sent: 0, failed: 0, delivered: 0, read: 0, responded: 0, pending: 0, held: 0 } }
      })

      const get = Effect.fn("Broadcasts.get")(function*(principal: Principal, id: string) {
        return yield* view(yield* find(principal, id))
      })

      const list = Effect.fn("Broadcasts.list")(function*(principal: Principal, filter: BroadcastFilter, window: ListWindow) {
        const slice = yield* repo.list(principal.project.id, filter, window)
        return { ...slice, items: yield* Effect.forEach(slice.items, view, { concurrency: 4 }) }
      })

      const toDraft = (b: BroadcastRecord, now: string): BroadcastRecord => ({ ...b, status: "draft", scheduled_at: null, updated_at: now })

      const update = Effect.fn("Broadcasts.update")(function*(principal: Principal, id: string, patch: BroadcastPatch) {
        let b = yield* find(principal, id)
        const now = iso(yield* Clock.currentTimeMillis)
        if (patch.status !== undefined && patch.status !== "stopped" && patch.status !== "draft") {
          return yield* unprocessable("status may only be set to stopped or draft", [{ path: "status", message: "invalid" }])
        }
        if (patch.name !== undefined) {
          if (b.status !== "draft") return yield* unprocessable(`name can only be changed on a draft broadcast; this one is ${b.status}`, [{ path: "name", message: "not a draft" }])
          if (patch.name.trim().length === 0) return yield* unprocessable("name must not be blank", [{ path: "name", message: "blank" }])
          b = yield* move({ ...b, name: patch.name, updated_at: now }, ["draft"])
        }
        if (patch.status === "stopped") {
          if (b.status !== "sending") return yield* unprocessable(`Only a sending broadcast can be stopped; this one is ${b.status}`, [{ path: "status", message: "not sending" }])
          b = yield* move({ ...b, status: "stopped", stopped_at: now, stop_reason: "manual", updated_at: now }, ["sending"])
        } else if (patch.status === "draft" && b.status !== "draft") {
          if (b.status !== "scheduled") return yield* unprocessable(`Only a scheduled broadcast goes back to draft; this one is ${b.status}`, [{ path: "status", message: "not scheduled" }])
          b = yield* move(toDraft(b, now), ["scheduled"])
        }
        return yield* view(b)
      })

      const enqueueSender = (b: BroadcastRecord, runAt?: number) =>
        jobs.enqueue(SEND_QUEUE, { project_id: b.project_id, id: b.id } satisfies SendJob, {
          runAt,
          // One queued start per broadcast and time: a repeat of the same request queues nothing more.
          dedupeKey: `broadcast:${b.id}:${b.status}:${b.scheduled_at ?? ""}`,
          retryLimit: 5
        })

      const requireRecipients = Effect.fnUntraced(function*(b: BroadcastRecord) {
        const { total } = yield* repo.progress(b.id)
        if (total === 0) return yield* unprocessable("The broadcast has no recipients")
      })

      const send = Effect.fn("Broadcasts.send")(function*(principal: Principal, id: string) {
        const b = yield* find(principal, id)
        if (b.status !== "draft" && b.status !== "scheduled") {
          return yield* unprocessable(`Only a draft or scheduled broadcast can be sent; this one is ${b.status}`)
        }
        yield* requireRecipients(b)
        const now = iso(yield* Clock.currentTimeMillis)
        const sending = yield* move({ ...b, status: "sending", started_at: now, updated_at: now }, ["draft", "scheduled"])
        yield* enqueueSender(sending)
        return yield* view(sending)
      })

      const schedule = Effect.fn("Broadcasts.schedule")(function*(principal: Principal, id: string, scheduledAt: string | undefined) {
        const b = yield* find(principal, id)
        if (b.status !== "draft" && b.status !== "scheduled") {
          return yield* unprocessable(`Only a draft or scheduled broadcast can be scheduled; this one is ${b.status}`)
        }
        const raw = scheduledAt ?? b.scheduled_at
        if (raw === null) return yield* unprocessable("scheduled_at is required", [{ path: "scheduled_at", message: "required" }])
        const at = yield* scheduleTime(raw)
        yield* requireRecipients(b)
        const now = iso(yield* Clock.currentTimeMillis)
        const scheduled = yield* move({ ...b, status: "scheduled", scheduled_at: at, updated_at: now }, ["draft", "scheduled"])
        yield* enqueueSender(scheduled, Date.parse(at))
        return yield* view(scheduled)
      })

      const cancel = Effect.fn("Broadcasts.cancel")(function*(principal: Principal, id: string) {
        const b = yield* find(principal, id)
        if (b.status !== "scheduled") return yield* unprocessable(`Only a scheduled broadcast can be cancelled; this one is ${b.status}`)
        return yield* view(yield* move(toDraft(b, iso(yield* Clock.currentTimeMillis)), ["scheduled"]))
      })

      /** One item of an add call: the recipient to store, or why not. */
      const recipientOf = Effect.fnUntraced(function*(
        b: BroadcastRecord,
        template: TemplateRecord,
        item: unknown,
        index: number,
        now: string
      ) {
        const refuse = (reason: string) => Effect.succeed(`Recipient ${index}: ${reason}` as const)
        const decoded = Schema.decodeUnknownOption(MsgBroadcastRecipientInput)(item)
        if (!Predicate.isObject(item) || Option.isNone(decoded)) {
          return yield* refuse("must be an object with phone_number or contact_id (strings) and template_parameters")
        }
        const input = decoded.value
        let phone: string
        let contactId: string | null = null
        if (input.phone_number !== undefined) {
          phone = phoneDigits(input.phone_number)
          if (!/^[+\d\s\-()]+$/.test(input.phone_number) || !plausiblePhone(phone)) return yield* refuse("phone_number is not a phone number")
        } else if (input.contact_id !== undefined) {
          const contact = yield* messaging.findContact(b.project_id, input.contact_id)
          if (Option.isNone(contact)) return yield* refuse("contact_id does not name a contact of the project")
          if (contact.value.wa_id === null) return yield* refuse("the contact has no phone number")
          phone = contact.value.wa_id
          contactId = contact.value.id
        } else return yield* refuse("phone_number or contact_id is required")
        const parameters = input.template_parameters ?? null
        const components = templateComponents(template, parameters)
        if (components instanceof TemplateMismatch) return yield* refuse(components.message)
        const id = yield* ids.uuid
        const recipient: RecipientRecord = {
          id,
          broadcast_id: b.id,
          project_id: b.project_id,
          phone_number: phone,
          contact_id: contactId,
          status: "pending",
          message_id: recipientMessageId(id, 0),
          attempts: 0,
          retry_at: null,
          attempted_at: null,
          template_parameters: parameters,
          sent_at: null,
          failed_at: null,
          error_message: null,
          error_details: null,
          created_at: now,
          updated_at: now
        }
        return recipient
      })

      const addRecipients = Effect.fn("Broadcasts.addRecipients")(function*(principal: Principal, id: string, items: ReadonlyArray<unknown>) {
        const b = yield* find(principal, id)
        if (b.status !== "draft") return yield* unprocessable(`Recipients can only be added to a draft broadcast; this one is ${b.status}`)
        if (items.length < 1 || items.length > MAX_RECIPIENTS_PER_CALL) {
          return yield* unprocessable(`recipients must hold 1 to ${MAX_RECIPIENTS_PER_CALL.toLocaleString("en-US")} items; ${items.length} given`, [{ path: "recipients", message: "1 to 1000 items" }])
        }
        // Parameters are checked against the template as the mirror has it now.
        const template = yield* templates.find(b.project_id, b.msg_template_id)
        if (Option.isNone(template)) return yield* unprocessable("The broadcast's template is no longer known")
        const now = iso(yield* Clock.currentTimeMillis)
        const checked = yield* Effect.forEach(items, (item, i) => recipientOf(b, template.value, item, i, now), { concurrency: 8 })
        const errors = checked.filter((r): r is `Recipient ${number}: ${string}` => Predicate.isString(r))
        const recipients = checked.filter((r): r is RecipientRecord => !Predicate.isString(r))
        if (recipients.length === 0) return { added: 0, duplicates: 0, errors }
        const written = yield* repo.addRecipients(b.project_id, b.id, recipients)
        if (Option.isNone(written)) return yield* unprocessable("Recipients can only be added to a draft broadcast; this one changed meanwhile")
        return { ...written.value, errors }
      })

      const listRecipients = Effect.fn("Broadcasts.listRecipients")(
        function*(principal: Principal, id: string, status: RecipientStatus | undefined, window: ListWindow) {
          const b = yield* find(principal, id)
          return yield* repo.listRecipients(b.project_id, b.id, status, window)
        }
      )

      const clearRecipients = Effect.fn("Broadcasts.clearRecipients")(function*(principal: Principal, id: string) {
        const b = yield* find(principal, id)
        const cleared = yield* repo.clearRecipients(b.project_id, b.id)
        if (Option.isNone(cleared)) {
          return yield* unprocessable(`Recipients can only be cleared from a draft or scheduled broadcast; this one is ${b.status}`)
        }
        return yield* view(b)
      })

      return Broadcasts.of({ create, get, list, update, send, schedule, cancel, addRecipients, listRecipients, clearRecipients })
    })
  )
}
