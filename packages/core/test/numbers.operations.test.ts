/**
 * Number operations on memory ports with the network simulator in process and
 * the TestClock: the health checks (status rule, 3-minute cache, 15 s limit,
 * the 5/15/30/60-minute backoff and what resets it), display name requests
 * through the simulated review, the release of a provisioned number, and
 * media ingest from a scripted source.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Fiber, Layer, Option, Redacted } from "effect"
import { TestClock } from "effect/testing"
import { MediaIngest } from "../src/messaging/MediaIngest.ts"
import { layerMessagingServices } from "../src/Parley.ts"
import { UpstreamIngestion } from "../src/messaging/Ingestion.ts"
import { UpstreamSettings } from "../src/messaging/Upstream.ts"
import { DisplayNames } from "../src/messaging/numbers/DisplayNames.ts"
import type { MessageConfigRecord } from "../src/messaging/numbers/MessageConfig.ts"
import { IDLE_RELEASE_MS, MessageConfigs } from "../src/messaging/numbers/MessageConfigs.ts"
import { NumberHealth } from "../src/messaging/numbers/NumberHealth.ts"
import { MessageConfigsRepo } from "../src/messaging/numbers/MessageConfigsRepo.ts"
import { MessagesRepo } from "../src/messaging/MessagingRepo.ts"
import { MessagingNetwork, NetworkRefused, NetworkUnavailable } from "../src/network/MessagingNetwork.ts"
import { type Principal, Projects } from "../src/projects/Projects.ts"
import { Ids } from "../src/shared/Ids.ts"
import { layerMemoryJobQueue, layerMemoryStorage, layerMemoryWebhookHttp, MemoryWebhookReceiver } from "../src/testing/index.ts"
import { WebhookSettings } from "../src/shared/OutboundSettings.ts"
import { Onboarding, type SignupCallback } from "../src/messaging/numbers/Onboarding.ts"
import type { SignupChoice } from "../src/simulators/network/Signup.ts"
import { Customers } from "../src/tenancy/Customers.ts"
import { SetupLinks } from "../src/tenancy/SetupLinks.ts"
import { Simulator, SimulatedUpstream } from "../src/simulators/index.ts"

const Ports = Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layerSequential, layerMemoryWebhookHttp)
const Services = Layer.mergeAll(Projects.layer, MediaIngest.layer).pipe(
  Layer.provideMerge(layerMessagingServices),
  Layer.provideMerge(SimulatedUpstream.layerSimulatorConfig),
  Layer.provideMerge(WebhookSettings.layer({ allowPrivateUrls: false })),
  Layer.provideMerge(Ports)
)

const MINUTE = 60_000

/** `NumberHealth` answering the report alone. */
const reportsOf = Effect.gen(function*() {
  const health = yield* NumberHealth
  return {
    check: (...args: Parameters<NumberHealth["Service"]["check"]>) => Effect.map(health.check(...args), ({ report }) => report)
  }
})

/** A project with the simulated number connected, its principal, and the simulator. */
const given = Effect.gen(function*() {
  const project = yield* (yield* Projects).create("Acme")
  const config = Option.getOrThrow(yield* (yield* MessageConfigs).bootstrap(project.id))
  const settings = yield* UpstreamSettings
  const principal: Principal = { project, apiKey: { id: "k", name: "k" } }
  return { project, config, principal, simulator: yield* Simulator.running }
})

/** Another simulated number, connected to the project as `kind` (or only registered at the network). */
const otherNumber = (principal: Principal, kind: "production" | "sandbox" | undefined, suffix = "7") =>
  Effect.gen(function*() {
    const simulator = yield* Simulator.running
    const input = {
      phoneNumberId: `30000000000000${suffix}`,
      businessAccountId: `40000000000000${suffix}`,
      accessToken: `other-token-${suffix}`,
      displayPhoneNumber: `+1 555-010-000${suffix}`,
      verifiedName: "Other Shop"
    }
    yield* simulator.registerNumber(input)
    if (kind === undefined) return { input, config: undefined }
    const config = yield* (yield* MessageConfigs).connect(principal, {
      phone_number_id: input.phoneNumberId,
      business_account_id: input.businessAccountId,
      access_token: input.accessToken,
      kind
    })
    return { input, config }
  })

