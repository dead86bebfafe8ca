/**
 * The Cloud API adapter's requests and answer handling against a recording
 * server on loopback (what goes on the wire, byte for byte), the HTTP webhook
 * sink, and the simulator's HTTP face as a plain HTTP client sees it. Nothing
 * here contacts the real network.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { CloudApi, Ids, MessagingNetwork, type NetworkAnswer, type NetworkError, NetworkRefused, NetworkUnavailable, rawAnswer, UpstreamWebhook } from "@parley/core"
import { Simulator } from "@parley/core/simulators"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer, Redacted, Result, type Scope } from "effect"
import { FetchHttpClient, HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import { createServer } from "node:http"
import * as SimulatorServer from "../src/simulators/SimulatorServer.ts"

interface Captured {
  readonly method: string
  readonly url: string
  readonly headers: Readonly<Record<string, string | undefined>>
  readonly body: Uint8Array
}

interface Scripted {
  readonly status: number
  readonly contentType?: string
  readonly body: string | Uint8Array
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** A loopback server that records every request and answers what `respond` says (`"hang"`: never). */
const startRecorder = (respond: (request: Captured) => Scripted | "hang") =>
  Effect.gen(function*() {
    const requests: Array<Captured> = []
    const route = HttpRouter.add("*", "/*", (request) =>
      Effect.gen(function*() {
        const body = new Uint8Array(yield* request.arrayBuffer)
        const captured: Captured = { method: request.method, url: request.url, headers: request.headers, body }
        requests.push(captured)
        const answer = respond(captured)
        if (answer === "hang") return yield* Effect.never
        const bytes = typeof answer.body === "string" ? encoder.encode(answer.body) : answer.body
        return HttpServerResponse.uint8Array(bytes, {
          status: answer.status,
          contentType: answer.contentType ?? "application/json; charset=UTF-8"
        })
      }).pipe(Effect.orDie))
    const context = yield* Layer.build(
      HttpRouter.serve(route, { disableLogger: true, disableListenLog: true }).pipe(
        Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" }))
      )
    )
    const url = yield* HttpServer.addressFormattedWith(Effect.succeed).pipe(Effect.provideContext(context))
    return { url, requests }
  })

const adapterFor = (baseUrl: string, timeout?: number) =>
  CloudApi.make({ baseUrl, ...(timeout !== undefined ? { timeout } : {}) }).pipe(Effect.provide(FetchHttpClient.layer))

const access = { accessToken: Redacted.make("tok-123") }

const outcome = <A>(call: Effect.Effect<NetworkAnswer<A>, NetworkError>) => Effect.result(call)

const withRecorder = <A, E>(
  respond: (request: Captured) => Scripted | "hang",
  body: (
    recorder: { readonly url: string; readonly requests: Array<Captured> },
    network: MessagingNetwork["Service"]
  ) => Effect.Effect<A, E, Scope.Scope>,
  timeout?: number
) =>
  Effect.scoped(Effect.gen(function*() {
    const recorder = yield* startRecorder(respond)
    return yield* body(recorder, yield* adapterFor(recorder.url, timeout))
  }))

const okMessage = `{"messaging_product":"whatsapp", "contacts":[{"input":"+1 555 010 9999","wa_id":"15550109999"}],
  "messages":[{"id":"wamid.ABC="}], "extra_field_from_a_newer_release": {"x": 1}}`

