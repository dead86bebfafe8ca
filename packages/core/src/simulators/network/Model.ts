/**
 * The simulated network's state and the rules shared by its endpoints:
 * numbers, accounts and their tokens, contacts and their business-scoped ids,
 * customer-service windows, throughput and pair-rate counters, messages,
 * media, templates and interactive forms. Plain synchronous code over plain
 * maps: each request is decided and applied in one step, so concurrent
 * requests never see half of another one.
 */
import { Predicate } from "effect"
import { createHash } from "node:crypto"
import type { SimError } from "../../network/ErrorCodes.ts"
import type { SignupGrant } from "./Signup.ts"

export const DAY_MS = 24 * 60 * 60 * 1000
export const WINDOW_MS = DAY_MS

/** Facts of a simulated number; the defaults are those of a healthy production number. */
export interface SimulatedNumberInput {
  readonly phoneNumberId: string
  readonly businessAccountId: string
  /** The token that acts for the number and its business account. */
  readonly accessToken: string
  /** Digits, optionally with `+`, spaces and dashes; webhooks carry the digits. */
  readonly displayPhoneNumber: string
  readonly verifiedName: string
  readonly qualityRating?: string | undefined
  readonly messagingLimitTier?: string | undefined
  readonly status?: string | undefined
  readonly nameStatus?: string | undefined
  readonly codeVerificationStatus?: string | undefined
  /** Messages per second, inbound and outbound together (decisions §8.2); default 80. */
  readonly throughputPerSecond?: number | undefined
  /** Pair rate: a burst of this many messages to one contact (default 45), then one per `pairIntervalMs`. */
  readonly pairBurst?: number | undefined
  /** Default 6,000 ms. */
  readonly pairIntervalMs?: number | undefined
  readonly isOnBizApp?: boolean | undefined
  readonly isOfficialBusinessAccount?: boolean | undefined
}

export interface NumberRecord {
  readonly phoneNumberId: string
  readonly businessAccountId: string
  displayPhoneNumber: string
  verifiedName: string
  qualityRating: string
  messagingLimitTier: string
  status: string
  nameStatus: string
  codeVerificationStatus: string
  throughputPerSecond: number
  pairBurst: number
  pairIntervalMs: number
  isOnBizApp: boolean
  isOfficialBusinessAccount: boolean
  username: { username: string; status: string } | undefined
  /** `/whatsapp_business_profile`: the members set, as the network stores them. */
  profile: BusinessProfile
  /** `/settings`. */
  settings: NumberSettings
  /** Times of the messages of the last second (throughput). */
  events: Array<number>
  /** Blocked contacts by business-scoped user id, in blocking order. */
  readonly blocked: Map<string, ContactRef>
  /** A display name change (`POST /<pnid>` `new_display_name`) not applied yet; undefined in snapshots older than it. */
  nameChange?: NameChange | undefined
}

export interface UploadSession {
  readonly businessAccountId: string
  readonly fileLength: number
  readonly fileType: string
}

/** Reviewed `nameReviewMs` after submission; an approved name shows `nameReviewMs` after its approval. */
export interface NameChange {
  readonly name: string
  readonly submittedAt: number
  readonly verdict: "APPROVED" | "DECLINED"
}

export interface BusinessProfile {
  about?: string
  address?: string
  description?: string
  email?: string
  profile_picture_url?: string
  websites?: Array<string>
  vertical?: string
}

export interface NumberSettings {
  calling: {
    status: string
    call_icon_visibility: string
    callback_permission_status: string
    call_hours?: Json
    sip?: Json
  }
}

export interface AccountRecord {
  readonly id: string
  subscription: { readonly overrideCallbackUri?: string | undefined } | undefined
}

/** A contact as the network knows it for one business: phone number when known, business-scoped id always. */
export interface ContactRef {
  readonly waId: string | undefined
  readonly userId: string
}

export type { OutboundStatus } from "../../network/SimulatedNetwork.ts"
import type { OutboundStatus } from "../../network/SimulatedNetwork.ts"

export interface OutboundRecord {
  readonly id: string
  readonly phoneNumberId: string
  readonly recipient: ContactRef
  /** Sent to a phone number (`to`) rather than to a business-scoped id (`recipient`). */
  readonly toPhone: boolean
  readonly type: string
  readonly envelope: unknown
  readonly raw: Uint8Array
  readonly version: string
  readonly acceptedAt: number
  /** `service` (free-form) or the template's category, lowercase. */
  readonly category: string
  readonly inWindow: boolean
  readonly bizOpaqueCallbackData: string | undefined
  /** Undeliverable messages fail with this code instead of reaching the contact. */
  readonly failure: { readonly code: number; readonly details: string } | undefined
}