describe("number health", () => {
  it.effect("runs every check, folds them by the status rule, and reuses the answer for 3 minutes", () =>
    Effect.gen(function*() {
      const { config, principal, simulator } = yield* given
      const health = yield* reportsOf
      const first = yield* health.check(principal, config.phone_number_id)
      assert.strictEqual(first.status, "healthy")
      assert.deepStrictEqual(Object.keys(first.checks ?? {}).sort(), [
        "messaging_health",
        "phone_number_access",
        "phone_number_connection",
        "webhook_subscription",
        "webhook_verified"
      ])
      const checks = first.checks!
      assert.deepStrictEqual(checks["phone_number_access"], {
        passed: true,
        details: {
          id: config.phone_number_id,
          verified_name: config.facts.verified_name,
          display_phone_number: config.display_phone_number,
          quality_rating: "GREEN",
          status: "CONNECTED",
          throughput_tier: "TIER_10K"
        }
      })
      assert.deepStrictEqual(checks["phone_number_connection"], { passed: true, details: { status: "CONNECTED" } })
      assert.strictEqual(checks["messaging_health"]?.details["overall_status"], "AVAILABLE")
      assert.strictEqual(checks["webhook_subscription"]?.details["subscribed"], true)
      assert.strictEqual(checks["webhook_verified"]?.passed, null, "no handshake yet is not a failure")
      assert.isUndefined(first.retry_after)

      // A RED quality limits sending: degraded, but only once the cached answer is 3 minutes old.
      yield* simulator.updateNumber(config.phone_number_id, { qualityRating: "RED" })
      yield* TestClock.adjust(3 * MINUTE - 1)
      assert.deepStrictEqual(yield* health.check(principal, config.phone_number_id), first)
      yield* TestClock.adjust(1)
      const degraded = yield* health.check(principal, config.phone_number_id)
      assert.strictEqual(degraded.status, "degraded")
      assert.strictEqual(degraded.checks?.["messaging_health"]?.details["overall_status"], "LIMITED")

      // DISCONNECTED makes it unhealthy whatever else passed (the number is also BLOCKED).
      yield* simulator.updateNumber(config.phone_number_id, { status: "DISCONNECTED", qualityRating: "GREEN" })
      yield* TestClock.adjust(3 * MINUTE)
      const down = yield* health.check(principal, config.phone_number_id)
      assert.strictEqual(down.status, "unhealthy")
      assert.deepStrictEqual(down.checks?.["phone_number_connection"], { passed: false, details: { status: "DISCONNECTED" } })
    }).pipe(Effect.provide(Services)))

  it.effect("a test message bypasses the cache and is a recorded send; a malformed recipient or another project's number is refused", () =>
    Effect.gen(function*() {
      const { config, principal, simulator } = yield* given
      const health = yield* reportsOf
      const cached = yield* health.check(principal, config.phone_number_id)
      yield* TestClock.adjust(1_000)
      const tested = yield* health.check(principal, config.phone_number_id, { testMessageTo: "+1 555 010 9999" })
      assert.notStrictEqual(tested.timestamp, cached.timestamp)
      // The contact never wrote: a free text is outside its 24-hour window, so the test send fails and nothing left.
      const test = tested.checks?.["test_message"]
      assert.deepStrictEqual([test?.passed, test?.details["phone_number"], test?.details["message_id"]], [false, "15550109999", null])
      assert.match(test?.error ?? "", /24-hour window/)
      assert.strictEqual((yield* simulator.outbox(config.phone_number_id)).length, 0)
      // Once the contact writes in, the test message goes out, recorded like any send.
      const ingestion = yield* UpstreamIngestion
      yield* simulator.setSink((body, signature) => ingestion.receive(body, signature))
      yield* simulator.inbound(config.phone_number_id, { from: "15550109999", message: { type: "text", text: { body: "hi" } } })
      const delivered = (yield* health.check(principal, config.phone_number_id, { testMessageTo: "+1 555 010 9999" })).checks?.["test_message"]
      assert.strictEqual(delivered?.passed, true)
      const recorded = Option.getOrThrow(yield* (yield* MessagesRepo).findById(principal.project.id, String(delivered?.details["message_id"])))
      assert.deepStrictEqual([recorded.direction, recorded.network_id !== null], ["outbound", true])
      assert.deepStrictEqual((yield* simulator.outbox(config.phone_number_id)).map((m) => m.to), ["15550109999"])
      // The cached answer stays the plain run's.
      assert.deepStrictEqual(yield* health.check(principal, config.phone_number_id), cached)
      const bad = yield* Effect.flip(health.check(principal, config.phone_number_id, { testMessageTo: "call me" }))
      assert.strictEqual(bad._tag, "Unprocessable")
      const other = yield* (yield* Projects).create("Other")
      const stranger: Principal = { project: other, apiKey: { id: "k2", name: "k2" } }
      assert.strictEqual((yield* Effect.flip(health.check(stranger, config.phone_number_id)))._tag, "NotFound")
    }).pipe(Effect.provide(Services)))

  it.effect("a run that takes 15 seconds answers error with a retry hint", () =>
    Effect.gen(function*() {
      const { config, principal } = yield* given
      const network = yield* MessagingNetwork
      const slow = MessagingNetwork.of({
        ...network,
        getHealthStatus: (access, phoneNumberId) => Effect.delay(network.getHealthStatus(access, phoneNumberId), "20 seconds")
      })
      const fiber = yield* Effect.gen(function*() {
        return (yield* (yield* NumberHealth).check(principal, config.phone_number_id)).report
      }).pipe(Effect.provide(Layer.fresh(NumberHealth.layer)), Effect.provideService(MessagingNetwork, slow), Effect.forkChild)
      yield* TestClock.adjust(14_999)
      assert.isUndefined(fiber.pollUnsafe())
      yield* TestClock.adjust(1)
      const report = yield* Fiber.join(fiber)
      assert.strictEqual(report.status, "error")
      assert.strictEqual(report.retry_after, 30)
      assert.match(report.error ?? "", /15 seconds/)
      assert.isUndefined(report.checks)
    }).pipe(Effect.provide(Services)))

  it.effect("after access errors holds the checks 5, 15, 30, then 60 minutes; a reconnect resets it", () =>
    Effect.gen(function*() {
      const { config, principal, simulator } = yield* given
      const health = yield* reportsOf
      yield* simulator.expireToken(Redacted.value(config.access_token))
      const first = yield* health.check(principal, config.phone_number_id)
      assert.strictEqual(first.status, "unhealthy")
      assert.strictEqual(first.checks?.["phone_number_access"]?.passed, false)
      assert.strictEqual(first.retry_after, 5 * 60)
      // Held: the last answer again, with the time left.
      yield* TestClock.adjust(2 * MINUTE)
      const held = yield* health.check(principal, config.phone_number_id)
      assert.deepStrictEqual(held, { ...first, retry_after: 3 * 60 })
      // A test message does not get past the hold either.
      assert.strictEqual((yield* health.check(principal, config.phone_number_id, { testMessageTo: "15550109999" })).retry_after, 3 * 60)
      for (const [wait, next] of [[3, 15], [15, 30], [30, 60], [60, 60]] as const) {
        yield* TestClock.adjust(wait * MINUTE - 1)
        assert.isTrue((yield* health.check(principal, config.phone_number_id)).retry_after === 1, `still held before ${wait} min`)
        yield* TestClock.adjust(1)
        const again = yield* health.check(principal, config.phone_number_id)
        assert.strictEqual(again.retry_after, next * 60, `after ${wait} minutes the next hold is ${next}`)
        assert.notStrictEqual(again.timestamp, first.timestamp)
      }
      // A reconnect with a working token: checked at once, healthy, no hold.
      yield* simulator.registerNumber({
        phoneNumberId: config.phone_number_id,
        businessAccountId: config.business_account_id,
        accessToken: "renewed-token",
        displayPhoneNumber: config.display_phone_number,
        verifiedName: config.facts.verified_name ?? "Shop"
      })
      yield* (yield* MessageConfigs).update(principal, config.id, { access_token: "renewed-token" })
      const renewed = yield* health.check(principal, config.phone_number_id)
      assert.strictEqual(renewed.status, "healthy")
      assert.isUndefined(renewed.retry_after)
    }).pipe(Effect.provide(Services)))

  it.effect("rate-limit refusals and an unreachable network never start the backoff", () =>
    Effect.gen(function*() {
      const { config, principal } = yield* given
      const network = yield* MessagingNetwork
      const refusal = new NetworkRefused({
        status: 429,
        contentType: "application/json",
        body: new Uint8Array(),
        error: { message: "(#130429) Rate limit hit", code: 130429, type: "OAuthException" }
      })
      const limited = MessagingNetwork.of({ ...network, getPhoneNumber: () => Effect.fail(refusal) })
      const check = Effect.gen(function*() {
        return (yield* (yield* NumberHealth).check(principal, config.phone_number_id)).report
      }).pipe(Effect.provide(Layer.fresh(NumberHealth.layer)))
      const report = yield* check.pipe(Effect.provideService(MessagingNetwork, limited))
      assert.strictEqual(report.status, "unhealthy")
      assert.isUndefined(report.retry_after)
      yield* TestClock.adjust(3 * MINUTE)
      const down = MessagingNetwork.of({
        ...network,
        getPhoneNumber: () => Effect.fail(new NetworkUnavailable({ reason: "Transport", detail: "connection refused" }))
      })
      const unreachable = yield* check.pipe(Effect.provideService(MessagingNetwork, down))
      assert.strictEqual(unreachable.status, "error")
      assert.isUndefined(unreachable.retry_after)
      assert.strictEqual((yield* check).status, "healthy", "checked again at once")
    }).pipe(Effect.provide(Services)))
})

