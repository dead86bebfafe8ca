/**
 * The simulated network's API: one function that takes a request on the
 * network's own paths and decides it against the state, as the network would.
 *
 * Paths (after the version segment, any `vNN.N`):
 * `<pnid>/messages` (send, mark read), `<pnid>/media` (upload), `<id>`
 * (GET/DELETE media; GET number facts, template, form; POST template edit or
 * form metadata), `<waba>/message_templates`, `<waba>/phone_numbers`,
 * `<waba>/subscribed_apps`, `<pnid>/block_users`, `<pnid>/username`,
 * `<pnid>/username_suggestions`, `<pnid>/whatsapp_business_profile`,
 * `<pnid>/settings`; and `/attachments/?mid=` (media bytes,
 * bearer-only, 5 minutes). Every call needs `Authorization: Bearer <token>`
 * of the account that owns what it touches.
 */
import { Option } from "effect"
import { createHmac } from "node:crypto"
import { parseJson as readJson } from "../../shared/Json.ts"
import { isApiVersion, MessagingProduct } from "../NetworkObjects.ts"
import { checkMedia, essence } from "./Media.ts"
import { readEnvelope } from "./Messages.ts"
import {
  authenticate,
  type ContactRef,
  contactByPhone,
  contactByUserId,
  DAY_MS,
  fail,
  type FlowRecord,
  isObject,
  isReachable,
  isSimError,
  isUserId,
  type Json,
  type MediaRecord,
  messageId,
  normalizePhone,
  type NumberRecord,
  numericId,
  ok,
  type Outcome,
  type OutboundRecord,
  type OutboundStatus,
  ownedAccount,
  ownedNumber,
  page,
  pairTokens,
  type RequestContext,
  sha256Hex,
  type SimState,
  stringField,
  type TemplateRecord,
  throughputUsed,
  windowOpen
} from "./Model.ts"
import { type SimError, simError, unknownObject } from "./NetworkErrors.ts"
import type { SimBody, SimRequest } from "./Protocol.ts"
import { profileView, settingsView, updateProfile, updateSettings } from "./Profile.ts"
import { readTemplate } from "./Templates.ts"
import { exchangeCode } from "./Signup.ts"
import { checkLanguage, checkName } from "./Templates.ts"

export interface SimConfig {
  /** How long a template stays `PENDING`. */
  readonly templateReviewMs: number
  /** After acceptance: when a message is `sent`, `delivered`, and `read` (undefined: the contact never reads). */
  readonly statusDelays: {
    readonly sent: number
    readonly delivered: number
    readonly read: number | undefined
  }
  /** The app subscribed to the accounts' webhooks; with `appSecret`, the app that exchanges signup codes. */
  readonly appId: string
  readonly appSecret: string
  readonly appName: string
  /** Outbound messages remembered per number (outbox, statuses); older ones are forgotten. */
  readonly outboxLimit: number
}

const MEDIA_TTL_MS = 30 * DAY_MS
const INBOUND_MEDIA_TTL_MS = 7 * DAY_MS
const MEDIA_URL_TTL_MS = 5 * 60 * 1000
const TEMPLATE_LIMIT = 250
const BLOCK_LIST_LIMIT = 64_000
/** How many outbound messages a number remembers by default. */
export const OUTBOX_LIMIT = 10_000
/** Inbound messages remembered (mark read); older ones are forgotten. */
export const INBOUND_LIMIT = 100_000

export { INBOUND_MEDIA_TTL_MS, MEDIA_TTL_MS }

const decoder = new TextDecoder()