describe("Cloud API adapter on the wire", () => {
  it.live("sends the envelope byte for byte with the bearer token, and answers the network's bytes unchanged", () =>
    withRecorder(() => ({ status: 200, body: okMessage }), (recorder, network) =>
      Effect.gen(function*() {
        const envelope = encoder.encode(`{"messaging_product":"whatsapp" ,"to":"+1 555 010 9999","type":"text","text":{"body":"h\\u00e9 👋"}}`)
        const answer = yield* network.send(access, "100000000000001", envelope)
        const [request] = recorder.requests
        assert.strictEqual(request!.method, "POST")
        assert.strictEqual(request!.url, "/v24.0/100000000000001/messages")
        assert.strictEqual(request!.headers["authorization"], "Bearer tok-123")
        assert.strictEqual(request!.headers["content-type"], "application/json")
        assert.deepStrictEqual(request!.body, envelope)
        assert.strictEqual(answer.status, 200)
        assert.strictEqual(decoder.decode(answer.body), okMessage)
        assert.deepStrictEqual((answer.value as { messages: ReadonlyArray<{ id: string }> }).messages, [{ id: "wamid.ABC=" }])

        yield* network.send({ ...access, version: "v21.0" }, "1/../2", { messaging_product: "whatsapp" })
        assert.strictEqual(recorder.requests[1]!.url, "/v21.0/1%2F..%2F2/messages", "ids cannot leave their path segment")
        const badVersion = yield* Effect.exit(network.send({ ...access, version: "../v1" }, "1", {}))
        assert.isTrue(Exit.isFailure(badVersion) && Exit.hasDies(badVersion))
        assert.strictEqual(recorder.requests.length, 2, "a malformed version segment never reaches the network")
      })))

  it.live("builds the network's requests for mark read, media, templates, numbers and subscriptions", () =>
    withRecorder((request) => {
      if (request.url.startsWith("/v24.0/55/media")) return { status: 200, body: `{"id":"777"}` }
      if (request.url.startsWith("/v24.0/55?fields")) return { status: 200, body: `{"id":"55"}` }
      if (request.url.startsWith("/v24.0/m1")) {
        return { status: 200, body: `{"id":"m1","url":"https://x.test/m1","mime_type":"image/png","sha256":"ab","file_size":"12"}` }
      }
      return { status: 200, body: `{"success":true}` }
    }, (recorder, network) =>
      Effect.gen(function*() {
        yield* network.markRead(access, "55", { messageId: "wamid.X", typingIndicator: true })
        assert.deepStrictEqual(JSON.parse(decoder.decode(recorder.requests[0]!.body)), {
          messaging_product: "whatsapp",
          status: "read",
          message_id: "wamid.X",
          typing_indicator: { type: "text" }
        })

        const bytes = new Uint8Array(512).map((_, i) => i % 256)
        const uploaded = yield* network.uploadMedia(access, "55", { bytes, mimeType: "image/png", filename: "pic.png" })
        assert.strictEqual(uploaded.value.id, "777")
        const upload = recorder.requests[1]!
        assert.strictEqual(upload.url, "/v24.0/55/media")
        assert.match(upload.headers["content-type"] ?? "", /^multipart\/form-data; boundary=/)
        const form = yield* Effect.promise(() =>
          new Request("http://x/", {
            method: "POST",
            headers: { "content-type": upload.headers["content-type"]! },
            body: upload.body as Uint8Array<ArrayBuffer>
          }).formData()
        )
        assert.strictEqual(form.get("messaging_product"), "whatsapp")
        assert.strictEqual(form.get("type"), "image/png")
        const file = form.get("file") as File
        assert.strictEqual(file.name, "pic.png")
        assert.strictEqual(file.type, "image/png")
        assert.deepStrictEqual(new Uint8Array(yield* Effect.promise(() => file.arrayBuffer())), bytes)

        yield* network.deleteTemplate(access, "99", { name: "promo", hsmId: "123" })
        assert.strictEqual(recorder.requests[2]!.method, "DELETE")
        assert.strictEqual(recorder.requests[2]!.url, "/v24.0/99/message_templates?name=promo&hsm_id=123")
        yield* network.editTemplate(access, "123", { components: [] })
        assert.strictEqual(recorder.requests[3]!.url, "/v24.0/123")
        yield* network.getPhoneNumber(access, "55")
        assert.strictEqual(
          decodeURIComponent(recorder.requests[4]!.url),
          "/v24.0/55?fields=id,verified_name,display_phone_number,quality_rating,messaging_limit_tier,throughput,status,name_status,code_verification_status,platform_type,account_mode,is_official_business_account,is_pin_enabled,is_on_biz_app"
        )
        const media = yield* network.getMedia(access, "m1", { phoneNumberId: "55" })
        assert.strictEqual(recorder.requests[5]!.url, "/v24.0/m1?phone_number_id=55")
        assert.strictEqual(media.value.file_size, 12, "a file size given as a string decodes to a number")
        yield* network.subscribeApp(access, "99", { overrideCallbackUri: "https://h.test/cb", verifyToken: "vt" })
        assert.strictEqual(recorder.requests[6]!.url, "/v24.0/99/subscribed_apps")
        assert.deepStrictEqual(JSON.parse(decoder.decode(recorder.requests[6]!.body)), {
          override_callback_uri: "https://h.test/cb",
          verify_token: "vt"
        })
        for (const request of recorder.requests) assert.strictEqual(request.headers["authorization"], "Bearer tok-123")
      })))

  it.live("answers the network's error object as NetworkRefused, bytes unchanged", () => {
    const errorObject = `{"error":{"message":"(#131047) Re-engagement message","type":"OAuthException","code":131047,` +
      `"error_data":{"messaging_product":"whatsapp","details":"Message failed to send"},"error_user_msg":"x","fbtrace_id":"AbC"}}`
    return withRecorder(() => ({ status: 400, body: errorObject }), (_, network) =>
      Effect.gen(function*() {
        const result = yield* outcome(network.send(access, "1", { messaging_product: "whatsapp" }))
        assert.isTrue(Result.isFailure(result))
        const error = (result as Result.Failure<unknown, NetworkError>).failure
        assert.instanceOf(error, NetworkRefused)
        const refused = error as NetworkRefused
        assert.strictEqual(refused.status, 400)
        assert.strictEqual(refused.code, 131047)
        assert.strictEqual(refused.error.error_data?.details, "Message failed to send")
        assert.strictEqual(decoder.decode(refused.body), errorObject)
        const raw = yield* rawAnswer(network.send(access, "1", { messaging_product: "whatsapp" }))
        assert.strictEqual(raw.status, 400)
        assert.strictEqual(decoder.decode(raw.body), errorObject)
      }))
  })

  it.live("reports answers that are not the network's format as UnexpectedAnswer, still forwardable", () =>
    withRecorder((request) =>
      request.url.includes("/html")
        ? { status: 502, contentType: "text/html", body: "<html>Bad gateway</html>" }
        : { status: 200, body: `{"unexpected":true}` }, (_, network) =>
      Effect.gen(function*() {
        const gateway = yield* outcome(network.getTemplate(access, "html"))
        const error = (gateway as Result.Failure<unknown, NetworkError>).failure as NetworkUnavailable
        assert.instanceOf(error, NetworkUnavailable)
        assert.strictEqual(error.reason, "UnexpectedAnswer")
        assert.strictEqual(error.status, 502)
        const raw = yield* rawAnswer(network.getTemplate(access, "html"))
        assert.strictEqual(raw.status, 502)
        assert.strictEqual(raw.contentType, "text/html")
        assert.strictEqual(decoder.decode(raw.body), "<html>Bad gateway</html>")

        const shape = yield* outcome(network.getTemplate(access, "other"))
        const mismatch = (shape as Result.Failure<unknown, NetworkError>).failure as NetworkUnavailable
        assert.strictEqual(mismatch.reason, "UnexpectedAnswer")
        assert.strictEqual(mismatch.status, 200)
      })))

  it.live("fails with Transport when nothing listens and with Timeout when nothing answers", () =>
    Effect.gen(function*() {
      const port = yield* Effect.scoped(Effect.map(startRecorder(() => ({ status: 200, body: "{}" })), (r) => r.url))
      // The recorder's scope is closed: its port no longer listens.
      const network = yield* adapterFor(port)
      const result = yield* outcome(network.getPhoneNumber(access, "1"))
      const error = (result as Result.Failure<unknown, NetworkError>).failure as NetworkUnavailable
      assert.instanceOf(error, NetworkUnavailable)
      assert.strictEqual(error.reason, "Transport")
      const raw = yield* Effect.result(rawAnswer(network.getPhoneNumber(access, "1")))
      assert.isTrue(Result.isFailure(raw), "no answer, nothing to forward")

      yield* withRecorder(() => "hang", (_, slow) =>
        Effect.gen(function*() {
          const timedOut = yield* outcome(slow.getPhoneNumber(access, "1"))
          const failure = (timedOut as Result.Failure<unknown, NetworkError>).failure as NetworkUnavailable
          assert.strictEqual(failure.reason, "Timeout")
        }), 300)
    }))

  it.live("takes its base from PARLEY_UPSTREAM_URL, defaulting to the real network's host", () =>
    withRecorder(() => ({ status: 200, body: `{"id":"1"}` }), (recorder) =>
      Effect.gen(function*() {
        const defaultBase = yield* CloudApi.UpstreamUrl.pipe(
          Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({})))
        )
        assert.strictEqual(defaultBase, "https://graph.facebook.com")
        const network = yield* MessagingNetwork.pipe(
          Effect.provide(CloudApi.layerConfig.pipe(Layer.provide(FetchHttpClient.layer))),
          Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown({ PARLEY_UPSTREAM_URL: `${recorder.url}/` })))
        )
        yield* network.getPhoneNumber(access, "1", { fields: ["id"] })
        assert.strictEqual(recorder.requests[0]!.url, "/v24.0/1?fields=id")
      })))

  it.live("sends the network a traceparent only when PARLEY_TRACE_PROPAGATION=true, as functions and webhooks get one", () =>
    withRecorder(() => ({ status: 200, body: `{"id":"1"}` }), (recorder) =>
      Effect.gen(function*() {
        const callWith = (env: Record<string, string>) =>
          Effect.gen(function*() {
            const network = yield* CloudApi.make({ baseUrl: recorder.url }).pipe(
              Effect.provide(FetchHttpClient.layer),
              Effect.provide(ConfigProvider.layer(ConfigProvider.fromUnknown(env)))
            )
            // Inside a request's span, as every send is.
            yield* network.getPhoneNumber(access, "1").pipe(Effect.withSpan("caller"))
            return recorder.requests.at(-1)!.headers
          })
        const off = yield* callWith({})
        assert.strictEqual(off["traceparent"], undefined)
        assert.strictEqual(off["b3"], undefined)
        const disabled = yield* callWith({ PARLEY_TRACE_PROPAGATION: "false" })
        assert.strictEqual(disabled["traceparent"], undefined)
        const on = yield* callWith({ PARLEY_TRACE_PROPAGATION: "true" })
        assert.match(on["traceparent"] ?? "", /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/)
      })))
})