export interface InboundRecord {
  readonly id: string
  readonly phoneNumberId: string
  readonly contact: ContactRef
  readonly receivedAt: number
  read: boolean
}

export interface MediaRecord {
  readonly id: string
  readonly businessAccountId: string
  readonly phoneNumberId: string
  readonly bytes: Uint8Array
  readonly mimeType: string
  readonly filename: string | undefined
  readonly sha256: string
  readonly expiresAt: number
  deleted: boolean
}

export interface TemplateRecord {
  readonly id: string
  readonly businessAccountId: string
  readonly name: string
  readonly language: string
  category: string
  subCategory: string | undefined
  parameterFormat: "POSITIONAL" | "NAMED"
  components: Array<Record<string, unknown>>
  status: string
  rejectedReason: string
  /** While `PENDING`: when review ends, and how. */
  review: { readonly at: number; readonly verdict: "APPROVED" | "REJECTED"; readonly reason: string } | undefined
  /** Bumped on every change, so a stale review notification stays silent. */
  generation: number
  readonly createdAt: number
  /** Times of the edits of an approved template (edit limits). */
  edits: Array<number>
  deleted: boolean
}

export interface FlowRecord {
  readonly id: string
  readonly businessAccountId: string
  name: string
  categories: Array<string>
  endpointUri: string | undefined
  applicationId: string | undefined
}

/** What a transport needs to know about time and ids for one request. */
export interface RequestContext {
  readonly now: number
  /** A fresh uuid from `Ids`, for the object this request may create. */
  readonly uuid: string
  readonly baseUrl: string
}

/** Work a request leaves behind: webhooks to report now or later. */
export type Followup =
  | { readonly _tag: "Statuses"; readonly messageId: string }
  | { readonly _tag: "TemplateReview"; readonly templateId: string; readonly generation: number; readonly at: number }
  | { readonly _tag: "Webhook"; readonly businessAccountId: string; readonly field: string; readonly value: unknown }

/** A decided request: the JSON answer (or bytes) and the follow-ups. */
export interface Outcome {
  readonly status: number
  readonly json?: unknown
  readonly bytes?: { readonly contentType: string; readonly body: Uint8Array } | undefined
  readonly error?: SimError | undefined
  readonly followups: ReadonlyArray<Followup>
}

export const ok = (json: unknown, followups: ReadonlyArray<Followup> = []): Outcome => ({ status: 200, json, followups })
export const fail = (error: SimError): Outcome => ({ status: 0, error, followups: [] })

/**
 * The messages a number delivered, oldest first, at most `limit`: a full
 * outbox forgets its oldest as a new one comes. Forgetting costs O(1)
 * amortised (the forgotten prefix is cut away once it is half the storage),
 * so a long-running sandbox pays nothing per send for its history.
 */
export class NumberOutbox {
  private items: Array<OutboundRecord | undefined> = []
  private head = 0
  private readonly limit: number
  constructor(limit: number) {
    this.limit = limit
  }
  /** Appends `record`; answers the one it displaced, if the outbox was full. */
  push(record: OutboundRecord): OutboundRecord | undefined {
    this.items.push(record)
    if (this.items.length - this.head <= this.limit) return undefined
    const oldest = this.items[this.head]
    this.items[this.head++] = undefined
    if (this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
    return oldest
  }
  toArray(): Array<OutboundRecord> {
    return this.items.slice(this.head) as Array<OutboundRecord>
  }
}

/**
 * The kinds of objects the simulator keeps durable (`Durability.ts` says how
 * each is written and read back). Throughput and pair-rate counters, trace
 * ids and webhooks waiting for a retry are not kept: they matter for seconds.
 */
export type SimObjectKind =
  | "number"
  | "account"
  | "token"
  | "contact"
  | "phone"
  | "window"
  | "inbound"
  | "media"
  | "template"
  | "deletedName"
  | "flow"
  | "unreachable"

export class SimState {
  readonly numbers = new Map<string, NumberRecord>()
  readonly accounts = new Map<string, AccountRecord>()
  readonly tokens = new Map<string, { readonly businessAccountId: string; expired: boolean }>()
  /** `waba|waId` → business-scoped user id. */
  readonly userIds = new Map<string, string>()
  /** `waba|userId` → contact. */
  readonly contacts = new Map<string, ContactRef>()
  /** `pnid|userId` → time of the last inbound message. */
  readonly windows = new Map<string, number>()
  /** `pnid|userId` → pair-rate bucket. */
  readonly pairBuckets = new Map<string, { tokens: number; at: number }>()
  readonly outbound = new Map<string, OutboundRecord>()
  readonly inbound = new Map<string, InboundRecord>()
  /** `pnid|userId` → ids of that pair's unread inbound messages (`keepInbound`, `dropInbound`, `markInboundRead`). */
  private readonly unread = new Map<string, Set<string>>()
  readonly outboxes = new Map<string, NumberOutbox>()
  readonly media = new Map<string, MediaRecord>()
  readonly templates = new Map<string, TemplateRecord>()
  /** `waba|name` → when an approved template of that name was deleted (30-day reuse ban). */
  readonly deletedNames = new Map<string, number>()
  readonly flows = new Map<string, FlowRecord>()
  /** Contacts (phone or business-scoped id) the network cannot deliver to. */
  readonly unreachable = new Set<string>()
  /** username → phone number id. */
  readonly usernames = new Map<string, string>()
  /**
   * Codes of the signup dialog not yet exchanged. Not saved to a store: a code
   * lives ten minutes, and a restart only makes the customer sign up again.
   */
  readonly signupGrants = new Map<string, SignupGrant>()
  /**
   * Open resumable upload sessions (`POST /app/uploads`) by id, until their bytes arrive. Not saved to a store:
   * a session lasts one upload, and a restart only makes its caller open another.
   */
  readonly uploadSessions = new Map<string, UploadSession>()
  private traces = 0