describe("health rate limit", () => {
  it.effect("admits 5 checks a second and 60 a minute per project, telling what is left", () =>
    Effect.gen(function*() {
      const { config, principal } = yield* given
      const health = yield* NumberHealth
      const check = health.check(principal, config.phone_number_id)
      const left = []
      for (let i = 0; i < 5; i++) left.push((yield* check).rateLimit)
      assert.deepStrictEqual(left.map((l) => [l.secondRemaining, l.minuteRemaining]), [[4, 59], [3, 58], [2, 57], [1, 56], [0, 55]])
      assert.deepStrictEqual([left[0]!.secondLimit, left[0]!.minuteLimit], [5, 60])
      const refused = yield* Effect.flip(check)
      assert.isTrue(refused._tag === "HealthRateLimited" && refused.window === "second" && refused.retryAfterSeconds === 1)
      // Another project has its own windows; a refused check cost the minute nothing.
      const other = yield* (yield* Projects).create("Other")
      const stranger: Principal = { project: other, apiKey: { id: "k2", name: "k2" } }
      assert.strictEqual((yield* Effect.flip(health.check(stranger, config.phone_number_id)))._tag, "NotFound")
      yield* TestClock.adjust(1_000)
      assert.strictEqual((yield* check).rateLimit.minuteRemaining, 54)
      for (let second = 0; second < 11; second++) {
        yield* TestClock.adjust(1_000)
        // 6 so far, then 5 a second for 10 seconds and 4 in the 11th: exactly 60.
        for (let i = 0; i < (second < 10 ? 5 : 4); i++) yield* check
      }
      const minute = yield* Effect.flip(check)
      assert.isTrue(minute._tag === "HealthRateLimited" && minute.window === "minute" && minute.retryAfterSeconds === 48)
      yield* TestClock.adjust(48_000)
      assert.strictEqual((yield* check).rateLimit.minuteRemaining, 59)
    }).pipe(Effect.provide(Services)))
})