/** A body read as the network reads it: JSON, or form fields (JSON-looking values parsed). */
const readBody = (body: SimBody): { readonly value: unknown } | undefined => {
  if (body._tag === "None") return { value: undefined }
  // The HTTP face parses URL-encoded bodies into fields; bytes handed over in process get the same reading.
  if (body._tag === "Bytes" && /^application\/x-www-form-urlencoded/i.test(body.contentType)) {
    const fields: Record<string, string> = {}
    for (const [key, value] of new URLSearchParams(decoder.decode(body.bytes))) fields[key] ??= value
    return readBody({ _tag: "Form", fields, files: [] })
  }
  if (body._tag === "Form") {
    const value: Json = {}
    for (const [key, field] of Object.entries(body.fields)) {
      value[key] = /^\s*[[{]/.test(field) ? parseJson(field)?.value ?? field : field
    }
    return { value }
  }
  if (body.bytes.byteLength === 0) return { value: undefined }
  return parseJson(decoder.decode(body.bytes))
}

/** `{ value }` of a JSON text, undefined when it is not JSON. */
const parseJson = (text: string): { readonly value: unknown } | undefined =>
  Option.match(readJson(text), { onNone: () => undefined, onSome: (value) => ({ value }) })

const notJson = () => simError(100, "The request body is not valid JSON")

// ---------------------------------------------------------------------------------------------
// Statuses of outbound messages

/** Where an outbound message stands at `now`, following the configured delays. */
export const outboundStatus = (config: SimConfig, record: OutboundRecord, now: number): OutboundStatus => {
  const age = now - record.acceptedAt
  if (age < config.statusDelays.sent) return "accepted"
  if (record.failure !== undefined) return "failed"
  if (age < config.statusDelays.delivered) return "sent"
  if (config.statusDelays.read === undefined || age < config.statusDelays.read) return "delivered"
  return "read"
}

// ---------------------------------------------------------------------------------------------
// Templates

export const refreshTemplate = (template: TemplateRecord, now: number): void => {
  if (template.review !== undefined && now >= template.review.at) {
    template.status = template.review.verdict
    template.rejectedReason = template.review.reason
    template.review = undefined
  }
}

const templateView = (template: TemplateRecord): Record<string, unknown> => ({
  id: template.id,
  name: template.name,
  language: template.language,
  status: template.status,
  category: template.category,
  ...(template.subCategory !== undefined ? { sub_category: template.subCategory } : {}),
  parameter_format: template.parameterFormat,
  components: template.components,
  ...(template.status === "REJECTED" ? { rejected_reason: template.rejectedReason } : {})
})

const project = (view: Record<string, unknown>, fields: string | undefined): Record<string, unknown> => {
  if (fields === undefined) return view
  const wanted = new Set(["id", ...fields.split(",").map((f) => f.trim()).filter((f) => f.length > 0)])
  return Object.fromEntries(Object.entries(view).filter(([key]) => wanted.has(key)))
}

const accountTiers = (state: SimState, businessAccountId: string) =>
  [...state.numbers.values()].filter((n) => n.businessAccountId === businessAccountId).map((n) => n.messagingLimitTier)

const listTemplates = (state: SimState, request: SimRequest, ctx: RequestContext, accountId: string, selfUrl: string) => {
  const { query } = request
  const nameFilter = query["name"]?.toLowerCase()
  const matching = [...state.templates.values()]
    .filter((t) => !t.deleted && t.businessAccountId === accountId)
    .map((t) => {
      refreshTemplate(t, ctx.now)
      return t
    })
    .filter((t) =>
      (nameFilter === undefined || t.name.includes(nameFilter)) &&
      (query["status"] === undefined || t.status === query["status"].toUpperCase()) &&
      (query["category"] === undefined || t.category === query["category"].toUpperCase()) &&
      (query["language"] === undefined || t.language === query["language"])
    )
    .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
    .map((t) => project(templateView(t), query["fields"]))
  const result = page(matching, query, selfUrl, 25)
  return isSimError(result) ? fail(result) : ok(result)
}

const reviewFollowup = (template: TemplateRecord) => ({
  _tag: "TemplateReview" as const,
  templateId: template.id,
  generation: template.generation,
  at: template.review!.at
})

const createTemplate = (state: SimState, config: SimConfig, ctx: RequestContext, accountId: string, body: unknown) => {
  if (!isObject(body)) return fail(simError(100, "The request body must be a JSON object"))
  const name = checkName(body["name"])
  if (isSimError(name)) return fail(name)
  const language = checkLanguage(body["language"])
  if (isSimError(language)) return fail(language)
  const read = readTemplate(body, accountTiers(state, accountId))
  if (isSimError(read)) return fail(read)
  const live = [...state.templates.values()].filter((t) => !t.deleted && t.businessAccountId === accountId)
  if (live.some((t) => t.name === name && t.language === language)) {
    return fail(simError(100, `Content in this language already exists for template ${name}`, { subcode: 2388024 }))
  }
  const deletedAt = state.deletedNames.get(`${accountId}|${name}`)
  if (deletedAt !== undefined && ctx.now - deletedAt < 30 * DAY_MS) {
    return fail(simError(100, `The name ${name} was used by a deleted template and cannot be reused for 30 days`, {
      subcode: 2388023
    }))
  }
  if (live.length >= TEMPLATE_LIMIT) {
    return fail(simError(100, `The business account already has ${TEMPLATE_LIMIT} templates`, { subcode: 2388025 }))
  }
  const template: TemplateRecord = {
    id: numericId(ctx.uuid),
    businessAccountId: accountId,
    name,
    language,
    category: read.category,
    subCategory: read.subCategory,
    parameterFormat: read.parameterFormat,
    components: read.components,
    status: "PENDING",
    rejectedReason: "NONE",
    review: { at: ctx.now + config.templateReviewMs, verdict: read.verdict, reason: read.reason },
    generation: 1,
    createdAt: ctx.now,
    edits: [],
    deleted: false
  }
  state.templates.set(template.id, template)
  state.touch("template", template.id)
  return ok({ id: template.id, status: template.status, category: template.category }, [reviewFollowup(template)])
}

const editTemplate = (
  state: SimState,
  config: SimConfig,
  ctx: RequestContext,
  template: TemplateRecord,
  body: unknown
) => {
  if (!isObject(body)) return fail(simError(100, "The request body must be a JSON object"))
  refreshTemplate(template, ctx.now)
  if (!["APPROVED", "REJECTED", "PAUSED"].includes(template.status)) {
    return fail(simError(100, `A template in status ${template.status} cannot be edited`, { subcode: 2388040 }))
  }
  const wasApproved = template.status === "APPROVED"
  const category = body["category"]
  if (wasApproved && category !== undefined && String(category).toUpperCase() !== template.category) {
    return fail(simError(100, "The category of an approved template cannot be changed", { subcode: 2388041 }))
  }
  if (wasApproved) {
    const recent = template.edits.filter((at) => ctx.now - at < 30 * DAY_MS)
    if (recent.some((at) => ctx.now - at < DAY_MS)) {
      return fail(simError(100, "An approved template can be edited once per 24 hours", { subcode: 2388042 }))
    }
    if (recent.length >= 10) {
      return fail(simError(100, "An approved template can be edited 10 times per 30 days", { subcode: 2388043 }))
    }
  }
  const read = readTemplate(
    {
      ...body,
      components: body["components"] ?? template.components,
      parameter_format: body["parameter_format"] ?? template.parameterFormat
    },
    accountTiers(state, template.businessAccountId),
    template.category
  )
  if (isSimError(read)) return fail(read)
  template.category = read.category
  template.subCategory = read.subCategory ?? template.subCategory
  template.parameterFormat = read.parameterFormat
  template.components = read.components
  template.status = "PENDING"
  template.rejectedReason = "NONE"
  template.review = { at: ctx.now + config.templateReviewMs, verdict: read.verdict, reason: read.reason }
  template.generation++
  if (wasApproved) template.edits.push(ctx.now)
  state.touch("template", template.id)
  return ok({ success: true }, [reviewFollowup(template)])
}

const deleteTemplates = (state: SimState, request: SimRequest, ctx: RequestContext, accountId: string) => {
  const name = request.query["name"]
  const hsmId = request.query["hsm_id"]
  if (name === undefined && hsmId === undefined) return fail(simError(100, "The parameter name is required."))
  const targets = [...state.templates.values()].filter((t) =>
    !t.deleted && t.businessAccountId === accountId &&
    (hsmId !== undefined ? t.id === hsmId && (name === undefined || t.name === name) : t.name === name)
  )
  if (targets.length === 0) {
    return fail(simError(100, `Message template ${hsmId ?? name} not found`, { subcode: 2593002 }))
  }
  for (const template of targets) {
    refreshTemplate(template, ctx.now)
    if (template.status === "APPROVED") {
      state.deletedNames.set(`${accountId}|${template.name}`, ctx.now)
      state.touch("deletedName", `${accountId}|${template.name}`)
    }
    template.deleted = true
    template.status = "DELETED"
    template.generation++
    state.touch("template", template.id)
  }
  return ok({ success: true })
}

// ---------------------------------------------------------------------------------------------
// Messages

const send = (
  state: SimState,
  config: SimConfig,
  ctx: RequestContext,
  number: NumberRecord,
  request: SimRequest,
  version: string
): Outcome => {
  if (number.status === "RESTRICTED") return fail(simError(131031, "The business account is locked"))
  if (number.status !== "CONNECTED" && number.status !== "FLAGGED") {
    return fail(simError(133010, `The phone number ${number.phoneNumberId} is not registered (status ${number.status})`))
  }
  const read = readBody(request.body)
  if (read === undefined) return fail(notJson())
  const envelope = readEnvelope(state, number, read.value, ctx.now)
  if (isSimError(envelope)) return fail(envelope)

  if (envelope._tag === "MarkRead") {
    const inbound = state.inbound.get(envelope.messageId)
    if (inbound === undefined || inbound.phoneNumberId !== number.phoneNumberId) {
      return fail(simError(131009, `Param message_id ${envelope.messageId} is not a message received by this number`))
    }
    for (const other of state.inbound.values()) {
      if (
        other.phoneNumberId === inbound.phoneNumberId && other.contact.userId === inbound.contact.userId &&
        other.receivedAt <= inbound.receivedAt && !other.read
      ) {
        other.read = true
        state.touch("inbound", other.id)
      }
    }
    return ok({ success: true })
  }

  const contact: ContactRef = envelope.recipient.waId !== undefined
    ? contactByPhone(state, number.businessAccountId, envelope.recipient.waId)
    : contactByUserId(state, number.businessAccountId, envelope.recipient.userId!)
  const ownDigits = number.displayPhoneNumber.replace(/\D/g, "")
  if (contact.waId === ownDigits) return fail(simError(131021, "The recipient is the sending phone number"))

  const template = envelope.template
  const inWindow = windowOpen(state, number.phoneNumberId, contact, ctx.now)
  if (template === undefined && !inWindow) {
    return fail(simError(
      131047,
      "Message failed to send because more than 24 hours have passed since the customer last replied to this number."
    ))
  }
  if (throughputUsed(number, ctx.now) >= number.throughputPerSecond) {
    return fail(simError(130429, `Throughput of ${number.throughputPerSecond} messages per second reached for this number`))
  }
  const pair = pairTokens(state, number, contact, ctx.now)
  if (pair.available < 1) {
    return fail(simError(131056, "Too many messages sent from this phone number to the same recipient in a short period"))
  }

  pair.take()
  number.events.push(ctx.now)
  const raw = request.body._tag === "Bytes" ? request.body.bytes : new TextEncoder().encode(JSON.stringify(read.value))
  const record: OutboundRecord = {
    id: messageId(ctx.uuid, contact.waId ?? contact.userId),
    phoneNumberId: number.phoneNumberId,
    recipient: contact,
    toPhone: envelope.recipient.waId !== undefined,
    type: envelope.type,
    envelope: read.value,
    raw,
    version,
    acceptedAt: ctx.now,
    category: template === undefined ? "service" : template.category.toLowerCase(),
    inWindow,
    bizOpaqueCallbackData: envelope.bizOpaqueCallbackData,
    failure: isReachable(state, contact) ? undefined : { code: 131026, details: "Message Undeliverable." }
  }
  state.deliver(record, config.outboxLimit)

  return ok({
    messaging_product: MessagingProduct,
    contacts: [
      envelope.recipient.waId !== undefined
        ? { input: envelope.recipient.input, wa_id: contact.waId }
        : { input: envelope.recipient.input, user_id: contact.userId }
    ],
    messages: [{ id: record.id, ...(template?.category === "MARKETING" ? { message_status: "accepted" } : {}) }]
  }, [{ _tag: "Statuses", messageId: record.id }])
}

// ---------------------------------------------------------------------------------------------
// Media

const mediaHash = (state: SimState, id: string, expires: number) =>
  createHmac("sha256", state.urlSecret).update(`${id}.${expires}`).digest("base64url").slice(0, 22)

const usableMedia = (state: SimState, id: string, now: number): MediaRecord | undefined => {
  const media = state.media.get(id)
  return media !== undefined && !media.deleted && media.expiresAt > now ? media : undefined
}

const upload = (state: SimState, ctx: RequestContext, number: NumberRecord, request: SimRequest): Outcome => {
  if (request.body._tag !== "Form") return fail(simError(100, "The parameter file is required."))
  const product = request.body.fields["messaging_product"]
  if (product === undefined) return fail(simError(100, "The parameter messaging_product is required."))
  if (product !== MessagingProduct) return fail(simError(100, `Param messaging_product must be ${MessagingProduct}`))
  const file = request.body.files.find((f) => f.key === "file")
  if (file === undefined) return fail(simError(100, "The parameter file is required."))
  const mimeType = request.body.fields["type"] ?? file.contentType
  const kind = checkMedia(mimeType, file.bytes)
  if (isSimError(kind)) return fail(kind)
  const media: MediaRecord = {
    id: numericId(ctx.uuid),
    businessAccountId: number.businessAccountId,
    phoneNumberId: number.phoneNumberId,
    bytes: file.bytes,
    mimeType,
    filename: file.filename.length > 0 ? file.filename : undefined,
    sha256: sha256Hex(file.bytes),
    expiresAt: ctx.now + MEDIA_TTL_MS,
    deleted: false
  }
  for (const [id, stored] of state.media) {
    if (stored.deleted || stored.expiresAt <= ctx.now) {
      state.media.delete(id)
      state.touch("media", id)
    }
  }
  state.media.set(media.id, media)
  state.touch("media", media.id)
  return ok({ id: media.id })
}

const mediaInfo = (state: SimState, ctx: RequestContext, media: MediaRecord) => {
  const expires = Math.floor((ctx.now + MEDIA_URL_TTL_MS) / 1000)
  const params = new URLSearchParams({ mid: media.id, ext: String(expires), hash: mediaHash(state, media.id, expires) })
  return {
    messaging_product: MessagingProduct,
    url: `${ctx.baseUrl}/attachments/?${params.toString()}`,
    mime_type: media.mimeType,
    sha256: media.sha256,
    file_size: media.bytes.byteLength,
    id: media.id
  }
}

const download = (state: SimState, ctx: RequestContext, request: SimRequest): Outcome => {
  const auth = authenticate(state, request.authorization)
  if (isSimError(auth)) return fail(auth)
  const { ext, hash, mid } = request.query
  const gone = fail(simError(100, "URL signature expired or invalid", { status: 404 }))
  if (mid === undefined || ext === undefined || hash === undefined) return gone
  const expires = Number(ext)
  if (!Number.isInteger(expires) || expires * 1000 <= ctx.now || mediaHash(state, mid, expires) !== hash) return gone
  const media = usableMedia(state, mid, ctx.now)
  if (media === undefined || media.businessAccountId !== auth.businessAccountId) return gone
  return { status: 200, bytes: { contentType: media.mimeType, body: media.bytes }, followups: [] }
}

// ---------------------------------------------------------------------------------------------
// Numbers and health

/** What `GET /<phone_number_id>` answers without `fields`, as the network does. */
const defaultNumberFields = [
  "verified_name",
  "code_verification_status",
  "display_phone_number",
  "quality_rating",
  "platform_type",
  "throughput",
  "id"
]

export const healthStatus = (number: NumberRecord) => {
  const numberEntity = number.status !== "CONNECTED" && number.status !== "FLAGGED"
    ? {
      entity_type: "PHONE_NUMBER",
      id: number.phoneNumberId,
      can_send_message: "BLOCKED",
      errors: [{
        error_code: 133010,
        error_description: `The phone number's status is ${number.status}`,
        possible_solution: "Register the phone number with the network"
      }]
    }
    : number.qualityRating === "RED"
    ? {
      entity_type: "PHONE_NUMBER",
      id: number.phoneNumberId,
      can_send_message: "LIMITED",
      errors: [{
        error_code: 131049,
        error_description: "The phone number's quality rating is RED",
        possible_solution: "Improve the quality of the messages sent from this number"
      }]
    }
    : { entity_type: "PHONE_NUMBER", id: number.phoneNumberId, can_send_message: "AVAILABLE" }
  const entities = [
    numberEntity,
    { entity_type: "WABA", id: number.businessAccountId, can_send_message: "AVAILABLE" },
    { entity_type: "BUSINESS", id: `${number.businessAccountId}0`, can_send_message: "AVAILABLE" }
  ]
  const overall = entities.some((e) => e.can_send_message === "BLOCKED")
    ? "BLOCKED"
    : entities.some((e) => e.can_send_message === "LIMITED")
    ? "LIMITED"
    : "AVAILABLE"
  return { can_send_message: overall, entities }
}

const numberFacts = (number: NumberRecord): Record<string, unknown> => ({
  id: number.phoneNumberId,
  verified_name: number.verifiedName,
  display_phone_number: number.displayPhoneNumber,
  quality_rating: number.qualityRating,
  messaging_limit_tier: number.messagingLimitTier,
  throughput: { level: number.throughputPerSecond >= 1000 ? "HIGH" : "STANDARD" },
  status: number.status,
  name_status: number.nameStatus,
  code_verification_status: number.codeVerificationStatus,
  platform_type: "CLOUD_API",
  account_mode: "LIVE",
  is_official_business_account: number.isOfficialBusinessAccount,
  is_pin_enabled: false,
  is_on_biz_app: number.isOnBizApp,
  health_status: healthStatus(number)
})

const numberView = (number: NumberRecord, fields: string | undefined): Record<string, unknown> | SimError => {
  const facts = numberFacts(number)
  const wanted = fields === undefined
    ? defaultNumberFields
    : ["id", ...fields.split(",").map((f) => f.trim()).filter((f) => f.length > 0)]
  const unknown = wanted.find((field) => !(field in facts))
  if (unknown !== undefined) {
    return simError(100, `Tried accessing nonexisting field (${unknown}) on node type (WhatsAppBusinessPhoneNumber)`)
  }
  return Object.fromEntries(wanted.map((field) => [field, facts[field]]))
}

// ---------------------------------------------------------------------------------------------
// Block users

const blockUsers = (
  state: SimState,
  ctx: RequestContext,
  number: NumberRecord,
  body: unknown,
  block: boolean
): Outcome => {
  if (!isObject(body)) return fail(simError(100, "The request body must be a JSON object"))
  if (body["messaging_product"] !== MessagingProduct) {
    return fail(simError(100, `Param messaging_product must be ${MessagingProduct}`))
  }
  const users = body["block_users"]
  if (!Array.isArray(users) || users.length === 0) return fail(simError(131008, "The parameter block_users is required."))
  const done: Array<Record<string, string>> = []
  const failed: Array<Record<string, unknown>> = []
  for (const entry of users) {
    const input = isObject(entry) ? stringField(entry, "user") : undefined
    if (input === undefined) return fail(simError(131008, "The parameter block_users[].user is required."))
    const waId = normalizePhone(input)
    const contact = waId !== undefined
      ? contactByPhone(state, number.businessAccountId, waId)
      : isUserId(input)
      ? contactByUserId(state, number.businessAccountId, input)
      : undefined
    const failure = (code: number, details: string) =>
      failed.push({ input, errors: [{ message: details, code, error_data: { details } }] })
    if (contact === undefined) {
      failure(131009, "Not a phone number or business-scoped user id")
      continue
    }
    const identity = contact.waId !== undefined && waId !== undefined ? { wa_id: contact.waId } : { user_id: contact.userId }
    if (!block) {
      number.blocked.delete(contact.userId)
      done.push({ input, ...identity })
      continue
    }
    if (!windowOpen(state, number.phoneNumberId, contact, ctx.now)) {
      failure(139102, "Only users who messaged the business in the last 24 hours can be blocked")
    } else if (!number.blocked.has(contact.userId) && number.blocked.size >= BLOCK_LIST_LIMIT) {
      failure(139101, `The block list holds at most ${BLOCK_LIST_LIMIT} users`)
    } else {
      number.blocked.set(contact.userId, contact)
      done.push({ input, ...identity })
    }
  }
  const key = block ? "added_users" : "removed_users"
  const result = { [key]: done, ...(failed.length > 0 ? { failed_users: failed } : {}) }
  if (failed.length > 0) {
    return fail(simError(139100, `Failed to ${block ? "block" : "unblock"} ${failed.length} of ${users.length} users`, {
      extra: { block_users: result }
    }))
  }
  return ok({ messaging_product: MessagingProduct, block_users: result })
}

// ---------------------------------------------------------------------------------------------
// Usernames

const usernamePattern = /^[a-z0-9._]{3,35}$/

const usernameProblem = (username: string): string | undefined => {
  if (!usernamePattern.test(username)) return "must be 3 to 35 characters of lowercase letters, digits, periods and underscores"
  if (!/[a-z]/.test(username)) return "must contain at least one letter"
  if (username.startsWith(".") || username.endsWith(".") || username.includes("..")) {
    return "cannot start or end with a period or contain two periods in a row"
  }
  if (username.startsWith("www")) return "cannot start with www"
  return undefined
}

const setUsername = (state: SimState, number: NumberRecord, body: unknown): Outcome => {
  if (!isObject(body)) return fail(simError(100, "The request body must be a JSON object"))
  const username = body["username"]
  if (username === undefined) return fail(simError(131008, "The parameter username is required."))
  if (typeof username !== "string") return fail(simError(131009, "Param username must be a string"))
  const problem = usernameProblem(username)
  if (problem !== undefined) return fail(simError(131009, `Param username ${problem}`))
  const transfer = body["transfer_action"] ?? "none"
  if (transfer !== "none" && transfer !== "force_transfer") {
    return fail(simError(131009, "Param transfer_action must be one of {none, force_transfer}"))
  }
  const holder = state.usernames.get(username)
  if (holder !== undefined && holder !== number.phoneNumberId) {
    const other = state.numbers.get(holder)
    const sameBusiness = other !== undefined && other.businessAccountId === number.businessAccountId
    if (!(sameBusiness && transfer === "force_transfer")) {
      return fail(simError(131009, `The username ${username} is not available`))
    }
    if (other !== undefined) {
      other.username = undefined
      state.touch("number", other.phoneNumberId)
    }
  }
  if (number.username !== undefined) state.usernames.delete(number.username.username)
  const status = number.nameStatus === "APPROVED" || number.nameStatus === "AVAILABLE_WITHOUT_REVIEW" ? "approved" : "reserved"
  number.username = { username, status }
  state.usernames.set(username, number.phoneNumberId)
  return ok({ status })
}

const usernameSuggestions = (state: SimState, number: NumberRecord) => {
  const stem = number.verifiedName.toLowerCase().replace(/[^a-z0-9]+/g, "").slice(0, 28) || "business"
  const suffix = number.phoneNumberId.slice(-3)
  const candidates = [stem, `${stem}.official`, `${stem}_hq`, `get${stem}`, `${stem}.support`, `${stem}${suffix}`]
  const free = candidates.filter((c) => usernameProblem(c) === undefined && !state.usernames.has(c)).slice(0, 5)
  return ok({ data: [{ username_suggestions: free }] })
}

// ---------------------------------------------------------------------------------------------
// Interactive forms

export const flowCategories = [
  "SIGN_UP",
  "SIGN_IN",
  "APPOINTMENT_BOOKING",
  "LEAD_GENERATION",
  "CONTACT_US",
  "CUSTOMER_SUPPORT",
  "SURVEY",
  "OTHER"
] as const

export const flowView = (flow: FlowRecord) => ({
  id: flow.id,
  name: flow.name,
  status: "DRAFT",
  categories: flow.categories,
  validation_errors: [],
  ...(flow.endpointUri !== undefined ? { endpoint_uri: flow.endpointUri } : {}),
  ...(flow.applicationId !== undefined ? { application: { id: flow.applicationId } } : {})
})

const updateFlow = (state: SimState, flow: FlowRecord, body: unknown): Outcome => {
  if (!isObject(body)) return fail(simError(100, "The request body must be a JSON object"))
  const { application_id, categories, endpoint_uri, name } = body
  if (name === undefined && categories === undefined && endpoint_uri === undefined && application_id === undefined) {
    return fail(simError(100, "Nothing to update: give name, categories, endpoint_uri or application_id"))
  }
  if (name !== undefined && (typeof name !== "string" || name.trim().length === 0)) {
    return fail(simError(100, "Param name must be a non-empty string"))
  }
  if (categories !== undefined) {
    const valid = Array.isArray(categories) && categories.length > 0 &&
      categories.every((c) => (flowCategories as ReadonlyArray<unknown>).includes(c))
    if (!valid) return fail(simError(100, `Param categories must be a non-empty array of {${flowCategories.join(", ")}}`))
  }
  if (
    endpoint_uri !== undefined &&
    (typeof endpoint_uri !== "string" || !URL.canParse(endpoint_uri) || !/^https?:/i.test(endpoint_uri))
  ) {
    return fail(simError(100, "Param endpoint_uri must be a valid URI"))
  }
  if (application_id !== undefined && typeof application_id !== "string") {
    return fail(simError(100, "Param application_id must be a string"))
  }
  if (typeof name === "string") flow.name = name
  if (Array.isArray(categories)) flow.categories = categories as Array<string>
  if (typeof endpoint_uri === "string") flow.endpointUri = endpoint_uri
  if (typeof application_id === "string") flow.applicationId = application_id
  state.touch("flow", flow.id)
  return ok({ success: true })
}

// ---------------------------------------------------------------------------------------------
// Dispatch

/** Decides one request of the network's API. */
export const route = (state: SimState, config: SimConfig, request: SimRequest, ctx: RequestContext): Outcome => {
  const segments = request.path.split("/").filter((s) => s.length > 0).map((s) => decodeURIComponentSafe(s))
  const method = request.method.toUpperCase()
  if (segments[0] === "attachments" && segments.length === 1 && method === "GET") return download(state, ctx, request)
  const [version, id, edge, ...more] = segments
  if (version === undefined || !isApiVersion(version)) {
    return fail(simError(100, `Unknown path components: /${segments.join("/")}`, { subcode: 2500 }))
  }
  if (id === undefined || more.length > 0) return fail(unknownObject(method, segments.slice(1).join("/") || "/"))
  // The code exchange authenticates with the app's id and secret, not a bearer token.
  if (id === "oauth" && edge === "access_token" && method === "GET") return exchangeCode(state, config, request.query, ctx.now)
  const auth = authenticate(state, request.authorization)
  if (isSimError(auth)) return fail(auth)
  const accountId = auth.businessAccountId
  const selfUrl = `${request.baseUrl}/${segments.join("/")}`
  const body = () => readBody(request.body)
  const withBody = (f: (value: unknown) => Outcome): Outcome => {
    const read = body()
    return read === undefined ? fail(notJson()) : f(read.value)
  }
  const unsupported = fail(unknownObject(method, id))

  if (edge === undefined) {
    const number = state.numbers.get(id)
    if (number !== undefined && number.businessAccountId === accountId) {
      if (method !== "GET") return unsupported
      const view = numberView(number, request.query["fields"])
      return isSimError(view) ? fail(view) : ok(view)
    }
    const media = usableMedia(state, id, ctx.now)
    if (media !== undefined && media.businessAccountId === accountId) {
      const forNumber = request.query["phone_number_id"]
      if (forNumber !== undefined && forNumber !== media.phoneNumberId) return unsupported
      if (method === "GET") return ok(mediaInfo(state, ctx, media))
      if (method === "DELETE") {
        media.deleted = true
        state.touch("media", media.id)
        return ok({ success: true })
      }
      return unsupported
    }
    const template = state.templates.get(id)
    if (template !== undefined && !template.deleted && template.businessAccountId === accountId) {
      if (method === "GET") {
        refreshTemplate(template, ctx.now)
        return ok(project(templateView(template), request.query["fields"]))
      }
      if (method === "POST") return withBody((value) => editTemplate(state, config, ctx, template, value))
      return unsupported
    }
    const flow = state.flows.get(id)
    if (flow !== undefined && flow.businessAccountId === accountId) {
      if (method === "GET") return ok(flowView(flow))
      if (method === "POST") return withBody((value) => updateFlow(state, flow, value))
      return unsupported
    }
    return unsupported
  }

  switch (edge) {
    case "messages":
    case "media":
    case "block_users":
    case "username":
    case "username_suggestions":
    case "whatsapp_business_profile":
    case "settings": {
      const number = ownedNumber(state, accountId, method, id)
      if (isSimError(number)) return fail(number)
      // Blocking, usernames, profile and settings change the number itself (sends and uploads do not).
      if (method !== "GET" && edge !== "messages" && edge !== "media") state.touch("number", number.phoneNumberId)
      if (edge === "messages" && method === "POST") return send(state, config, ctx, number, request, version)
      if (edge === "media" && method === "POST") return upload(state, ctx, number, request)
      if (edge === "block_users") {
        if (method === "GET") {
          const users = [...number.blocked.values()].map((contact) => ({
            messaging_product: MessagingProduct,
            ...(contact.waId !== undefined ? { wa_id: contact.waId } : { user_id: contact.userId })
          }))
          const result = page(users, request.query, selfUrl, 100)
          return isSimError(result) ? fail(result) : ok(result)
        }
        if (method === "POST" || method === "DELETE") {
          return withBody((value) => blockUsers(state, ctx, number, value, method === "POST"))
        }
      }
      if (edge === "username") {
        if (method === "GET") {
          return number.username === undefined
            ? fail(simError(100, "This phone number has no username", { status: 404 }))
            : ok({ username: number.username.username, status: number.username.status })
        }
        if (method === "POST") return withBody((value) => setUsername(state, number, value))
        if (method === "DELETE") {
          if (number.username !== undefined) state.usernames.delete(number.username.username)
          number.username = undefined
          return ok({ success: true })
        }
      }
      if (edge === "username_suggestions" && method === "GET") return usernameSuggestions(state, number)
      if (edge === "whatsapp_business_profile") {
        if (method === "GET") return profileView(number, request.query["fields"])
        if (method === "POST") return withBody((value) => updateProfile(number, value))
      }
      if (edge === "settings") {
        if (method === "GET") return settingsView(number)
        if (method === "POST") return withBody((value) => updateSettings(number, value))
      }
      return fail(unknownObject(method, `${id}/${edge}`))
    }
    case "message_templates":
    case "phone_numbers":
    case "subscribed_apps": {
      const account = ownedAccount(state, accountId, method, id)
      if (isSimError(account)) return fail(account)
      if (edge === "message_templates") {
        if (method === "GET") return listTemplates(state, request, ctx, account.id, selfUrl)
        if (method === "POST") return withBody((value) => createTemplate(state, config, ctx, account.id, value))
        if (method === "DELETE") return deleteTemplates(state, request, ctx, account.id)
      }
      if (edge === "phone_numbers" && method === "GET") {
        const numbers: Array<Record<string, unknown>> = []
        for (const number of state.numbers.values()) {
          if (number.businessAccountId !== account.id) continue
          const view = numberView(number, request.query["fields"])
          if (isSimError(view)) return fail(view)
          numbers.push(view)
        }
        const result = page(numbers, request.query, selfUrl, 25)
        return isSimError(result) ? fail(result) : ok(result)
      }
      if (edge === "subscribed_apps") {
        if (method === "GET") {
          const subscription = account.subscription
          return ok({
            data: subscription === undefined ? [] : [{
              whatsapp_business_api_data: {
                id: config.appId,
                link: `https://apps.invalid/${config.appId}`,
                name: config.appName
              },
              ...(subscription.overrideCallbackUri !== undefined
                ? { override_callback_uri: subscription.overrideCallbackUri }
                : {})
            }]
          })
        }
        if (method === "POST") {
          return withBody((value) => {
            const fields = isObject(value) ? value : {}
            const override = fields["override_callback_uri"]
            if (override !== undefined) {
              if (typeof override !== "string" || !URL.canParse(override)) {
                return fail(simError(100, "Param override_callback_uri must be a valid URI"))
              }
              if (typeof fields["verify_token"] !== "string") {
                return fail(simError(100, "The parameter verify_token is required with override_callback_uri."))
              }
            }
            account.subscription = { overrideCallbackUri: typeof override === "string" ? override : undefined }
            state.touch("account", account.id)
            return ok({ success: true })
          })
        }
        if (method === "DELETE") {
          account.subscription = undefined
          state.touch("account", account.id)
          return ok({ success: true })
        }
      }
      return fail(unknownObject(method, `${id}/${edge}`))
    }
    default:
      return fail(unknownObject(method, `${id}/${edge}`))
  }
}

const decodeURIComponentSafe = (segment: string): string =>
  /%(?![0-9a-fA-F]{2})/.test(segment) ? segment : decodeURIComponent(segment)
