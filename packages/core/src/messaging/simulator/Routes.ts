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
import { isApiVersion, MessagingProduct } from "../NetworkObjects.ts"
import {
  authenticate,
  contactByPhone,
  contactByUserId,
  fail,
  type FlowRecord,
  isObject,
  isSimError,
  isUserId,
  normalizePhone,
  type NumberRecord,
  ok,
  type Outcome,
  ownedAccount,
  ownedNumber,
  page,
  type RequestContext,
  type SimState,
  stringField,
  windowOpen
} from "./Model.ts"
import { type SimError, simError, unknownObject } from "./NetworkErrors.ts"
import type { SimRequest } from "./Protocol.ts"
import { profileView, settingsView, updateProfile, updateSettings } from "./Profile.ts"
import { exchangeCode } from "./Signup.ts"
import { send } from "./Outbound.ts"
import { download, mediaInfo, openUploadSession, upload, uploadAsset, usableMedia } from "./MediaStorage.ts"
import { notJson, readBody } from "./RequestBody.ts"
import {
  createTemplate,
  deleteTemplates,
  editTemplate,
  listTemplates,
  project,
  refreshTemplate,
  templateView
} from "./TemplateManagement.ts"

export interface SimConfig {
  /** How long a template stays `PENDING`. */
  readonly templateReviewMs: number
  /** How long a display name change stays `PENDING_REVIEW`, then `APPROVED` before the number shows it. */
  readonly nameReviewMs: number
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

const BLOCK_LIST_LIMIT = 64_000
/** How many outbound messages a number remembers by default. */
export const OUTBOX_LIMIT = 10_000
/** Inbound messages remembered (mark read); older ones are forgotten. */
export const INBOUND_LIMIT = 100_000

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

// ---------------------------------------------------------------------------------------------
// Display name changes

/** The network's display name rules this simulator keeps: 3 to 75 characters; never the network's own name. */
const requestDisplayName = (state: SimState, ctx: RequestContext, number: NumberRecord, body: unknown): Outcome => {
  const name = isObject(body) ? body["new_display_name"] : undefined
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

const numberView = (
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

  if (id === "app" && edge === "uploads" && method === "POST") return openUploadSession(state, ctx, accountId, request)
  if (id.startsWith("upload:") && edge === undefined && method === "POST") return uploadAsset(state, ctx, accountId, id, request)

  if (edge === undefined) {
    const number = state.numbers.get(id)
    if (number !== undefined && number.businessAccountId === accountId) {
      if (method === "POST") return withBody((value) => requestDisplayName(state, ctx, number, value))
      if (method !== "GET") return unsupported
      const view = numberView(state, config, number, request.query["fields"], ctx.now)
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
    case "settings":
    case "deregister": {
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
      if (edge === "deregister" && method === "POST") {
        // Given up: the number can no longer send (a provisioned one goes back to the network's pool).
        number.status = "DISCONNECTED"
        return ok({ success: true })
      }
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
          const view = numberView(state, config, number, request.query["fields"], ctx.now)
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