describe("display name requests", () => {
  it.effect("follow the network's review to applied, and the number shows the new name", () =>
    Effect.gen(function*() {
      const { config, principal } = yield* given
      const names = yield* DisplayNames
      const created = yield* names.create(principal, config.phone_number_id, { new_display_name: "  Acme Store " })
      assert.strictEqual(created.status, "pending_review")
      assert.strictEqual(created.requested_display_name, "Acme Store")
      assert.strictEqual(created.previous_display_name, config.display_name)
      assert.strictEqual(created.msg_config_id, config.id)
      assert.isNull(created.reviewed_at)
      yield* TestClock.adjust(5_000)
      const approved = yield* names.get(principal, config.phone_number_id, created.id)
      assert.strictEqual(approved.status, "approved")
      assert.isNotNull(approved.reviewed_at)
      assert.isNull(approved.applied_at)
      yield* TestClock.adjust(5_000)
      const applied = yield* names.get(principal, config.phone_number_id, created.id)
      assert.strictEqual(applied.status, "applied")
      assert.strictEqual(applied.reviewed_at, approved.reviewed_at)
      assert.isNotNull(applied.applied_at)
      const number = yield* (yield* MessageConfigs).get(principal, config.phone_number_id)
      assert.strictEqual(number.display_name, "Acme Store")
      // Final: it cannot be cancelled.
      assert.strictEqual((yield* Effect.flip(names.cancel(principal, config.phone_number_id, created.id)))._tag, "Unprocessable")
    }).pipe(Effect.provide(Services)))

  it.effect("a new request cancels the open one; cancel, decline and a refused submission", () =>
    Effect.gen(function*() {
      const { config, principal } = yield* given
      const names = yield* DisplayNames
      const pnid = config.phone_number_id
      const first = yield* names.create(principal, pnid, { new_display_name: "First Name" })
      const second = yield* names.create(principal, pnid, { new_display_name: "Second Name" })
      assert.strictEqual((yield* names.get(principal, pnid, first.id)).status, "cancelled")
      const cancelled = yield* names.cancel(principal, pnid, second.id)
      assert.strictEqual(cancelled.status, "cancelled")
      assert.strictEqual((yield* Effect.flip(names.cancel(principal, pnid, second.id)))._tag, "Unprocessable")

      const declined = yield* names.create(principal, pnid, { new_display_name: "WhatsApp Support" })
      yield* TestClock.adjust(5_000)
      const reviewed = yield* names.get(principal, pnid, declined.id)
      assert.strictEqual(reviewed.status, "declined")
      assert.isNotNull(reviewed.reviewed_at)

      // The network refuses a name it does not take: stored as failed with its error, nothing else cancelled.
      const open = yield* names.create(principal, pnid, { new_display_name: "Third Name" })
      const failed = yield* names.create(principal, pnid, { new_display_name: "X" })
      assert.strictEqual(failed.status, "failed")
      assert.strictEqual(failed.upstream_error_code, 100)
      assert.strictEqual(failed.upstream_error_message, "(#100) Invalid parameter")
      assert.strictEqual(failed.upstream_error_type, "OAuthException")
      assert.strictEqual((yield* names.get(principal, pnid, open.id)).status, "pending_review")

      const listed = yield* names.list(principal, pnid, { mode: "cursor", limit: 20 })
      assert.deepStrictEqual(listed.items.map((r) => r.id), [failed.id, open.id, declined.id, second.id, first.id])
      assert.strictEqual((yield* Effect.flip(names.create(principal, pnid, { new_display_name: "  " })))._tag, "Unprocessable")
      assert.strictEqual((yield* Effect.flip(names.get(principal, pnid, "00000000-0000-7000-8000-000000000000")))._tag, "NotFound")
    }).pipe(Effect.provide(Services)))

  it.effect("are refused on sandbox numbers", () =>
    Effect.gen(function*() {
      const { principal } = yield* given
      const { config } = yield* otherNumber(principal, "sandbox")
      const refused = yield* Effect.flip((yield* DisplayNames).create(principal, config!.phone_number_id, { new_display_name: "Sandbox" }))
      assert.strictEqual(refused._tag, "Unprocessable")
    }).pipe(Effect.provide(Services)))
})

