/**
 * Setup links on memory ports with the network simulator in process: the
 * rules of create, change and revoke (decisions 2.13, 3.6, 4.8), expiry on
 * the TestClock, and the onboarding (the simulated dialog's choice, the code
 * exchange, the connected number, `msg.phone_number.created` and the exact
 * redirect query), with every failure code.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { MSG_PHONE_NUMBER_CREATED, MESSAGING_DOMAIN_EVENTS } from "../src/messaging/DomainEvents.ts"
import { Onboarding, type SignupCallback } from "../src/messaging/numbers/Onboarding.ts"
import { MessageConfigs } from "../src/messaging/numbers/MessageConfigs.ts"
import { layerMessagingServices } from "../src/Parley.ts"
import type { SignupChoice } from "../src/simulators/network/Signup.ts"
import { UpstreamSettings } from "../src/messaging/Upstream.ts"
import { MessageConfigsRepo } from "../src/messaging/numbers/MessageConfigsRepo.ts"
import { Outbox } from "../src/ports/Outbox.ts"
import { Projects, type Principal } from "../src/projects/Projects.ts"
import { Ids } from "../src/shared/Ids.ts"
import { Customers } from "../src/tenancy/Customers.ts"
import { effectiveStatus, hashToken, SETUP_LINK_VALIDITY_MS } from "../src/tenancy/SetupLink.ts"
import { SetupLinks } from "../src/tenancy/SetupLinks.ts"
import { layerMemoryJobQueue, layerMemoryStorage } from "../src/testing/index.ts"
import { Simulator, SimulatedUpstream } from "../src/simulators/index.ts"

const Ports = Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layerSequential)
const Services = Projects.layer.pipe(Layer.provideMerge(layerMessagingServices),
  Layer.provideMerge(SimulatedUpstream.layerSimulatorConfig), Layer.provideMerge(Ports))

const DAY = 24 * 60 * 60 * 1000
const DEMO = "300000000000001"
const SUPPORT = "300000000000011"
const SHOP = "300000000000012"
const UNVERIFIED = "300000000000019"

const given = Effect.gen(function*() {
  const project = yield* (yield* Projects).create("Acme")
  const principal: Principal = { project, apiKey: { id: "key", name: "test" } }
  const customer = yield* (yield* Customers).create(principal, { name: "Shop" })
  const simulator = yield* Simulator.running
  /** Plays the simulated dialog: the customer's choice, as the page's callback receives it. */
  const dialog = (choice: SignupChoice) =>
    Effect.map(simulator.authorizeSignup(choice), (answer): SignupCallback =>
      answer._tag === "Refused"
        ? { error: answer.reason }
        : {
          code: answer.code,
          waba_id: answer.businessAccountId,
          phone_number_id: answer.phoneNumberId,
          ...(answer.provisioned ? { provisioned: "true" } : {})
        })
  return { project, principal, customer, simulator, dialog }
})

const unprocessable = <A, E extends { readonly _tag: string }, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(effect), (error) => {
    assert.strictEqual(error._tag, "Unprocessable")
    return error as E & { readonly error: string; readonly details?: ReadonlyArray<{ readonly path: string }> }
  })