  /**
   * Whether changes are tracked for a store. When they are, every change to
   * the maps above names what it changed with `touch` (or `delivered` and
   * `forgotten` for the outboxes), and the simulator saves it before it answers.
   */
  durable = false
  /** Objects changed since the last save, by kind. */
  readonly changed = new Map<SimObjectKind, Set<string>>()
  /** Messages accepted since the last save, in order. */
  delivered: Array<OutboundRecord> = []
  /** Ids of messages the outboxes forgot since the last save. */
  forgotten: Array<string> = []

  /** Keys the media download addresses. */
  readonly urlSecret: string

  constructor(urlSecret: string) {
    this.urlSecret = urlSecret
  }

  /** Records that the object `key` of `kind` changed (or went away). */
  touch(kind: SimObjectKind, key: string): void {
    if (!this.durable) return
    let keys = this.changed.get(kind)
    if (keys === undefined) this.changed.set(kind, keys = new Set())
    keys.add(key)
  }

  get hasChanges(): boolean {
    return this.changed.size > 0 || this.delivered.length > 0 || this.forgotten.length > 0
  }

  /** Keeps an inbound message (received, or restored from a store). */
  keepInbound(record: InboundRecord): void {
    this.inbound.set(record.id, record)
    if (record.read) return
    const pair = `${record.phoneNumberId}|${record.contact.userId}`
    let ids = this.unread.get(pair)
    if (ids === undefined) this.unread.set(pair, ids = new Set())
    ids.add(record.id)
  }

  /** Forgets an inbound message. */
  dropInbound(id: string): void {
    const record = this.inbound.get(id)
    if (record === undefined) return
    this.inbound.delete(id)
    this.settleUnread(`${record.phoneNumberId}|${record.contact.userId}`, id)
  }

  /**
   * Marks `record` and its pair's earlier unread inbound messages read, each touched. Only the pair's unread
   * messages are visited: a mark-read costs what the contact left unread, not every message the number keeps.
   */
  markInboundRead(record: InboundRecord): void {
    const pair = `${record.phoneNumberId}|${record.contact.userId}`
    for (const id of this.unread.get(pair) ?? []) {
      const other = this.inbound.get(id)
      if (other === undefined || other.receivedAt > record.receivedAt) continue
      other.read = true
      this.touch("inbound", id)
      this.settleUnread(pair, id)
    }
  }

  private settleUnread(pair: string, id: string): void {
    const ids = this.unread.get(pair)
    if (ids === undefined) return
    ids.delete(id)
    if (ids.size === 0) this.unread.delete(pair)
  }

  /** Keeps `record` in its number's outbox (at most `limit`, the oldest forgotten first). */
  deliver(record: OutboundRecord, limit: number): void {
    this.outbound.set(record.id, record)
    let outbox = this.outboxes.get(record.phoneNumberId)
    if (outbox === undefined) this.outboxes.set(record.phoneNumberId, outbox = new NumberOutbox(limit))
    // A long-running sandbox forgets its oldest messages rather than growing without bound.
    const forgotten = outbox.push(record)
    if (forgotten !== undefined) this.outbound.delete(forgotten.id)
    if (!this.durable) return
    this.delivered.push(record)
    if (forgotten !== undefined) this.forgotten.push(forgotten.id)
  }