describe("number release", () => {
  it.effect("disconnecting a provisioned number releases it to the network; another number stays", () =>
    Effect.gen(function*() {
      const { config, principal } = yield* given
      const { input } = yield* otherNumber(principal, undefined)
      const provisioned: MessageConfigRecord = {
        ...config,
        id: "0b7c4a3e-8d2f-4c1a-9e5b-6f7a8b9c0d1e",
        phone_number_id: input.phoneNumberId,
        business_account_id: input.businessAccountId,
        access_token: Redacted.make(input.accessToken),
        provisioned: true
      }
      yield* (yield* MessageConfigsRepo).insert(provisioned)
      const network = yield* MessagingNetwork
      const statusOf = (c: MessageConfigRecord) =>
        network.getPhoneNumber({ accessToken: c.access_token }, c.phone_number_id).pipe(Effect.map((a) => a.value.status))
      const numbers = yield* MessageConfigs
      yield* numbers.disconnect(principal, input.phoneNumberId)
      assert.strictEqual(yield* statusOf(provisioned), "DISCONNECTED")
      yield* numbers.disconnect(principal, config.phone_number_id)
      assert.strictEqual(yield* statusOf(config), "CONNECTED", "a number the customer brought is only disconnected")
    }).pipe(Effect.provide(Services)))
})