describe("setup links", () => {
  it.effect("creates with the defaults of 2.13, a token only answered once and stored hashed", () =>
    Effect.gen(function*() {
      const { customer, principal } = yield* given
      const links = yield* SetupLinks
      const created = yield* links.create(principal, customer.id, {})
      const link = created.link
      assert.strictEqual(link.status, "active")
      assert.strictEqual(link.msg_setup_status, "pending")
      assert.strictEqual(Date.parse(link.expires_at) - Date.parse(link.created_at), SETUP_LINK_VALIDITY_MS)
      assert.deepStrictEqual(link.allowed_connection_types, ["coexistence", "dedicated"])
      assert.deepStrictEqual(link.phone_number_country_isos, ["US"])
      assert.strictEqual(link.upstream_billing_mode, "customer_managed")
      assert.isFalse(link.provision_phone_number)
      assert.isNull(link.language)
      assert.deepStrictEqual(link.theme_config, {})
      assert.strictEqual(link.token_hash, hashToken(created.token))
      assert.notInclude(JSON.stringify(link), created.token)
      assert.strictEqual(created.url, `http://127.0.0.1:4000/setup/${created.token}`)
      assert.isTrue(Option.isSome(yield* links.open(created.token)))
      assert.isTrue(Option.isNone(yield* links.open(`${created.token}x`)))
    }).pipe(Effect.provide(Services)))

  it.effect("keeps one active link per customer: a new link revokes the previous one", () =>
    Effect.gen(function*() {
      const { customer, principal } = yield* given
      const links = yield* SetupLinks
      const first = yield* links.create(principal, customer.id, {})
      yield* TestClock.adjust(1000)
      const second = yield* links.create(principal, customer.id, { allowed_connection_types: ["dedicated"] })
      const old = yield* links.get(principal, customer.id, first.link.id)
      assert.strictEqual(old.status, "revoked")
      assert.isNotNull(old.revoked_at)
      const listed = yield* links.list(principal, customer.id, { mode: "page", page: 1, perPage: 20 })
      assert.deepStrictEqual(listed.items.map((l) => [l.id, l.status]), [[second.link.id, "active"], [first.link.id, "revoked"]])
      const missing = yield* Effect.flip(links.list(principal, "no-such-customer", { mode: "page", page: 1, perPage: 20 }))
      assert.strictEqual(missing._tag, "NotFound")
    }).pipe(Effect.provide(Services)))

  it.effect("refuses what 2.13 does not allow, naming the field", () =>
    Effect.gen(function*() {
      const { customer, principal } = yield* given
      const links = yield* SetupLinks
      const create = (input: Parameters<typeof links.create>[2]) => unprocessable(links.create(principal, customer.id, input))
      const theme = yield* create({ theme_config: { primary_color: "red", text_color: "#000000", card_color: "#12345g" } })
      assert.deepStrictEqual(theme.details?.map((d) => d.path), [
        "setup_link.theme_config.primary_color",
        "setup_link.theme_config.card_color"
      ])
      // A colour that would break out of the style sheet is no colour.
      yield* create({ theme_config: { background_color: "#fff;}body{display:none" } })
      assert.strictEqual((yield* create({ language: "fr" })).details?.[0]?.path, "setup_link.language")
      assert.strictEqual((yield* create({ upstream_billing_mode: "free" })).details?.[0]?.path, "setup_link.upstream_billing_mode")
      assert.strictEqual((yield* create({ allowed_connection_types: [] })).details?.[0]?.path, "setup_link.allowed_connection_types")
      yield* create({ allowed_connection_types: ["dedicated", "shared"] })
      assert.strictEqual((yield* create({ success_redirect_url: "javascript:alert(1)" })).details?.[0]?.path, "setup_link.success_redirect_url")
      yield* create({ failure_redirect_url: "not a url" })
      yield* create({ phone_number_country_isos: ["USA"] })
      yield* create({ reconnect_phone_number: "+1 555 010 0001" })
      yield* create({ reconnect_phone_number: "call me" })
      // Nothing was created by a refusal.
      assert.strictEqual((yield* links.list(principal, customer.id, { mode: "page", page: 1, perPage: 20 })).total, 0)
      const ok = yield* links.create(principal, customer.id, {
        theme_config: { primary_color: "#AABBCC", unknown_color: "whatever" },
        language: "es",
        upstream_billing_mode: "partner_managed",
        provision_phone_number: true,
        phone_number_country_isos: ["mx", "US"],
        allowed_connection_types: ["dedicated", "coexistence", "dedicated"]
      })
      assert.deepStrictEqual(ok.link.theme_config, { primary_color: "#aabbcc" })
      assert.deepStrictEqual(ok.link.phone_number_country_isos, ["MX", "US"])
      assert.deepStrictEqual(ok.link.allowed_connection_types, ["coexistence", "dedicated"])
    }).pipe(Effect.provide(Services)))

  it.effect("changes only active links: revoke, redirects, theme, language; expires after 30 days", () =>
    Effect.gen(function*() {
      const { customer, principal } = yield* given
      const links = yield* SetupLinks
      const { link } = yield* links.create(principal, customer.id, { theme_config: { primary_color: "#000000" } })
      const changed = yield* links.update(principal, customer.id, link.id, {
        success_redirect_url: "https://example.com/ok",
        theme_config: { text_color: "#111111" },
        language: "en"
      })
      assert.deepStrictEqual(changed.theme_config, { primary_color: "#000000", text_color: "#111111" })
      assert.strictEqual(changed.success_redirect_url, "https://example.com/ok")
      assert.strictEqual(changed.language, "en")
      yield* unprocessable(links.update(principal, customer.id, link.id, { status: "used" }))
      yield* unprocessable(links.update(principal, customer.id, link.id, { theme_config: { text_color: "black" } }))
      const revoked = yield* links.revoke(principal, customer.id, link.id)
      assert.strictEqual(revoked.status, "revoked")
      const again = yield* unprocessable(links.update(principal, customer.id, link.id, { language: "es" }))
      assert.include(again.error, "revoked")

      const fresh = yield* links.create(principal, customer.id, {})
      yield* TestClock.adjust(30 * DAY - 1)
      assert.strictEqual(effectiveStatus(yield* links.get(principal, customer.id, fresh.link.id), 30 * DAY - 1), "active")
      yield* TestClock.adjust(1)
      const expired = yield* links.get(principal, customer.id, fresh.link.id)
      assert.strictEqual(effectiveStatus(expired, 30 * DAY), "expired")
      const refusal = yield* unprocessable(links.revoke(principal, customer.id, fresh.link.id))
      assert.include(refusal.error, "expired")
      // A newer link leaves an expired one expired.
      yield* links.create(principal, customer.id, {})
      assert.strictEqual((yield* links.get(principal, customer.id, fresh.link.id)).status, "expired")
    }).pipe(Effect.provide(Services)))

  it.effect("onboarding connects the chosen number, marks the link used and writes msg.phone_number.created", () =>
    Effect.gen(function*() {
      const { customer, dialog, principal, project } = yield* given
      const links = yield* SetupLinks
      const onboarding = yield* Onboarding
      const created = yield* links.create(principal, customer.id, {
        success_redirect_url: "https://example.com/done?from=parley",
        failure_redirect_url: "https://example.com/failed"
      })
      const start = Option.getOrThrow(yield* onboarding.start(created.token))
      const dialogUrl = new URL(start.dialogUrl)
      assert.strictEqual(dialogUrl.pathname, "/simulator/signup")
      assert.strictEqual(dialogUrl.searchParams.get("redirect_uri"), `http://127.0.0.1:4000/setup/${created.token}/callback`)
      assert.strictEqual(dialogUrl.searchParams.get("state"), created.link.id)
      yield* (yield* Outbox).take(MESSAGING_DOMAIN_EVENTS, 1000)

      const result = Option.getOrThrow(
        yield* onboarding.complete(created.token, yield* dialog({ businessAccountId: DEMO, phoneNumberId: SUPPORT }))
      )
      assert.strictEqual(result.outcome._tag, "Connected")
      assert.strictEqual(result.link.status, "used")
      assert.strictEqual(result.link.msg_setup_status, "completed")
      assert.strictEqual(result.link.phone_number_id, SUPPORT)
      assert.isNotNull(result.link.used_at)
      const redirect = new URL(result.redirect!)
      assert.strictEqual(`${redirect.origin}${redirect.pathname}`, "https://example.com/done")
      assert.deepStrictEqual([...redirect.searchParams], [
        ["from", "parley"],
        ["setup_link_id", created.link.id],
        ["status", "completed"],
        ["phone_number_id", SUPPORT],
        ["business_account_id", DEMO],
        ["display_phone_number", "+15550200011"]
      ])
      assert.include(result.redirect!, "display_phone_number=%2B15550200011")

      const config = yield* (yield* MessageConfigs).get(principal, SUPPORT)
      assert.strictEqual(config.customer_id, customer.id)
      assert.strictEqual(config.kind, "production")
      assert.strictEqual(config.business_account_id, DEMO)
      assert.strictEqual(config.display_phone_number_normalized, "15550200011")
      assert.match(Redacted.value(config.access_token), /^sim-signup-token-/)
      const events = yield* (yield* Outbox).take(MESSAGING_DOMAIN_EVENTS, 1000)
      assert.deepStrictEqual(events.map((e) => e.type), [MSG_PHONE_NUMBER_CREATED])
      assert.deepStrictEqual((events[0]!.payload as { data: unknown }).data, {
        phone_number_id: SUPPORT,
        project: { id: project.id },
        customer: { id: customer.id }
      })

      // The link is spent: the page and a replayed callback say so.
      const replay = Option.getOrThrow(
        yield* onboarding.complete(created.token, yield* dialog({ businessAccountId: DEMO, phoneNumberId: SHOP }))
      )
      assert.deepStrictEqual(replay.outcome, { _tag: "Failed", code: "already_used" })
      assert.strictEqual(
        replay.redirect,
        `https://example.com/failed?setup_link_id=${created.link.id}&error_code=already_used`
      )
      assert.strictEqual(Option.getOrThrow(yield* onboarding.start(created.token)).redirect, replay.redirect)
      assert.isTrue(Option.isNone(yield* (yield* MessageConfigsRepo).findByPhoneNumberId(SHOP)))
    }).pipe(Effect.provide(Services)))

  it.effect("each failure redirects with its error_code and leaves the link active to retry", () =>
    Effect.gen(function*() {
      const { customer, dialog, principal } = yield* given
      const links = yield* SetupLinks
      const onboarding = yield* Onboarding
      const created = yield* links.create(principal, customer.id, {
        failure_redirect_url: "https://example.com/failed",
        allowed_connection_types: ["dedicated"]
      })
      const attempt = (callback: SignupCallback) =>
        Effect.map(onboarding.complete(created.token, callback), (r) => {
          const result = Option.getOrThrow(r)
          assert.strictEqual(result.outcome._tag, "Failed")
          assert.strictEqual(result.link.status, "active")
          assert.strictEqual(result.link.msg_setup_status, "failed")
          return result.outcome._tag === "Failed" ? [result.outcome.code, new URL(result.redirect!).search] : []
        })
      const expect = (code: string) => [code, `?setup_link_id=${created.link.id}&error_code=${code}`]
      assert.deepStrictEqual(yield* attempt({ error: "access_denied" }), expect("upstream_auth_failed"))
      assert.deepStrictEqual(yield* attempt(yield* dialog({ businessAccountId: "300000000000002", phoneNumberId: "300000000000021" })), expect("waba_limit_reached"))
      assert.deepStrictEqual(yield* attempt(yield* dialog({ businessAccountId: DEMO, phoneNumberId: UNVERIFIED })), expect("phone_verification_failed"))
      // A coexistence number on a link that allows only dedicated ones.
      assert.deepStrictEqual(yield* attempt(yield* dialog({ businessAccountId: DEMO, phoneNumberId: SHOP })), expect("phone_verification_failed"))
      assert.deepStrictEqual(yield* attempt(yield* dialog({ businessAccountId: "300000000000003", phoneNumberId: "300000000000031" })), expect("token_exchange_failed"))
      assert.deepStrictEqual(yield* attempt({ code: "made-up", waba_id: DEMO, phone_number_id: SUPPORT }), expect("token_exchange_failed"))
      assert.strictEqual((yield* links.get(principal, customer.id, created.link.id)).error_code, "token_exchange_failed")

      // After all that, the same link still connects; then, 30 days on, another one has expired.
      const ok = Option.getOrThrow(yield* onboarding.complete(created.token, yield* dialog({ businessAccountId: DEMO, phoneNumberId: SUPPORT })))
      assert.strictEqual(ok.outcome._tag, "Connected")
      assert.isNull(ok.link.error_code)
      const later = yield* links.create(principal, customer.id, { failure_redirect_url: "https://example.com/failed" })
      yield* TestClock.adjust(30 * DAY)
      const expired = Option.getOrThrow(yield* onboarding.complete(later.token, yield* dialog({ businessAccountId: DEMO, phoneNumberId: SHOP })))
      assert.deepStrictEqual(expired.outcome, { _tag: "Failed", code: "link_expired" })
      assert.strictEqual(new URL(expired.redirect!).searchParams.get("error_code"), "link_expired")
      assert.strictEqual(Option.getOrThrow(yield* onboarding.start(later.token)).status, "expired")
      assert.isTrue(Option.isNone(yield* onboarding.complete("no-such-token", {})))
    }).pipe(Effect.provide(Services)))

  it.effect("provisions a new number when the link asks for it", () =>
    Effect.gen(function*() {
      const { customer, dialog, principal } = yield* given
      const links = yield* SetupLinks
      const created = yield* links.create(principal, customer.id, {
        success_redirect_url: "https://example.com/done",
        provision_phone_number: true,
        phone_number_country_isos: ["MX"]
      })
      const start = Option.getOrThrow(yield* (yield* Onboarding).start(created.token))
      assert.strictEqual(new URL(start.dialogUrl).searchParams.get("countries"), "MX")
      const result = Option.getOrThrow(
        yield* (yield* Onboarding).complete(created.token, yield* dialog({ businessAccountId: DEMO, provisionCountry: "MX" }))
      )
      assert.strictEqual(result.outcome._tag, "Connected")
      const query = new URL(result.redirect!).searchParams
      assert.strictEqual(query.get("provisioned_phone_number_id"), query.get("phone_number_id"))
      assert.match(query.get("display_phone_number") ?? "", /^\+52555/)
    }).pipe(Effect.provide(Services)))

  it.effect("reconnect refreshes the existing production config in place, without a new number event", () =>
    Effect.gen(function*() {
      const { customer, dialog, principal } = yield* given
      const links = yield* SetupLinks
      const onboarding = yield* Onboarding
      const first = yield* links.create(principal, customer.id, {})
      yield* onboarding.complete(first.token, yield* dialog({ businessAccountId: DEMO, phoneNumberId: SHOP }))
      const before = yield* (yield* MessageConfigs).get(principal, SHOP)
      yield* (yield* Outbox).take(MESSAGING_DOMAIN_EVENTS, 1000)

      const again = yield* links.create(principal, customer.id, {
        reconnect_phone_number: "+1 (555) 020-0012",
        provision_phone_number: true,
        allowed_connection_types: ["dedicated"],
        success_redirect_url: "https://example.com/done"
      })
      // Locked to the existing config's type, and never provisions.
      assert.deepStrictEqual(again.link.allowed_connection_types, ["coexistence"])
      assert.isFalse(again.link.provision_phone_number)
      assert.strictEqual(again.link.reconnect_phone_number, "15550200012")

      // Choosing another number does not reconnect this one.
      const wrong = Option.getOrThrow(yield* onboarding.complete(again.token, yield* dialog({ businessAccountId: DEMO, phoneNumberId: SUPPORT })))
      assert.strictEqual(wrong.outcome._tag, "Failed")
      const result = Option.getOrThrow(yield* onboarding.complete(again.token, yield* dialog({ businessAccountId: DEMO, phoneNumberId: SHOP })))
      assert.strictEqual(result.outcome._tag, "Connected")
      const after = yield* (yield* MessageConfigs).get(principal, SHOP)
      assert.strictEqual(after.id, before.id)
      assert.notStrictEqual(Redacted.value(after.access_token), Redacted.value(before.access_token))
      assert.deepStrictEqual(yield* (yield* Outbox).take(MESSAGING_DOMAIN_EVENTS, 1000), [])
    }).pipe(Effect.provide(Services)))
})