  nextTraceId(): string {
    return `A${createHash("sha1").update(`trace:${++this.traces}:${this.urlSecret}`).digest("base64url").slice(0, 22)}`
  }
}

// ---------------------------------------------------------------------------------------------
// Ids

/** `wamid.` followed by an opaque base64 string, like the network's. */
export const messageId = (uuid: string, contact: string): string =>
  `wamid.${Buffer.from(`HBgL${contact}FQIAERgS${uuid.replace(/-/g, "").toUpperCase()}`).toString("base64")}`

/** A 16-digit numeric id (media, templates, forms), below 2^53 so it also fits a JSON number. */
export const numericId = (uuid: string): string =>
  (1_000_000_000_000_000n + BigInt(`0x${uuid.replace(/-/g, "")}`) % 8_000_000_000_000_000n).toString()

// ---------------------------------------------------------------------------------------------
// Contacts

const countryPrefixes: ReadonlyArray<readonly [string, string]> = [
  ["1", "US"],
  ["44", "GB"],
  ["49", "DE"],
  ["33", "FR"],
  ["34", "ES"],
  ["39", "IT"],
  ["52", "MX"],
  ["55", "BR"],
  ["91", "IN"],
  ["62", "ID"],
  ["234", "NG"],
  ["27", "ZA"]
]

/** The business-scoped user id the network gives a phone number within one business: `<CC>.<digits>`. */
export const deriveUserId = (businessAccountId: string, waId: string): string => {
  const country = countryPrefixes.find(([prefix]) => waId.startsWith(prefix))?.[1] ?? "US"
  const digest = createHash("sha256").update(`${businessAccountId}|${waId}`).digest()
  return `${country}.${digest.readBigUInt64BE(0).toString().padStart(20, "0")}`
}

export { isUserId, normalizePhone } from "../../network/Contacts.ts"

export const contactByPhone = (state: SimState, businessAccountId: string, waId: string): ContactRef => {
  const key = `${businessAccountId}|${waId}`
  let userId = state.userIds.get(key)
  if (userId === undefined) {
    userId = deriveUserId(businessAccountId, waId)
    state.userIds.set(key, userId)
    state.contacts.set(`${businessAccountId}|${userId}`, { waId, userId })
    state.touch("phone", key)
    state.touch("contact", `${businessAccountId}|${userId}`)
  }
  return { waId, userId }
}

export const contactByUserId = (state: SimState, businessAccountId: string, userId: string): ContactRef =>
  state.contacts.get(`${businessAccountId}|${userId}`) ?? { waId: undefined, userId }

export const rememberContact = (state: SimState, businessAccountId: string, contact: ContactRef): void => {
  state.contacts.set(`${businessAccountId}|${contact.userId}`, contact)
  state.touch("contact", `${businessAccountId}|${contact.userId}`)
  if (contact.waId === undefined) return
  state.userIds.set(`${businessAccountId}|${contact.waId}`, contact.userId)
  state.touch("phone", `${businessAccountId}|${contact.waId}`)
}

export const isReachable = (state: SimState, contact: ContactRef): boolean =>
  !state.unreachable.has(contact.userId) && (contact.waId === undefined || !state.unreachable.has(contact.waId))

// ---------------------------------------------------------------------------------------------
// Windows and rates

export const windowKey = (phoneNumberId: string, contact: ContactRef) => `${phoneNumberId}|${contact.userId}`

export const windowOpen = (state: SimState, phoneNumberId: string, contact: ContactRef, now: number): boolean => {
  const last = state.windows.get(windowKey(phoneNumberId, contact))
  return last !== undefined && now - last < WINDOW_MS
}

/** Messages of the number in the last second. */
export const throughputUsed = (number: NumberRecord, now: number): number => {
  const from = now - 1000
  let drop = 0
  while (drop < number.events.length && number.events[drop]! <= from) drop++
  if (drop > 0) number.events.splice(0, drop)
  return number.events.length
}

export const pairTokens = (state: SimState, number: NumberRecord, contact: ContactRef, now: number) => {
  const key = windowKey(number.phoneNumberId, contact)
  const bucket = state.pairBuckets.get(key) ?? { tokens: number.pairBurst, at: now }
  const tokens = Math.min(number.pairBurst, bucket.tokens + (now - bucket.at) / number.pairIntervalMs)
  return {
    available: tokens,
    take: () => void state.pairBuckets.set(key, { tokens: tokens - 1, at: now })
  }
}

// ---------------------------------------------------------------------------------------------
// Small readers over untrusted JSON

export type Json = Record<string, unknown>

export const sha256Hex = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex")

/** Epoch seconds as the network writes them: a string. */
export const epochSeconds = (ms: number): string => String(Math.floor(ms / 1000))
