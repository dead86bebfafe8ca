/**
 * Setup links (decisions 2.13, 3.6, 4.8): create (one active link per
 * customer: a new one revokes the previous), list, change and revoke them, and
 * open one by the token of its page. The onboarding the page walks through,
 * which connects the number, is messaging's (`messaging/numbers/Onboarding.ts`).
 *
 * The same methods serve the Platform API, the older surface and MCP tools.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { randomBytes } from "node:crypto"
import { publicUrlOf, PublicUrl } from "../shared/PublicUrl.ts"
import { phoneDigits } from "../network/Contacts.ts"
import { CustomerNumbers } from "./CustomerNumbers.ts"
import { CustomersRepo } from "./CustomersRepo.ts"
import { SetupLinksRepo } from "./SetupLinksRepo.ts"
import { Transactor } from "../ports/Transactor.ts"
import type { Principal } from "../projects/Projects.ts"
import { type NotFound, notFound, type Unprocessable, unprocessable } from "../shared/ApiError.ts"
import { Ids } from "../shared/Ids.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import {
  BILLING_MODES,
  type BillingMode,
  CONNECTION_TYPES,
  type ConnectionType,
  effectiveStatus,
  hashToken,
  isHexColor,
  SETUP_LINK_LANGUAGES,
  SETUP_LINK_VALIDITY_MS,
  type SetupLinkCreateInput,
  type SetupLinkLanguage,
  type SetupLinkRecord,
  type SetupLinkUpdateInput,
  THEME_COLORS,
  type ThemeConfig
} from "./SetupLink.ts"

/** Where the host serves a link's page: `<public url>/setup/<token>`. */
export const SETUP_PAGE_PATH = "/setup"

/** A link just created, with the token its page opens with (answered once). */
export interface CreatedSetupLink {
  readonly link: SetupLinkRecord
  readonly token: string
  readonly url: string
}

const invalid = (field: string, message: string) =>
  unprocessable(`setup_link.${field} ${message}`, [{ path: `setup_link.${field}`, message }])

const linkNotFound = (id: string) => notFound("Setup link", id)

const redirectUrl = (field: string, given: string | null | undefined): Effect.Effect<string | null, Unprocessable> => {
  if (given === undefined || given === null || given.trim() === "") return Effect.succeed(null)
  const url = given.trim()
  return URL.canParse(url) && ["http:", "https:"].includes(new URL(url).protocol)
    ? Effect.succeed(url)
    : Effect.fail(invalid(field, "must be an http(s) URL"))
}

/** Known colours in `#RRGGBB`; other keys are ignored like any unknown key of an envelope (decisions 1.1). */
const themeConfig = (given: Readonly<Record<string, unknown>>): Effect.Effect<ThemeConfig, Unprocessable> => {
  const theme: Record<string, string> = {}
  const wrong: Array<string> = []
  for (const key of THEME_COLORS) {
    const value = given[key]
    if (value === undefined || value === null) continue
    if (isHexColor(value)) theme[key] = value.toLowerCase()
    else wrong.push(key)
  }
  return wrong.length === 0
    ? Effect.succeed(theme)
    : Effect.fail(unprocessable(
      `setup_link.theme_config: ${wrong.join(", ")} must be colours in #RRGGBB`,
      wrong.map((key) => ({ path: `setup_link.theme_config.${key}`, message: "must be a colour in #RRGGBB" }))
    ))
}

const language = (given: string | null | undefined): Effect.Effect<SetupLinkLanguage | null, Unprocessable> =>
  given === undefined || given === null
    ? Effect.succeed(null)
    : (SETUP_LINK_LANGUAGES as ReadonlyArray<string>).includes(given)
    ? Effect.succeed(given as SetupLinkLanguage)
    : Effect.fail(invalid("language", `must be one of ${SETUP_LINK_LANGUAGES.join(", ")} or null`))

const billingMode = (given: string | null | undefined): Effect.Effect<BillingMode, Unprocessable> =>
  given === undefined || given === null
    ? Effect.succeed("customer_managed")
    : (BILLING_MODES as ReadonlyArray<string>).includes(given)
    ? Effect.succeed(given as BillingMode)
    : Effect.fail(invalid("upstream_billing_mode", `must be one of ${BILLING_MODES.join(", ")}`))

