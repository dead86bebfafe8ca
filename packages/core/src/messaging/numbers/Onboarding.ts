/**
 * The onboarding a setup link's page walks a customer through (decisions
 * 2.13, 3.6): the network's embedded signup dialog (the simulator's, or the
 * real network's at `PARLEY_UPSTREAM_SIGNUP_URL`), then, when the dialog
 * returns, the code exchange through `MessagingNetwork`, the checks of the
 * number, and in one transaction the production config, the link marked
 * `used` and `msg.phone_number.created`. Every outcome names where the
 * customer goes next: the link's redirect with the exact query of 2.13.
 */
import { Clock, Config, Context, Effect, Layer, Option, Redacted } from "effect"
import { publicUrlOf, PublicUrl } from "../../shared/PublicUrl.ts"
import { Customers } from "../../tenancy/Customers.ts"
import { MessageConfigsRepo } from "./MessageConfigsRepo.ts"
import { MessagingNetwork, type NetworkAccess } from "../../network/MessagingNetwork.ts"
import { Outbox } from "../../ports/Outbox.ts"
import { Transactor } from "../../ports/Transactor.ts"
import { Ids } from "../../shared/Ids.ts"
import { SETUP_PAGE_PATH, SetupLinks } from "../../tenancy/SetupLinks.ts"
import { findProductionConfig } from "./CustomerNumbers.ts"
import {
  type ConnectionType,
  effectiveStatus,
  type SetupErrorCode,
  type SetupLinkRecord
} from "../../tenancy/SetupLink.ts"
import { MSG_PHONE_NUMBER_CREATED, phoneNumberEventPayload } from "../DomainEvents.ts"
import type { PhoneNumberFacts } from "../../network/NetworkObjects.ts"
import { UpstreamSettings } from "../Upstream.ts"
import { LiveNumbers } from "./LiveNumbers.ts"
import { emptyFacts, factsFrom, type MessageConfigRecord, phoneDigits } from "./MessageConfig.ts"

/** Where a host in simulator mode serves the simulated network's signup dialog. */
export const SIMULATED_SIGNUP_PATH = "/simulator/signup"

/** The real network's embedded-signup dialog: the default of `PARLEY_UPSTREAM_SIGNUP_URL`. */
export const DefaultSignupUrl = "https://www.facebook.com/v24.0/dialog/oauth"

/**
 * The app the signup runs for. In simulator mode the simulator's app with the
 * host's app secret; in cloud mode `PARLEY_UPSTREAM_APP_ID`,
 * `PARLEY_UPSTREAM_APP_SECRET`, the dialog at `PARLEY_UPSTREAM_SIGNUP_URL` and
 * its configuration `PARLEY_UPSTREAM_SIGNUP_CONFIG_ID`.
 */
export class SignupSettings extends Context.Service<SignupSettings, {
  readonly appId: Option.Option<string>
  readonly appSecret: Option.Option<Redacted.Redacted<string>>
  /** None: the host's own simulated dialog (`SIMULATED_SIGNUP_PATH`). */
  readonly dialogUrl: Option.Option<string>
  readonly configId: Option.Option<string>
}>()("@parley/core/messaging/SignupSettings") {
  static readonly layerConfig: Layer.Layer<SignupSettings, never, UpstreamSettings> = Layer.effect(
    SignupSettings,
    Effect.gen(function*() {
      const upstream = yield* UpstreamSettings
      if (upstream.mode === "simulator") {
        return SignupSettings.of({
          appId: Option.map(upstream.simulator, (simulator) => simulator.appId),
          appSecret: upstream.appSecret,
          dialogUrl: Option.none(),
          configId: Option.none()
        })
      }
      const nonEmpty = (name: string) => Config.option(Config.String(name)).pipe(Config.map(Option.filter((v) => v.trim() !== "")))
      return SignupSettings.of({
        appId: yield* nonEmpty("PARLEY_UPSTREAM_APP_ID"),
        appSecret: upstream.appSecret,
        dialogUrl: Option.some(Option.getOrElse(yield* nonEmpty("PARLEY_UPSTREAM_SIGNUP_URL"), () => DefaultSignupUrl)),
        configId: yield* nonEmpty("PARLEY_UPSTREAM_SIGNUP_CONFIG_ID")
      })
    }).pipe(Effect.orDie)
  )
}