describe("HTTP webhook sink", () => {
  it.live("posts the raw body with its signature; a non-2xx is a failed delivery", () =>
    Effect.scoped(Effect.gen(function*() {
      let status = 200
      const recorder = yield* startRecorder(() => ({ status, body: "" }))
      const sink = yield* Simulator.httpWebhookSink(`${recorder.url}/platform/v1/msg/upstream/webhook`).pipe(
        Effect.provide(FetchHttpClient.layer)
      )
      const raw = encoder.encode(`{"object":"whatsapp_business_account","entry":[]}`)
      const signature = UpstreamWebhook.hubSignature(raw, "secret")
      yield* sink(raw, signature)
      const [request] = recorder.requests
      assert.strictEqual(request!.method, "POST")
      assert.strictEqual(request!.url, "/platform/v1/msg/upstream/webhook")
      assert.deepStrictEqual(request!.body, raw)
      assert.strictEqual(request!.headers["x-hub-signature-256"], signature)
      assert.strictEqual(request!.headers["content-type"], "application/json")
      assert.isTrue(UpstreamWebhook.verifyHubSignature(request!.body, request!.headers["x-hub-signature-256"], "secret"))
      status = 500
      assert.isTrue(Exit.isFailure(yield* Effect.exit(sink(raw, signature))))
    })))

  it.live("carries the simulator's webhooks to an HTTP endpoint, verifiable on the bytes received", () =>
    Effect.scoped(Effect.gen(function*() {
      const recorder = yield* startRecorder(() => ({ status: 200, body: "" }))
      const sink = yield* Simulator.httpWebhookSink(recorder.url).pipe(Effect.provide(FetchHttpClient.layer))
      const simulator = yield* Simulator.NetworkSimulator.pipe(
        Effect.provide(Simulator.NetworkSimulator.layer({ appSecret: "app-secret", sink }).pipe(Layer.provide(Ids.layer)))
      )
      yield* simulator.registerNumber({
        phoneNumberId: "1",
        businessAccountId: "2",
        accessToken: "t",
        displayPhoneNumber: "15550100001",
        verifiedName: "V"
      })
      const inbound = yield* simulator.inbound("1", { from: "15550109999", message: { type: "text", text: { body: "hi" } } })
      assert.isTrue(inbound.delivered)
      const [request] = recorder.requests
      assert.isTrue(UpstreamWebhook.verifyHubSignature(request!.body, request!.headers["x-hub-signature-256"], "app-secret"))
      const payload = JSON.parse(decoder.decode(request!.body))
      assert.strictEqual(payload.object, "whatsapp_business_account")
      assert.strictEqual(payload.entry[0].changes[0].value.messages[0].id, inbound.id)
    })))
})