describe("idle number release", () => {
  it.effect("releases a provisioned number 30 days after its last message; a busy or brought one stays", () =>
    Effect.gen(function*() {
      const { config, principal } = yield* given
      const { input } = yield* otherNumber(principal, undefined)
      const provisioned: MessageConfigRecord = {
        ...config,
        id: "0b7c4a3e-8d2f-4c1a-9e5b-6f7a8b9c0d1f",
        phone_number_id: input.phoneNumberId,
        business_account_id: input.businessAccountId,
        access_token: Redacted.make(input.accessToken),
        provisioned: true,
        created_at: new Date(yield* Clock.currentTimeMillis).toISOString()
      }
      yield* (yield* MessageConfigsRepo).insert(provisioned)
      const numbers = yield* MessageConfigs
      yield* TestClock.adjust(IDLE_RELEASE_MS)
      assert.strictEqual(yield* numbers.releaseIdle, 0, "not more than 30 days yet")
      yield* TestClock.adjust(1)
      assert.strictEqual(yield* numbers.releaseIdle, 1)
      const network = yield* MessagingNetwork
      const status = yield* network.getPhoneNumber({ accessToken: provisioned.access_token }, provisioned.phone_number_id)
      assert.strictEqual(status.value.status, "DISCONNECTED")
      assert.isTrue(Option.isNone(yield* (yield* MessageConfigsRepo).findById(principal.project.id, provisioned.id)))
      // The number the customer brought is never released, however quiet.
      assert.isTrue(Option.isSome(yield* (yield* MessageConfigsRepo).findById(principal.project.id, config.id)))
      assert.strictEqual(yield* numbers.releaseIdle, 0)
    }).pipe(Effect.provide(Services)))
})

describe("number release after a setup link", () => {
  it.effect("a number the link provisioned is marked and released on disconnect; one the customer brought is not", () =>
    Effect.gen(function*() {
      const { principal } = yield* given
      const customer = yield* (yield* Customers).create(principal, { name: "Shop" })
      const simulator = yield* Simulator.running
      const links = yield* SetupLinks
      const onboarding = yield* Onboarding
      const connect = (choice: SignupChoice, provision: boolean) =>
        Effect.gen(function*() {
          const created = yield* links.create(principal, customer.id, { provision_phone_number: provision })
          const answer = yield* simulator.authorizeSignup(choice)
          assert.strictEqual(answer._tag, "Granted")
          const callback: SignupCallback = answer._tag === "Refused" ? {} : {
            code: answer.code,
            waba_id: answer.businessAccountId,
            phone_number_id: answer.phoneNumberId,
            ...(answer.provisioned ? { provisioned: "true" } : {})
          }
          const result = Option.getOrThrow(yield* onboarding.complete(created.token, callback))
          assert.strictEqual(result.outcome._tag, "Connected")
          return result.outcome._tag === "Connected" ? result.outcome.config : assert.fail("not connected")
        })
      const provisioned = yield* connect({ businessAccountId: "300000000000001", provisionCountry: "MX" }, true)
      assert.isTrue(provisioned.provisioned)
      const brought = yield* connect({ businessAccountId: "300000000000001", phoneNumberId: "300000000000011" }, false)
      assert.isFalse(brought.provisioned)
      const network = yield* MessagingNetwork
      const statusOf = (c: MessageConfigRecord) =>
        network.getPhoneNumber({ accessToken: c.access_token }, c.phone_number_id).pipe(Effect.map((a) => a.value.status))
      const numbers = yield* MessageConfigs
      yield* numbers.disconnect(principal, provisioned.phone_number_id)
      yield* numbers.disconnect(principal, brought.phone_number_id)
      assert.strictEqual(yield* statusOf(provisioned), "DISCONNECTED")
      assert.strictEqual(yield* statusOf(brought), "CONNECTED")
    }).pipe(Effect.provide(Services)))
})