/** What the signup dialog sent back to the page's callback (query parameters, as given). */
export interface SignupCallback {
  readonly code?: string | undefined
  readonly waba_id?: string | undefined
  readonly phone_number_id?: string | undefined
  readonly provisioned?: string | undefined
  /** The dialog's refusal: `access_denied` (login cancelled or failed), or one of the codes of 2.13. */
  readonly error?: string | undefined
}

export type OnboardingOutcome =
  | { readonly _tag: "Connected"; readonly config: MessageConfigRecord; readonly provisioned: boolean }
  | { readonly _tag: "Failed"; readonly code: SetupErrorCode }

/** An attempt's outcome, the link as it now stands, and where the customer goes (null: the page says it). */
export interface OnboardingResult {
  readonly link: SetupLinkRecord
  readonly outcome: OnboardingOutcome
  readonly redirect: string | null
}

/** What the page needs to start: the link and the address of the signup dialog. */
export interface OnboardingStart {
  readonly link: SetupLinkRecord
  /** The link's state now: only an `active` link can be completed. */
  readonly status: SetupLinkRecord["status"]
  readonly dialogUrl: string
  /** Where an ended link sends the customer at once (its failure redirect with `link_expired`/`already_used`). */
  readonly redirect: string | null
}

const dialogErrors: Readonly<Record<string, SetupErrorCode>> = {
  access_denied: "upstream_auth_failed",
  upstream_auth_failed: "upstream_auth_failed",
  waba_limit_reached: "waba_limit_reached",
  phone_verification_failed: "phone_verification_failed"
}

/** The failure an ended link answers: used links `already_used`; expired and revoked ones `link_expired`. */
const endedCode = (status: SetupLinkRecord["status"]): SetupErrorCode => status === "used" ? "already_used" : "link_expired"

const withQuery = (base: string, query: ReadonlyArray<readonly [string, string]>): string => {
  const url = new URL(base)
  for (const [key, value] of query) url.searchParams.set(key, value)
  return url.toString()
}

/** The link's redirect for an outcome (decisions 2.13), or null when the link has none for it. */
export const redirectFor = (link: SetupLinkRecord, outcome: OnboardingOutcome): string | null => {
  if (outcome._tag === "Failed") {
    return link.failure_redirect_url === null
      ? null
      : withQuery(link.failure_redirect_url, [["setup_link_id", link.id], ["error_code", outcome.code]])
  }
  if (link.success_redirect_url === null) return null
  const { config } = outcome
  return withQuery(link.success_redirect_url, [
    ["setup_link_id", link.id],
    ["status", "completed"],
    ["phone_number_id", config.phone_number_id],
    ["business_account_id", config.business_account_id],
    ...(outcome.provisioned ? [["provisioned_phone_number_id", config.phone_number_id] as const] : []),
    ["display_phone_number", `+${config.display_phone_number_normalized}`]
  ])
}