describe("Simulator HTTP face", () => {
  const serve = (prefix?: string) =>
    Effect.gen(function*() {
      const context = yield* Layer.build(
        HttpRouter.serve(SimulatorServer.routes({ prefix }), { disableLogger: true, disableListenLog: true }).pipe(
          Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })),
          Layer.provideMerge(Simulator.NetworkSimulator.layer({ appSecret: "s" })),
          Layer.provide(Ids.layer)
        )
      )
      const simulator = yield* Simulator.NetworkSimulator.pipe(Effect.provideContext(context))
      yield* simulator.registerNumber({
        phoneNumberId: "1",
        businessAccountId: "2",
        accessToken: "tok",
        displayPhoneNumber: "15550100001",
        verifiedName: "V"
      })
      const url = yield* HttpServer.addressFormattedWith(Effect.succeed).pipe(Effect.provideContext(context))
      return `${url}${prefix ?? ""}`
    })

  const fetchJson = (url: string, init: RequestInit = {}) =>
    Effect.promise(async () => {
      const response = await fetch(url, init)
      return { status: response.status, body: await response.json() as any }
    })

  it.live("answers like the network to a plain HTTP client: bearer check, multipart upload, download", () =>
    Effect.scoped(Effect.gen(function*() {
      const base = yield* serve("/upstream")
      const noToken = yield* fetchJson(`${base}/v24.0/1/messages`, { method: "POST", body: "{}" })
      assert.strictEqual(noToken.status, 401)
      assert.strictEqual(noToken.body.error.code, 0)

      const form = new FormData()
      form.append("messaging_product", "whatsapp")
      form.append("file", new Blob([encoder.encode("plain text file")], { type: "text/plain" }), "notes.txt")
      const uploaded = yield* fetchJson(`${base}/v24.0/1/media`, {
        method: "POST",
        headers: { authorization: "Bearer tok" },
        body: form
      })
      assert.strictEqual(uploaded.status, 200)
      const info = yield* fetchJson(`${base}/v24.0/${uploaded.body.id}`, { headers: { authorization: "Bearer tok" } })
      assert.strictEqual(info.body.mime_type, "text/plain")
      assert.isTrue(info.body.url.startsWith(`${base}/attachments/`), "media addresses keep the served prefix")
      const file = yield* Effect.promise(async () => {
        const response = await fetch(info.body.url, { headers: { authorization: "Bearer tok" } })
        return { status: response.status, type: response.headers.get("content-type"), text: await response.text() }
      })
      assert.deepStrictEqual(file, { status: 200, type: "text/plain", text: "plain text file" })

      const urlencoded = yield* fetchJson(`${base}/v24.0/2/subscribed_apps`, {
        method: "POST",
        headers: { authorization: "Bearer tok", "content-type": "application/x-www-form-urlencoded" },
        body: "override_callback_uri=https%3A%2F%2Fh.test%2Fcb&verify_token=v"
      })
      assert.deepStrictEqual(urlencoded.body, { success: true })
      const unknownPath = yield* fetchJson(`${base}/nope`, { headers: { authorization: "Bearer tok" } })
      assert.strictEqual(unknownPath.status, 400)
      assert.strictEqual(unknownPath.body.error.code, 100)
    })))
})