const jpeg = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, ...new Array(200).fill(7)])
const png = (size: number) => {
  const bytes = new Uint8Array(size)
  bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
  return bytes
}

/** A source host answering by path. */
const scriptSource = Effect.gen(function*() {
  const receiver = yield* MemoryWebhookReceiver
  receiver.setAddresses("internal.example", ["10.0.0.5"])
  receiver.respondWith((request) => {
    const path = new URL(request.url).pathname
    const answer = (status: number, bytes: Uint8Array, headers: Record<string, string> = {}) =>
      Effect.succeed({ status, body: "", bytes, headers })
    switch (path) {
      case "/photo.jpg":
      case "/caf%C3%A9%E0.jpg":
        return answer(200, jpeg, { "Content-Type": "image/jpeg" })
      case "/hop":
        return answer(302, new Uint8Array(), { Location: "/photo.jpg" })
      case "/to-private":
        return answer(301, new Uint8Array(), { Location: "http://internal.example/photo.jpg" })
      case "/to-file":
        return answer(302, new Uint8Array(), { Location: "file:///etc/passwd" })
      case "/loop":
        return answer(302, new Uint8Array(), { Location: "/loop" })
      case "/big.png":
        return answer(200, png(5 * 1024 * 1024 + 1), { "Content-Type": "image/png" })
      case "/fits.png":
        return answer(200, png(5 * 1024 * 1024), { "Content-Type": "image/png" })
      case "/liar.png":
        return answer(200, jpeg, { "Content-Type": "image/png" })
      default:
        return answer(404, new Uint8Array())
    }
  })
  return receiver
})