export class Onboarding extends Context.Service<Onboarding, {
  /** The link a page token opens and the dialog to send the customer to; None for an unknown token. */
  readonly start: (token: string) => Effect.Effect<Option.Option<OnboardingStart>>
  /** The dialog came back to the page: connect the number, or say why not. None for an unknown token. */
  readonly complete: (token: string, callback: SignupCallback) => Effect.Effect<Option.Option<OnboardingResult>>
}>()("@parley/core/messaging/Onboarding") {
  static readonly layer = Layer.effect(
    Onboarding,
    Effect.gen(function*() {
      const links = yield* SetupLinks
      const customers = yield* Customers
      const configs = (yield* LiveNumbers).forgetting(yield* MessageConfigsRepo)
      const network = yield* MessagingNetwork
      const settings = yield* SignupSettings
      const outbox = yield* Outbox
      const tx = yield* Transactor
      const ids = yield* Ids

      const callbackUrl = (base: string, token: string) =>
        publicUrlOf(base, `${SETUP_PAGE_PATH.slice(1)}/${token}/callback`).toString()

      const start = Effect.fn("Onboarding.start")(function*(token: string) {
        const found = yield* links.open(token)
        if (Option.isNone(found)) return Option.none<OnboardingStart>()
        const link = found.value
        const status = effectiveStatus(link, yield* Clock.currentTimeMillis)
        const base = yield* PublicUrl
        const dialog = new URL(Option.getOrElse(settings.dialogUrl, () => publicUrlOf(base, SIMULATED_SIGNUP_PATH.slice(1)).toString()))
        const params: ReadonlyArray<readonly [string, string | undefined]> = [
          ["client_id", Option.getOrUndefined(settings.appId)],
          ["config_id", Option.getOrUndefined(settings.configId)],
          ["redirect_uri", callbackUrl(base, token)],
          ["response_type", "code"],
          ["state", link.id],
          // What the dialog offers: the simulated one reads these; the network's reads its configuration.
          ["connection_types", link.allowed_connection_types.join(",")],
          ["provision", link.provision_phone_number ? "1" : undefined],
          ["countries", link.provision_phone_number ? link.phone_number_country_isos.join(",") : undefined],
          ["billing_mode", link.upstream_billing_mode],
          ["lang", link.language ?? undefined]
        ]
        for (const [key, value] of params) if (value !== undefined) dialog.searchParams.set(key, value)
        return Option.some({
          link,
          status,
          dialogUrl: dialog.toString(),
          redirect: status === "active" ? null : redirectFor(link, { _tag: "Failed", code: endedCode(status) })
        })
      })

      /** The same link with the outcome of this attempt written (the link stays active after a failure: retry). */
      const failWith = (link: SetupLinkRecord, code: SetupErrorCode) =>
        Effect.gen(function*() {
          const now = new Date(yield* Clock.currentTimeMillis).toISOString()
          const stored = yield* links.updateActive({ ...link, msg_setup_status: "failed", error_code: code, updated_at: now })
          const current = Option.getOrElse(stored, () => link)
          const outcome: OnboardingOutcome = { _tag: "Failed", code }
          return { link: current, outcome, redirect: redirectFor(current, outcome) } satisfies OnboardingResult
        })

      const ended = (link: SetupLinkRecord, status: SetupLinkRecord["status"]): OnboardingResult => {
        const outcome: OnboardingOutcome = { _tag: "Failed", code: endedCode(status) }
        return { link, outcome, redirect: redirectFor(link, outcome) }
      }

      /** Makes sure the account's webhooks reach the app; a refusal is logged (sends still work). */
      const subscribe = (config: MessageConfigRecord) =>
        network.subscribeApp({ accessToken: config.access_token }, config.business_account_id).pipe(
          Effect.asVoid,
          Effect.catchCause((cause) =>
            Effect.logWarning("Could not subscribe the upstream app to the account's webhooks", cause).pipe(
              Effect.annotateLogs({ msg_config_id: config.id, business_account_id: config.business_account_id })
            )
          )
        )

      /** The number's facts as the granted token sees them, or the code of why it cannot be connected. */
      const checkNumber = (access: NetworkAccess, link: SetupLinkRecord, businessAccountId: string, phoneNumberId: string) =>
        Effect.gen(function*() {
          const answer = yield* network.getPhoneNumber(access, phoneNumberId).pipe(Effect.option)
          if (Option.isNone(answer)) return "phone_verification_failed" as const
          // The token must act for the account the dialog named.
          const account = yield* network.listSubscribedApps(access, businessAccountId).pipe(Effect.option)
          if (Option.isNone(account)) return "upstream_auth_failed" as const
          const facts: PhoneNumberFacts = answer.value.value
          if (facts.code_verification_status === "UNVERIFIED") return "phone_verification_failed" as const
          const type: ConnectionType = facts.is_on_biz_app === true ? "coexistence" : "dedicated"
          if (!link.allowed_connection_types.includes(type)) return "phone_verification_failed" as const
          return facts
        })

      /**
       * The callback again after it connected the number (the customer reloads the success page, or the browser
       * restores it): the same answer as the first time, read from the link and its number, without a second
       * exchange. Only for the number this link connected, while it is still connected.
       */
      const reloadOfSuccess = (link: SetupLinkRecord, callback: SignupCallback) =>
        Effect.gen(function*() {
          const phoneNumberId = callback.phone_number_id?.trim() ?? ""
          if (link.status !== "used" || link.msg_setup_status !== "completed" || link.phone_number_id === null) {
            return Option.none<OnboardingResult>()
          }
          if (phoneNumberId !== link.phone_number_id || callback.error !== undefined) return Option.none<OnboardingResult>()
          const config = yield* configs.findByPhoneNumberId(phoneNumberId)
          if (Option.isNone(config) || config.value.project_id !== link.project_id) return Option.none<OnboardingResult>()
          const outcome: OnboardingOutcome = { _tag: "Connected", config: config.value, provisioned: false }
          return Option.some<OnboardingResult>({ link, outcome, redirect: redirectFor(link, outcome) })
        })

      const complete = Effect.fn("Onboarding.complete")(function*(token: string, callback: SignupCallback) {
        const found = yield* links.open(token)
        if (Option.isNone(found)) return Option.none<OnboardingResult>()
        const opened = found.value
        const nowMs = yield* Clock.currentTimeMillis
        const status = effectiveStatus(opened, nowMs)
        if (status !== "active") {
          const done = yield* reloadOfSuccess(opened, callback)
          return Option.some(Option.getOrElse(done, () => ended(opened, status)))
        }
        const processing = yield* links.updateActive({
          ...opened,
          msg_setup_status: "processing",
          error_code: null,
          updated_at: new Date(nowMs).toISOString()
        })
        // Another attempt finished meanwhile.
        if (Option.isNone(processing)) return Option.some(ended(opened, "used"))
        const link = processing.value

        if (callback.error !== undefined) {
          return Option.some(yield* failWith(link, dialogErrors[callback.error] ?? "upstream_auth_failed"))
        }
        const code = callback.code
        const businessAccountId = callback.waba_id?.trim() ?? ""
        const phoneNumberId = callback.phone_number_id?.trim() ?? ""
        if (code === undefined || code === "" || businessAccountId === "" || phoneNumberId === "") {
          return Option.some(yield* failWith(link, "upstream_auth_failed"))
        }
        if (Option.isNone(settings.appId) || Option.isNone(settings.appSecret)) {
          yield* Effect.logWarning("Setup link: no app id or app secret configured for the code exchange")
          return Option.some(yield* failWith(link, "token_exchange_failed"))
        }
        const exchanged = yield* network.exchangeSignupCode({
          appId: settings.appId.value,
          appSecret: settings.appSecret.value,
          code,
          redirectUri: callbackUrl(yield* PublicUrl, token)
        }).pipe(
          // Only what went wrong, never the error itself: a transport error's message may carry the request's address.
          Effect.tapError((error) =>
            Effect.logWarning("Setup link: the network did not exchange the signup code").pipe(
              Effect.annotateLogs({
                setup_link_id: link.id,
                reason: error._tag === "NetworkRefused" ? `refused (code ${error.code})` : error.reason
              })
            )
          ),
          Effect.option
        )
        if (Option.isNone(exchanged)) return Option.some(yield* failWith(link, "token_exchange_failed"))
        const accessToken = Redacted.make(exchanged.value.value.access_token)
        const facts = yield* checkNumber({ accessToken }, link, businessAccountId, phoneNumberId)
        if (typeof facts === "string") return Option.some(yield* failWith(link, facts))

        const display = facts.display_phone_number ?? phoneNumberId
        const now = new Date(yield* Clock.currentTimeMillis).toISOString()
        const provisioned = link.provision_phone_number && callback.provisioned === "true"
        const used = (config: MessageConfigRecord): SetupLinkRecord => ({
          ...link,
          status: "used",
          msg_setup_status: "completed",
          error_code: null,
          phone_number_id: config.phone_number_id,
          used_at: now,
          updated_at: now
        })

        const written = yield* tx.withTransaction(Effect.gen(function*() {
          if (Option.isNone(yield* customers.find(link.project_id, link.customer_id))) {
            return yield* Effect.fail("link_expired" as const)
          }
          let config: MessageConfigRecord
          if (link.reconnect_phone_number !== null) {
            const target = yield* findProductionConfig(configs, link.project_id, link.customer_id, link.reconnect_phone_number)
            if (Option.isNone(target) || phoneDigits(display) !== link.reconnect_phone_number) {
              return yield* Effect.fail("phone_verification_failed" as const)
            }
            const holder = yield* configs.findByPhoneNumberId(phoneNumberId)
            if (Option.isSome(holder) && holder.value.id !== target.value.id) {
              return yield* Effect.fail("phone_verification_failed" as const)
            }
            // Credentials refreshed in place: the config keeps its id, name and settings.
            const updated = yield* configs.update({
              ...target.value,
              phone_number_id: phoneNumberId,
              business_account_id: businessAccountId,
              access_token: accessToken,
              facts: factsFrom(target.value.facts, facts),
              refreshed_at: now,
              updated_at: now
            }).pipe(Effect.catchTag("Duplicate", () => Effect.fail("phone_verification_failed" as const)))
            if (Option.isNone(updated)) return yield* Effect.fail("phone_verification_failed" as const)
            config = updated.value
          } else {
            if (Option.isSome(yield* configs.findByPhoneNumberId(phoneNumberId))) {
              return yield* Effect.fail("phone_verification_failed" as const)
            }
            const numberFacts = factsFrom(emptyFacts, facts)
            config = {
              id: yield* ids.uuid,
              project_id: link.project_id,
              name: numberFacts.verified_name ?? display,
              display_name: numberFacts.verified_name ?? display,
              kind: "production",
              phone_number_id: phoneNumberId,
              business_account_id: businessAccountId,
              display_phone_number: display,
              display_phone_number_normalized: phoneDigits(display),
              customer_id: link.customer_id,
              inbound_processing_enabled: true,
              access_token: accessToken,
              webhook_verify_token: null,
              app_secret: null,
              webhook_destination_url: null,
              facts: numberFacts,
              refreshed_at: now,
              webhook_verified_at: null,
              // Released to the network when disconnected (the free number release).
              provisioned,
              deleted_at: null,
              created_at: now,
              updated_at: now
            }
            yield* configs.insert(config).pipe(Effect.catchTag("Duplicate", () => Effect.fail("phone_verification_failed" as const)))
            yield* outbox.append({
              id: yield* ids.uuid,
              project_id: link.project_id,
              type: MSG_PHONE_NUMBER_CREATED,
              payload: phoneNumberEventPayload(config),
              created_at: now
            })
          }
          const marked = yield* links.updateActive(used(config))
          if (Option.isNone(marked)) return yield* Effect.fail("already_used" as const)
          return { config, link: marked.value }
        })).pipe(Effect.result)

        if (written._tag === "Failure") {
          const reason = written.failure
          if (reason === "already_used") return Option.some(ended(link, "used"))
          return Option.some(yield* failWith(link, reason))
        }
        yield* subscribe(written.success.config)
        const outcome: OnboardingOutcome = { _tag: "Connected", config: written.success.config, provisioned }
        return Option.some({ link: written.success.link, outcome, redirect: redirectFor(written.success.link, outcome) })
      })

      return Onboarding.of({ start, complete })
    })
  )
}

