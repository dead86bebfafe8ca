/**
 * Number operations over real HTTP on memory ports: the health check's body
 * and its cached answer, display name requests (create, list, get, cancel,
 * their refusals), a provisioned number released on DELETE, and `POST
 * /msg/media` from a source served on loopback (allowed in this host by
 * `PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS`; a host without it answers 403).
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids, type MessageConfigRecord, MessageConfigsRepo, MessagingNetwork } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { createHash } from "node:crypto"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll } from "vitest"
import { connectSimulatedNumber, type MessagingHost, startMessagingHost } from "./messaging.support.ts"

let host: MessagingHost
let strictHost: MessagingHost
let pnid: string
let source: Http.Server
let sourceUrl: string
let close: () => Promise<void>

const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, ...new Array(300).fill(9)])

beforeAll(async () => {
  source = Http.createServer((req, res) => {
    if (req.url === "/photo.jpg") {
      res.writeHead(200, { "content-type": "image/jpeg" })
      return res.end(jpeg)
    }
    if (req.url === "/hop") {
      res.writeHead(302, { location: "/photo.jpg" })
      return res.end()
    }
    if (req.url === "/huge.jpg") {
      // Far more than an image may be: the host must stop reading at the limit.
      res.writeHead(200, { "content-type": "image/jpeg" })
      const chunk = Buffer.alloc(1024 * 1024, 1)
      chunk.set([0xff, 0xd8, 0xff])
      let sent = 0
      const write = () => {
        while (sent < 64) {
          sent++
          if (!res.write(chunk)) return void res.once("drain", write)
        }
        res.end()
      }
      res.on("error", () => undefined)
      return write()
    }
    res.writeHead(404)
    res.end()
  })
  await new Promise<void>((resolve) => source.listen(0, "127.0.0.1", resolve))
  sourceUrl = `http://127.0.0.1:${(source.address() as AddressInfo).port}`
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    const ports = Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)
    host = yield* startMessagingHost(ports, { PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS: "true" })
    pnid = (yield* connectSimulatedNumber(host)).phoneNumberId
    strictHost = yield* startMessagingHost(ports)
    yield* connectSimulatedNumber(strictHost)
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    source.closeAllConnections()
    await new Promise((resolve) => source.close(resolve))
  }
}, 120_000)
afterAll(() => close())

describe("GET /msg/phone_numbers/<pnid>/health", () => {
  it.live("answers every check and the status, then the same answer for 3 minutes", () =>
    Effect.promise(async () => {
      const first = await host.request("GET", `/platform/v1/msg/phone_numbers/${pnid}/health`)
      assert.strictEqual(first.status, 200)
      const report = first.body.data
      assert.strictEqual(report.status, "healthy")
      assert.deepStrictEqual(Object.keys(report.checks).sort(), [
        "messaging_health",
        "phone_number_access",
        "phone_number_connection",
        "webhook_subscription",
        "webhook_verified"
      ])
      assert.deepStrictEqual(report.checks.phone_number_connection, { passed: true, details: { status: "CONNECTED" } })
      assert.strictEqual(first.headers.get("x-health-ratelimit-second-limit"), "5")
      assert.strictEqual(first.headers.get("x-health-ratelimit-minute-limit"), "60")
      assert.match(first.headers.get("x-health-ratelimit-minute-remaining") ?? "", /^\d+$/)
      const again = await host.request("GET", `/platform/v1/msg/phone_numbers/${pnid}/health`)
      assert.deepStrictEqual(again.body.data, report)
      const bad = await host.request("GET", `/platform/v1/msg/phone_numbers/${pnid}/health?test_message_to=nope`)
      assert.strictEqual(bad.status, 422)
      assert.match(bad.body.error, /test_message_to/)
      assert.strictEqual((await host.request("GET", "/platform/v1/msg/phone_numbers/000/health")).status, 404)
      assert.strictEqual((await host.request("GET", `/platform/v1/msg/phone_numbers/${pnid}/health`, { key: host.otherKey })).status, 404)
    }))

  it.live("answers 429 with Retry-After past 5 checks a second", () =>
    Effect.promise(async () => {
      // 12 at once cannot all fit in the windows of two seconds.
      const answers = await Promise.all(
        Array.from({ length: 12 }, () => strictHost.request("GET", `/platform/v1/msg/phone_numbers/${pnid}/health`))
      )
      const refused = answers.find((a) => a.status === 429)
      assert.isDefined(refused)
      assert.strictEqual(refused!.body.error, "Rate limit exceeded")
      assert.isString(refused!.body.message)
      assert.strictEqual(refused!.headers.get("retry-after"), "1")
      assert.strictEqual(refused!.headers.get("x-health-ratelimit-second-remaining"), "0")
      assert.isTrue(answers.every((a) => a.status === 200 || a.status === 429))
    }))
})

describe("display name requests", () => {
  const path = () => `/platform/v1/msg/phone_numbers/${pnid}/display_name_requests`

  it.live("create, list, get and cancel; a new request cancels the open one; refusals", () =>
    Effect.promise(async () => {
      const created = await host.request("POST", path(), { body: { display_name_request: { new_display_name: "Acme Store" } } })
      assert.strictEqual(created.status, 201)
      const request = created.body.data
      assert.deepStrictEqual(Object.keys(request).sort(), [
        "applied_at",
        "created_at",
        "id",
        "msg_config_id",
        "previous_display_name",
        "requested_display_name",
        "reviewed_at",
        "status",
        "submitted_at",
        "updated_at",
        "upstream_error_code",
        "upstream_error_message",
        "upstream_error_subcode",
        "upstream_error_type"
      ])
      assert.strictEqual(request.status, "pending_review")
      assert.strictEqual(request.requested_display_name, "Acme Store")

      const fetched = await host.request("GET", `${path()}/${request.id}`)
      assert.strictEqual(fetched.status, 200)
      assert.strictEqual(fetched.body.data.id, request.id)

      const next = await host.request("POST", path(), { body: { display_name_request: { new_display_name: "Acme Shop" } } })
      assert.strictEqual(next.status, 201)
      const list = await host.request("GET", `${path()}?limit=1`)
      assert.strictEqual(list.status, 200)
      assert.deepStrictEqual(list.body.data.map((r: { id: string }) => r.id), [next.body.data.id])
      assert.isString(list.body.paging.next)
      const older = await host.request("GET", new URL(list.body.paging.next).pathname + new URL(list.body.paging.next).search)
      assert.deepStrictEqual(older.body.data.map((r: { id: string; status: string }) => [r.id, r.status]), [[request.id, "cancelled"]])

      const cancelled = await host.request("DELETE", `${path()}/${next.body.data.id}`)
      assert.strictEqual(cancelled.status, 200)
      assert.strictEqual(cancelled.body.data.status, "cancelled")
      const final = await host.request("DELETE", `${path()}/${next.body.data.id}`)
      assert.strictEqual(final.status, 422)
      assert.match(final.body.error, /cancelled/)

      assert.strictEqual((await host.request("POST", path(), { body: { new_display_name: "No envelope" } })).status, 400)
      assert.strictEqual(
        (await host.request("POST", path(), { body: { display_name_request: { new_display_name: " " } } })).status,
        422
      )
      assert.strictEqual((await host.request("GET", `${path()}/${request.id}`, { key: host.otherKey })).status, 404)
      assert.strictEqual((await host.request("GET", `${path()}/00000000-0000-7000-8000-000000000000`)).status, 404)
    }))
})

describe("DELETE /msg/phone_numbers/<pnid> of a provisioned number", () => {
  it.live("releases the number to the network", () =>
    Effect.gen(function*() {
      const repo = Context.get(host.context, MessageConfigsRepo)
      const released = "300000000000091"
      const token = "released-number-token"
      yield* host.simulator.registerNumber({
        phoneNumberId: released,
        businessAccountId: "400000000000091",
        accessToken: token,
        displayPhoneNumber: "+1 555-010-0091",
        verifiedName: "Provisioned"
      })
      const now = new Date().toISOString()
      const config: MessageConfigRecord = {
        id: "0b7c4a3e-8d2f-4c1a-9e5b-6f7a8b9c0d91",
        project_id: host.projectA,
        name: "Provisioned",
        display_name: "Provisioned",
        kind: "production",
        phone_number_id: released,
        business_account_id: "400000000000091",
        display_phone_number: "+1 555-010-0091",
        display_phone_number_normalized: "15550100091",
        customer_id: null,
        inbound_processing_enabled: true,
        access_token: Redacted.make(token),
        webhook_verify_token: null,
        app_secret: null,
        webhook_destination_url: null,
        facts: {
          verified_name: "Provisioned",
          quality_rating: "GREEN",
          status: "CONNECTED",
          throughput_tier: "TIER_10K",
          throughput_level: null,
          name_status: null,
          code_verification_status: null,
          is_coexistence: false,
          is_official_business_account: null,
          is_pin_enabled: null,
          calls_enabled: null
        },
        refreshed_at: now,
        webhook_verified_at: null,
        provisioned: true,
        deleted_at: null,
        created_at: now,
        updated_at: now
      }
      yield* repo.insert(config)
      const answer = yield* Effect.promise(() => host.request("DELETE", `/platform/v1/msg/phone_numbers/${released}`))
      assert.strictEqual(answer.status, 204)
      const network = Context.get(host.context, MessagingNetwork)
      const facts = yield* network.getPhoneNumber({ accessToken: Redacted.make(token) }, released)
      assert.strictEqual(facts.value.status, "DISCONNECTED")
      const gone = yield* Effect.promise(() => host.request("GET", `/platform/v1/msg/phone_numbers/${released}`))
      assert.strictEqual(gone.status, 404)
    }))
})

describe("POST /msg/media", () => {
  const ingest = (target: MessagingHost, body: Record<string, unknown>) =>
    target.request("POST", "/platform/v1/msg/media", { body: { media_ingest: body } })

  it.live("fetches the source (following a redirect) and answers the network's media id", () =>
    Effect.promise(async () => {
      const answer = await ingest(host, { phone_number_id: pnid, source: `${sourceUrl}/hop` })
      assert.strictEqual(answer.status, 200, answer.text)
      const result = answer.body.data
      assert.isString(result.ingest_id)
      assert.strictEqual(result.target.kind, "upstream_media")
      assert.isString(result.target.media_id)
      assert.deepStrictEqual(result.resource, {
        filename: "photo.jpg",
        mime_type: "image/jpeg",
        size_bytes: jpeg.byteLength,
        sha256: createHash("sha256").update(jpeg).digest("hex"),
        source_url: `${sourceUrl}/hop`
      })
      const media = await host.request("GET", `/proxy/${result.target.media_id}?phone_number_id=${pnid}`)
      assert.strictEqual(media.status, 200)
      assert.strictEqual(media.body.mime_type, "image/jpeg")
      const asset = await ingest(host, { phone_number_id: pnid, source: `${sourceUrl}/photo.jpg`, delivery: "upstream_resumable_asset" })
      assert.strictEqual(asset.status, 200, asset.text)
      assert.strictEqual(asset.body.data.target.kind, "upstream_resumable_asset")
      assert.match(asset.body.data.target.handle, /^4::/)
      assert.strictEqual((await ingest(host, { phone_number_id: pnid, source: `${sourceUrl}/photo.jpg`, delivery: "email" })).status, 422)
    }))

  it.live("refuses: too large while streaming (413), bad URL (400), unknown number (404), missing envelope (400)", () =>
    Effect.promise(async () => {
      const huge = await ingest(host, { phone_number_id: pnid, source: `${sourceUrl}/huge.jpg` })
      assert.strictEqual(huge.status, 413, huge.text)
      assert.strictEqual((await ingest(host, { phone_number_id: pnid, source: "not a url" })).status, 400)
      assert.strictEqual((await ingest(host, { phone_number_id: pnid, source: `${sourceUrl}/missing` })).status, 400)
      assert.strictEqual((await ingest(host, { phone_number_id: "000", source: `${sourceUrl}/photo.jpg` })).status, 404)
      const unenveloped = await host.request("POST", "/platform/v1/msg/media", { body: { source: `${sourceUrl}/photo.jpg` } })
      assert.strictEqual(unenveloped.status, 400)
    }))

  it.live("a host that does not allow private addresses answers 403 for a loopback source", () =>
    Effect.promise(async () => {
      const refused = await ingest(strictHost, { phone_number_id: pnid, source: `${sourceUrl}/photo.jpg` })
      assert.strictEqual(refused.status, 403)
      assert.match(refused.body.error, /private/)
    }))
})
