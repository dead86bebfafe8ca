/**
 * A number on the simulated network: connecting it (`NetworkSimulator.registerNumber`), how the network reports it
 * (`GET /<pnid>`, `<waba>/phone_numbers`): its facts, the fields it answers without `fields`, its health
 * (`health_status`: what may send), and its display name changes (`POST /<pnid>` with `new_display_name`:
 * `PENDING_REVIEW` for `nameReviewMs`, then the verdict, then shown).
 */
import { Predicate } from "effect"
import {
  fail,
  type NumberRecord,
  ok,
  type Outcome,
  type RequestContext,
  type SimState,
  type SimulatedNumberInput
} from "./Model.ts"
import { type SimError, simError } from "../../network/ErrorCodes.ts"
import { newProfile, newSettings } from "./Profile.ts"
import type { SimConfig } from "./Routes.ts"

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

/** The network's display name rules this simulator keeps: 3 to 75 characters; never the network's own name. */
export const requestDisplayName = (state: SimState, ctx: RequestContext, number: NumberRecord, body: unknown): Outcome => {
  const name = Predicate.isObject(body) ? body["new_display_name"] : undefined
  if (typeof name !== "string") return fail(simError(100, "The parameter new_display_name is required."))
  const length = [...name.trim()].length
  if (length < 3 || length > 75) return fail(simError(100, "Param new_display_name must be 3 to 75 characters long"))
  // A newer request replaces one still under review.
  number.nameChange = {
    name: name.trim(),
    submittedAt: ctx.now,
    verdict: /whatsapp/i.test(name) ? "DECLINED" : "APPROVED"
  }
  state.touch("number", number.phoneNumberId)
  return ok({ success: true })
}

/** Moves a number's name change on with the clock: reviewed, then (approved) shown as the verified name. */
export const refreshNameChange = (state: SimState, config: SimConfig, number: NumberRecord, now: number): void => {
  const change = number.nameChange
  if (change === undefined || change.verdict !== "APPROVED") return
  if (now < change.submittedAt + 2 * config.nameReviewMs) return
  number.verifiedName = change.name
  number.nameStatus = "APPROVED"
  number.nameChange = undefined
  state.touch("number", number.phoneNumberId)
}

const newNameStatus = (config: SimConfig, number: NumberRecord, now: number): string => {
  const change = number.nameChange
  if (change === undefined) return "NONE"
  return now < change.submittedAt + config.nameReviewMs ? "PENDING_REVIEW" : change.verdict
}

const numberFacts = (number: NumberRecord, config: SimConfig, now: number): Record<string, unknown> => ({
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
  health_status: healthStatus(number),
  // Absent from the answer (undefined is not encoded) when no change is under way.
  new_display_name: number.nameChange?.name,
  new_name_status: newNameStatus(config, number, now)
})

export const numberView = (
  state: SimState,
  config: SimConfig,
  number: NumberRecord,
  fields: string | undefined,
  now: number
): Record<string, unknown> | SimError => {
  refreshNameChange(state, config, number, now)
  const facts = numberFacts(number, config, now)
  const wanted = fields === undefined
    ? defaultNumberFields
    : ["id", ...fields.split(",").map((f) => f.trim()).filter((f) => f.length > 0)]
  const unknown = wanted.find((field) => !(field in facts))
  if (unknown !== undefined) {
    return simError(100, `Tried accessing nonexisting field (${unknown}) on node type (WhatsAppBusinessPhoneNumber)`)
  }
  return Object.fromEntries(wanted.map((field) => [field, facts[field]]))
}

/**
 * Connects a number (creating its account, with the app subscribed, and its token); connecting it again updates
 * its facts and keeps what it has gathered (username, profile, settings, rate events, block list, name change).
 */
export const connectNumber = (state: SimState, input: SimulatedNumberInput): void => {
  const existing = state.numbers.get(input.phoneNumberId)
  const number: NumberRecord = {
    phoneNumberId: input.phoneNumberId,
    businessAccountId: input.businessAccountId,
    displayPhoneNumber: input.displayPhoneNumber,
    verifiedName: input.verifiedName,
    qualityRating: input.qualityRating ?? "GREEN",
    messagingLimitTier: input.messagingLimitTier ?? "TIER_10K",
    status: input.status ?? "CONNECTED",
    nameStatus: input.nameStatus ?? "APPROVED",
    codeVerificationStatus: input.codeVerificationStatus ?? "VERIFIED",
    throughputPerSecond: input.throughputPerSecond ?? 80,
    pairBurst: input.pairBurst ?? 45,
    pairIntervalMs: input.pairIntervalMs ?? 6_000,
    isOnBizApp: input.isOnBizApp ?? false,
    isOfficialBusinessAccount: input.isOfficialBusinessAccount ?? false,
    username: existing?.username,
    profile: existing?.profile ?? newProfile(),
    settings: existing?.settings ?? newSettings(),
    events: existing?.events ?? [],
    blocked: existing?.blocked ?? new Map(),
    nameChange: existing?.nameChange
  }
  state.numbers.set(number.phoneNumberId, number)
  if (!state.accounts.has(input.businessAccountId)) {
    // A connected number's account has the app subscribed, as onboarding leaves it.
    state.accounts.set(input.businessAccountId, { id: input.businessAccountId, subscription: {} })
    state.touch("account", input.businessAccountId)
  }
  state.tokens.set(input.accessToken, { businessAccountId: input.businessAccountId, expired: false })
  state.touch("number", number.phoneNumberId)
  state.touch("token", input.accessToken)
}