const connectionTypes = (
  given: ReadonlyArray<string> | null | undefined
): Effect.Effect<ReadonlyArray<ConnectionType>, Unprocessable> => {
  if (given === undefined || given === null) return Effect.succeed(CONNECTION_TYPES)
  if (given.length === 0 || !given.every((t) => (CONNECTION_TYPES as ReadonlyArray<string>).includes(t))) {
    return Effect.fail(invalid("allowed_connection_types", `must be a non-empty array of ${CONNECTION_TYPES.join(", ")}`))
  }
  // Stored in one order whatever the order given.
  return Effect.succeed(CONNECTION_TYPES.filter((t) => given.includes(t)))
}

const countries = (given: ReadonlyArray<string> | null | undefined): Effect.Effect<ReadonlyArray<string>, Unprocessable> => {
  if (given === undefined || given === null) return Effect.succeed(["US"])
  const codes = given.map((c) => c.trim().toUpperCase())
  return codes.length > 0 && codes.every((c) => /^[A-Z]{2}$/.test(c))
    ? Effect.succeed([...new Set(codes)])
    : Effect.fail(invalid("phone_number_country_isos", "must be a non-empty array of ISO 3166-1 alpha-2 country codes"))
}

export class SetupLinks extends Context.Service<SetupLinks, {
  /** Ends the customer's active link and creates a new one; the token and `url` are answered only here. */
  readonly create: (
    principal: Principal,
    customerId: string,
    input: SetupLinkCreateInput
  ) => Effect.Effect<CreatedSetupLink, NotFound | Unprocessable>
  /** Newest first. */
  readonly list: (
    principal: Principal,
    customerId: string,
    window: ListWindow
  ) => Effect.Effect<ListSlice<SetupLinkRecord>, NotFound>
  readonly get: (principal: Principal, customerId: string, id: string) => Effect.Effect<SetupLinkRecord, NotFound>
  /** Revoke (`status: "revoked"`), redirects, theme, language; 422 unless the link is active. */
  readonly update: (
    principal: Principal,
    customerId: string,
    id: string,
    input: SetupLinkUpdateInput
  ) => Effect.Effect<SetupLinkRecord, NotFound | Unprocessable>
  readonly revoke: (principal: Principal, customerId: string, id: string) => Effect.Effect<SetupLinkRecord, NotFound | Unprocessable>
  /** The link a page token opens, in any state; None for a token of no link. */
  readonly open: (token: string) => Effect.Effect<Option.Option<SetupLinkRecord>>
  /**
   * Onboarding's progress on a link still `active`: replaces its changeable fields (a compare-and-set: of two
   * completions, one wins); None when it is no longer active.
   */
  readonly updateActive: (link: SetupLinkRecord) => Effect.Effect<Option.Option<SetupLinkRecord>>
}>()("@parley/core/tenancy/SetupLinks") {
  static readonly layer = Layer.effect(
    SetupLinks,
    Effect.gen(function*() {
      const repo = yield* SetupLinksRepo
      const customers = yield* CustomersRepo
      const numbers = yield* CustomerNumbers
      const tx = yield* Transactor
      const ids = yield* Ids

      const customerOf = (projectId: string, customerId: string) =>
        customers.findById(projectId, customerId).pipe(
          Effect.flatMap(Option.match({ onNone: () => Effect.fail(notFound("Customer", customerId)), onSome: Effect.succeed }))
        )

      const find = (projectId: string, customerId: string, id: string) =>
        repo.findById(projectId, customerId, id).pipe(
          Effect.flatMap(Option.match({ onNone: () => Effect.fail(linkNotFound(id)), onSome: Effect.succeed }))
        )

      const create = Effect.fn("SetupLinks.create")(function*(principal: Principal, customerId: string, input: SetupLinkCreateInput) {
        const projectId = principal.project.id
        const customer = yield* customerOf(projectId, customerId)
        const success = yield* redirectUrl("success_redirect_url", input.success_redirect_url)
        const failure = yield* redirectUrl("failure_redirect_url", input.failure_redirect_url)
        const theme = yield* themeConfig(input.theme_config ?? {})
        const lang = yield* language(input.language)
        const billing = yield* billingMode(input.upstream_billing_mode)
        const isos = yield* countries(input.phone_number_country_isos)
        let allowed = yield* connectionTypes(input.allowed_connection_types)
        let provision = input.provision_phone_number ?? false
        let reconnect: string | null = null
        const given = input.reconnect_phone_number
        if (given !== undefined && given !== null && given.trim() !== "") {
          const digits = phoneDigits(given)
          if (!/^\+?[\d\s\-()]+$/.test(given.trim()) || digits.length < 5) {
            return yield* invalid("reconnect_phone_number", "must be a phone number")
          }
          const connection = yield* numbers.productionConnection(projectId, customer.id, digits)
          if (Option.isNone(connection)) {
            return yield* invalid("reconnect_phone_number", "must be a number on one of the customer's production configs")
          }
          // Reconnecting refreshes that config's credentials: no new number, and its own connection type.
          reconnect = digits
          provision = false
          allowed = [connection.value]
        }
        const now = yield* Clock.currentTimeMillis
        const token = randomBytes(32).toString("base64url")
        const link: SetupLinkRecord = {
          id: yield* ids.uuid,
          project_id: projectId,
          customer_id: customer.id,
          token_hash: hashToken(token),
          status: "active",
          msg_setup_status: "pending",
          error_code: null,
          expires_at: new Date(now + SETUP_LINK_VALIDITY_MS).toISOString(),
          success_redirect_url: success,
          failure_redirect_url: failure,
          allowed_connection_types: allowed,
          theme_config: theme,
          language: lang,
          provision_phone_number: provision,
          phone_number_country_isos: isos,
          upstream_billing_mode: billing,
          reconnect_phone_number: reconnect,
          phone_number_id: null,
          used_at: null,
          revoked_at: null,
          created_at: new Date(now).toISOString(),
          updated_at: new Date(now).toISOString()
        }
        yield* tx.withTransaction(Effect.gen(function*() {
          yield* repo.endActive(projectId, customer.id, link.created_at)
          yield* repo.insert(link)
        })).pipe(
          Effect.catchTag("Duplicate", () =>
            Effect.fail(unprocessable("Another setup link was created for this customer at the same moment; retry")))
        )
        const url = publicUrlOf(yield* PublicUrl, `${SETUP_PAGE_PATH.slice(1)}/${token}`).toString()
        return { link, token, url }
      })

      const list = Effect.fn("SetupLinks.list")(function*(principal: Principal, customerId: string, window: ListWindow) {
        const customer = yield* customerOf(principal.project.id, customerId)
        return yield* repo.list(principal.project.id, customer.id, window)
      })

      const get = Effect.fn("SetupLinks.get")(function*(principal: Principal, customerId: string, id: string) {
        return yield* find(principal.project.id, customerId, id)
      })

      const update = Effect.fn("SetupLinks.update")(
        function*(principal: Principal, customerId: string, id: string, input: SetupLinkUpdateInput) {
          const current = yield* find(principal.project.id, customerId, id)
          if (input.status !== undefined && input.status !== "revoked") {
            return yield* invalid("status", "can only be changed to revoked")
          }
          const now = yield* Clock.currentTimeMillis
          const status = effectiveStatus(current, now)
          if (status !== "active") return yield* unprocessable(`The setup link is ${status}; only active links change`)
          const iso = new Date(now).toISOString()
          const next: SetupLinkRecord = {
            ...current,
            success_redirect_url: input.success_redirect_url !== undefined
              ? yield* redirectUrl("success_redirect_url", input.success_redirect_url)
              : current.success_redirect_url,
            failure_redirect_url: input.failure_redirect_url !== undefined
              ? yield* redirectUrl("failure_redirect_url", input.failure_redirect_url)
              : current.failure_redirect_url,
            // Colours given replace those stored; null clears the theme.
            theme_config: input.theme_config === undefined
              ? current.theme_config
              : input.theme_config === null
              ? {}
              : { ...current.theme_config, ...(yield* themeConfig(input.theme_config)) },
            language: input.language !== undefined ? yield* language(input.language) : current.language,
            ...(input.status === "revoked" ? { status: "revoked" as const, revoked_at: iso } : {}),
            updated_at: iso
          }
          const stored = yield* repo.updateActive(next)
          return yield* Option.match(stored, {
            onNone: () => Effect.fail(unprocessable("The setup link is no longer active; only active links change")),
            onSome: Effect.succeed
          })
        }
      )

      return SetupLinks.of({
        create,
        list,
        get,
        update,
        revoke: (principal, customerId, id) => update(principal, customerId, id, { status: "revoked" }),
        open: (token) => repo.findByTokenHash(hashToken(token)),
        updateActive: repo.updateActive
      })
    })
  )
}
