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
 *
 * This module dispatches; each concern decides in its own module: `Outbound`
 * (sends), `TemplateManagement`, `MediaStorage`, `Numbers`, `BlockedUsers`,
 * `Usernames`, `Profile`, `Flows`, `Signup` (the code exchange).
 */
import { Predicate } from "effect"
import { isApiVersion, MessagingProduct } from "../../network/NetworkObjects.ts"
import { blockUsers } from "./BlockedUsers.ts"
import { flowView, updateFlow } from "./Flows.ts"
import { download, mediaInfo, openUploadSession, upload, uploadAsset, usableMedia } from "./MediaStorage.ts"
import { authenticate, bearerToken, isSimError, ownedAccount, ownedNumber } from "./Access.ts"
import {
  fail,
  ok,
  type Outcome,
  type RequestContext,
  type SimState
} from "./Model.ts"
import { page } from "./Paging.ts"
import { simError, unknownObject } from "../../network/ErrorCodes.ts"
import { numberView, requestDisplayName } from "./Numbers.ts"
import { send } from "./Outbound.ts"
import { profileView, settingsView, updateProfile, updateSettings } from "./Profile.ts"
import type { SimRequest } from "./Protocol.ts"
import { notJson, readBody } from "./RequestBody.ts"
import { exchangeCode } from "./Signup.ts"
import {
  createTemplate,
  deleteTemplates,
  editTemplate,
  listTemplates,
  project,
  refreshTemplate,
  templateView
} from "./TemplateManagement.ts"
import { setUsername, usernameSuggestions } from "./Usernames.ts"

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

/** How many outbound messages a number remembers by default. */
export const OUTBOX_LIMIT = 10_000

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
  const self = { url: `${request.baseUrl}/${segments.join("/")}`, accessToken: bearerToken(request.authorization) }
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
          const result = page(users, request.query, self, 100)
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
        if (method === "GET") return listTemplates(state, request, ctx, account.id, self)
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
        const result = page(numbers, request.query, self, 25)
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
            const fields = Predicate.isObject(value) ? value : {}
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