describe("media ingest", () => {
  it.effect("fetches the source through redirects and uploads it for the number", () =>
    Effect.gen(function*() {
      const { config, principal } = yield* given
      const receiver = yield* scriptSource
      const ingest = yield* MediaIngest
      const result = yield* ingest.ingest(principal, { phone_number_id: config.phone_number_id, source: "https://cdn.example/hop" })
      assert.deepStrictEqual(receiver.requests.map((r) => r.url), ["https://cdn.example/hop", "https://cdn.example/photo.jpg"])
      assert.strictEqual(result.target.kind, "upstream_media")
      assert.deepStrictEqual(result.resource, {
        filename: "photo.jpg",
        mime_type: "image/jpeg",
        size_bytes: jpeg.byteLength,
        sha256: Buffer.from(yield* Effect.promise(() => crypto.subtle.digest("SHA-256", jpeg))).toString("hex"),
        source_url: "https://cdn.example/hop"
      })
      assert.strictEqual(result.target.kind, "upstream_media")
      const mediaId = result.target.kind === "upstream_media" ? result.target.media_id : ""
      const media = yield* (yield* MessagingNetwork).getMedia({ accessToken: config.access_token }, mediaId)
      assert.strictEqual(media.value.mime_type, "image/jpeg")
      assert.strictEqual(Number(media.value.file_size), jpeg.byteLength)

      const named = yield* ingest.ingest(principal, {
        phone_number_id: config.phone_number_id,
        source: "https://cdn.example/fits.png",
        filename: "chart.png",
        mime_type: "image/png"
      })
      assert.strictEqual(named.resource.filename, "chart.png")
      const odd = yield* ingest.ingest(principal, { phone_number_id: config.phone_number_id, source: "https://cdn.example/caf%C3%A9%E0.jpg" })
      assert.strictEqual(odd.resource.filename, "café\uFFFD.jpg", "a malformed escape in the name is no failure")
      const asset = yield* ingest.ingest(principal, {
        phone_number_id: config.phone_number_id,
        source: "https://cdn.example/photo.jpg",
        delivery: "upstream_resumable_asset"
      })
      assert.strictEqual(asset.target.kind, "upstream_resumable_asset")
      assert.match(asset.target.kind === "upstream_resumable_asset" ? asset.target.handle : "", /^4::/)
      assert.strictEqual(asset.resource.size_bytes, jpeg.byteLength)
      assert.strictEqual(named.resource.size_bytes, 5 * 1024 * 1024, "exactly the image limit is taken")
    }).pipe(Effect.provide(Services)))

  it.effect("refuses private addresses (also behind a redirect), bad URLs, lying types and files over the limit", () =>
    Effect.gen(function*() {
      const { config, principal } = yield* given
      yield* scriptSource
      const ingest = yield* MediaIngest
      const refusal = (source: string, extra: { readonly mime_type?: string } = {}) =>
        Effect.flip(ingest.ingest(principal, { phone_number_id: config.phone_number_id, source, ...extra })).pipe(
          Effect.map((error) => [error._tag, error.error] as const)
        )
      assert.strictEqual((yield* refusal("http://internal.example/photo.jpg"))[0], "Forbidden")
      assert.strictEqual((yield* refusal("http://127.0.0.1/photo.jpg"))[0], "Forbidden")
      assert.strictEqual((yield* refusal("https://cdn.example/to-private"))[0], "Forbidden")
      assert.deepStrictEqual(yield* refusal("https://cdn.example/to-file"), [
        "BadRequest",
        "media_ingest.source redirected to a non-http(s) address"
      ])
      assert.deepStrictEqual(yield* refusal("https://cdn.example/loop"), [
        "BadRequest",
        "media_ingest.source redirected more than 5 times"
      ])
      assert.strictEqual((yield* refusal("ftp://cdn.example/photo.jpg"))[0], "BadRequest")
      assert.strictEqual((yield* refusal("https://cdn.example/missing"))[1], "media_ingest.source answered HTTP 404")
      assert.strictEqual((yield* refusal("https://cdn.example/liar.png"))[0], "BadRequest")
      assert.strictEqual((yield* refusal("https://cdn.example/photo.jpg", { mime_type: "application/pdf" }))[0], "BadRequest")
      assert.strictEqual((yield* refusal("https://cdn.example/photo.jpg", { mime_type: "image/gif" }))[0], "BadRequest")
      assert.strictEqual((yield* refusal("https://cdn.example/big.png"))[0], "PayloadTooLarge")
      assert.strictEqual((yield* refusal("https://cdn.example/big.png", { mime_type: "image/png" }))[0], "PayloadTooLarge")
    }).pipe(Effect.provide(Services)))

  it.effect("is refused on sandbox numbers (403) and for another project's number (404)", () =>
    Effect.gen(function*() {
      const { principal } = yield* given
      yield* scriptSource
      const { config } = yield* otherNumber(principal, "sandbox", "8")
      const ingest = yield* MediaIngest
      const sandbox = yield* Effect.flip(ingest.ingest(principal, { phone_number_id: config!.phone_number_id, source: "https://cdn.example/photo.jpg" }))
      assert.strictEqual(sandbox._tag, "Forbidden")
      const unknown = yield* Effect.flip(ingest.ingest(principal, { phone_number_id: "999", source: "https://cdn.example/photo.jpg" }))
      assert.strictEqual(unknown._tag, "NotFound")
    }).pipe(Effect.provide(Services)))
})
