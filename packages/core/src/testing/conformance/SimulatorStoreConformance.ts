/**
 * The behaviour every `SimulatorStore` adapter owes, written once and run
 * against each adapter: the store's own contract, then the network simulator
 * over it, started again over the same store as a restarted host starts it.
 * `store` must build an empty store each time it is built: every test builds
 * its own.
 */
import { assert, describe, it } from "@effect/vitest"
import { Context, Duration, Effect, Exit, Layer, Queue, Scope } from "effect"
import { NetworkSimulator, type NetworkSimulatorOptions } from "../../simulators/network/Simulator.ts"
import { type SimChanges, type SimDelivery, SimulatorStore, SimulatorStoreError } from "../../ports/SimulatorStore.ts"
import { Ids } from "../../shared/Ids.ts"
import * as Simulator from "../../simulators/network/index.ts"

const none: SimChanges = { put: [], remove: [], delivered: [], forgotten: [] }
const changes = (partial: Partial<SimChanges>): SimChanges => ({ ...none, ...partial })

const delivery = (id: string, phoneNumberId = "pn-1", text = id): SimDelivery => ({
  id,
  phoneNumberId,
  record: { id, type: "text", envelope: { text: { body: text } } },
  raw: new TextEncoder().encode(JSON.stringify({ text: { body: text } }))
})

/** Every byte value, so no encoding on the way can go unnoticed. */
const allBytes = Uint8Array.from({ length: 256 }, (_, i) => i)

export const simulatorStoreConformance = <E>(name: string, store: Layer.Layer<SimulatorStore, E>): void => {
  describe(name, () => {
    const run = <A, E2>(effect: Effect.Effect<A, E2, SimulatorStore>) =>
      Effect.provide(effect, Layer.fresh(store)) as Effect.Effect<A, E2 | E>

    it.live("an empty store loads nothing", () =>
      run(Effect.gen(function*() {
        const loaded = yield* (yield* SimulatorStore).load
        assert.deepStrictEqual(loaded, { objects: [], deliveries: [] })
      })))

    it.live("keeps objects by kind and key, in the order they were first written, with their bytes", () =>
      run(Effect.gen(function*() {
        const sim = yield* SimulatorStore
        yield* sim.save(changes({
          put: [
            { kind: "number", key: "100", value: { verifiedName: "Acme", tiers: ["TIER_1K"], nested: { a: null } } },
            { kind: "window", key: "100|US.1", value: 1_700_000_000_000 },
            { kind: "media", key: "m1", value: { mimeType: "image/png" }, bytes: allBytes },
            // The same key in another kind is another object; keys may hold any text.
            { kind: "number", key: "pn|ünïcode\u0001", value: "text with \u0000 inside" }
          ]
        }))
        yield* sim.save(changes({
          put: [{ kind: "window", key: "100|US.1", value: 1_700_000_001_000 }],
          remove: [{ kind: "number", key: "pn|ünïcode\u0001" }, { kind: "number", key: "absent" }]
        }))
        yield* sim.save(changes({ put: [{ kind: "account", key: "100", value: { subscription: {} } }] }))
        const { objects } = yield* sim.load
        assert.deepStrictEqual(objects.map((o) => [o.kind, o.key, o.value]), [
          ["number", "100", { verifiedName: "Acme", tiers: ["TIER_1K"], nested: { a: null } }],
          // Replaced, in its first place.
          ["window", "100|US.1", 1_700_000_001_000],
          ["media", "m1", { mimeType: "image/png" }],
          ["account", "100", { subscription: {} }]
        ])
        assert.deepStrictEqual(objects[2]!.bytes, allBytes)
        assert.isUndefined(objects[0]!.bytes)
      })))

    it.live("answers values that are copies, not the objects it was given", () =>
      run(Effect.gen(function*() {
        const sim = yield* SimulatorStore
        const value = { status: "PENDING" }
        yield* sim.save(changes({ put: [{ kind: "template", key: "t1", value }] }))
        value.status = "APPROVED"
        const { objects } = yield* sim.load
        assert.deepStrictEqual(objects[0]!.value, { status: "PENDING" })
      })))

    it.live("keeps the outboxes in the order deliveries were appended, raw bytes exact", () =>
      run(Effect.gen(function*() {
        const sim = yield* SimulatorStore
        yield* sim.save(changes({ delivered: [delivery("w1"), delivery("w2", "pn-2")] }))
        yield* sim.save(changes({
          delivered: [delivery("w3"), { ...delivery("w4"), raw: allBytes }, delivery("w5", "pn-1", "nul \u0000 inside")]
        }))
        const { deliveries } = yield* sim.load
        assert.deepStrictEqual(deliveries.map((d) => [d.id, d.phoneNumberId]), [
          ["w1", "pn-1"],
          ["w2", "pn-2"],
          ["w3", "pn-1"],
          ["w4", "pn-1"],
          ["w5", "pn-1"]
        ])
        assert.deepStrictEqual(deliveries[0], delivery("w1"))
        assert.deepStrictEqual(deliveries[3]!.raw, allBytes)
        assert.deepStrictEqual(deliveries[4], delivery("w5", "pn-1", "nul \u0000 inside"))
      })))

    it.live("forgets the deliveries named, and a delivery appended twice is kept once", () =>
      run(Effect.gen(function*() {
        const sim = yield* SimulatorStore
        yield* sim.save(changes({ delivered: [delivery("w1"), delivery("w2"), delivery("w3")] }))
        yield* sim.save(changes({ delivered: [delivery("w4"), delivery("w2")], forgotten: ["w1", "unknown"] }))
        // Appended and forgotten in one save: never there.
        yield* sim.save(changes({ delivered: [delivery("w5"), delivery("w6")], forgotten: ["w5", "w3"] }))
        const { deliveries } = yield* sim.load
        assert.deepStrictEqual(deliveries.map((d) => d.id), ["w2", "w4", "w6"])
      })))

    it.live("applies a save of thousands of objects and deliveries at once", () =>
      run(Effect.gen(function*() {
        const sim = yield* SimulatorStore
        const count = 2_000
        yield* sim.save(changes({
          put: Array.from({ length: count }, (_, i) => ({ kind: "window", key: `pn|US.${i}`, value: i })),
          delivered: Array.from({ length: count }, (_, i) => delivery(`w${i}`))
        }))
        yield* sim.save(changes({ forgotten: Array.from({ length: count / 2 }, (_, i) => `w${i}`) }))
        const { deliveries, objects } = yield* sim.load
        assert.strictEqual(objects.length, count)
        assert.strictEqual(objects[count - 1]!.value, count - 1)
        assert.strictEqual(deliveries.length, count / 2)
        assert.strictEqual(deliveries[0]!.id, `w${count / 2}`)
      })))

    it.live("an empty save changes nothing", () =>
      run(Effect.gen(function*() {
        const sim = yield* SimulatorStore
        yield* sim.save(changes({ put: [{ kind: "token", key: "t", value: { expired: false } }] }))
        yield* sim.save(none)
        const loaded = yield* sim.load
        assert.strictEqual(loaded.objects.length, 1)
        assert.strictEqual(loaded.deliveries.length, 0)
      })))
  })

  describe(`${name}: the network simulator over it`, () => {
    const run = <A, E2>(effect: Effect.Effect<A, E2, SimulatorStore | Scope.Scope>) =>
      Effect.scoped(Effect.provide(effect, Layer.fresh(store))) as Effect.Effect<A, E2 | E>

    it.live("a restarted simulator still has the contact's window open and the outbox of what it delivered", () =>
      run(Effect.gen(function*() {
        const first = yield* start()
        const inbound = yield* first.sim.inbound(PNID, { from: CONTACT, message: { type: "text", text: { body: "hi" } } })
        const sent = yield* sendText(first.sim, CONTACT, "hello")
        assert.strictEqual(sent.status, 200)
        const id = sent.json.messages[0].id as string
        yield* first.stop

        const second = yield* start()
        const again = yield* sendText(second.sim, CONTACT, "still there?")
        assert.strictEqual(again.status, 200, JSON.stringify(again.json))
        // Whoever never wrote still has no window.
        const stranger = yield* sendText(second.sim, "15550107777", "hello?")
        assert.strictEqual(stranger.json.error.code, 131047)
        const outbox = yield* second.sim.outbox(PNID)
        assert.deepStrictEqual(outbox.map((m) => m.id), [id, again.json.messages[0].id])
        assert.deepStrictEqual(outbox[0]!.envelope, textEnvelope(CONTACT, "hello"))
        assert.strictEqual(outbox[0]!.to, CONTACT)
        // The contact's message can still be marked read.
        const read = yield* request(second.sim, "POST", `${PNID}/messages`, {
          messaging_product: "whatsapp",
          status: "read",
          message_id: inbound.id
        })
        assert.strictEqual(read.status, 200, JSON.stringify(read.json))
        assert.strictEqual((yield* (yield* SimulatorStore).load).deliveries.length, 2)
      })))

    it.live("keeps templates, media, blocked contacts, profile, unreachable contacts and expired tokens", () =>
      run(Effect.gen(function*() {
        const first = yield* start({ templateReviewMs: 1 })
        yield* first.sim.inbound(PNID, { from: CONTACT, message: { type: "text", text: { body: "hi" } } })
        yield* first.sim.inbound(PNID, { from: "15550108888", message: { type: "text", text: { body: "hi" } } })
        const template = yield* request(first.sim, "POST", `${WABA}/message_templates`, {
          name: "order_shipped",
          language: "en_US",
          category: "UTILITY",
          components: [{ type: "BODY", text: "Your order has shipped" }]
        })
        assert.strictEqual(template.status, 200, JSON.stringify(template.json))
        const media = yield* first.sim.handle({
          ...base("POST", `${PNID}/media`),
          body: {
            _tag: "Form",
            fields: { messaging_product: "whatsapp", type: "image/png" },
            files: [{ key: "file", filename: "a.png", contentType: "image/png", bytes: allBytes }]
          }
        })
        const mediaId = decode(media.body).id as string
        const blocked = yield* request(first.sim, "POST", `${PNID}/block_users`, {
          messaging_product: "whatsapp",
          block_users: [{ user: "15550108888" }]
        })
        assert.strictEqual(blocked.status, 200, JSON.stringify(blocked.json))
        yield* request(first.sim, "POST", `${PNID}/whatsapp_business_profile`, { messaging_product: "whatsapp", about: "Open 9-5" })
        yield* first.sim.setReachable("15550106666", false)
        yield* first.sim.registerNumber({ ...NUMBER, phoneNumberId: "100000000000002", accessToken: "old-token" })
        yield* first.sim.expireToken("old-token")
        yield* first.stop

        // Statuses move at once: the unreachable contact's message is failed as soon as it is accepted.
        const second = yield* start({ templateReviewMs: 1, statusDelays: { sent: 0 } })
        const shipped = yield* request(second.sim, "GET", template.json.id)
        assert.strictEqual(shipped.json.status, "APPROVED")
        const info = yield* request(second.sim, "GET", mediaId)
        assert.strictEqual(info.json.file_size, allBytes.byteLength)
        const download = yield* second.sim.handle({ ...base("GET", ""), path: new URL(info.json.url).pathname, query: Object.fromEntries(new URL(info.json.url).searchParams) })
        assert.deepStrictEqual(download.body, allBytes)
        const image = yield* request(second.sim, "POST", `${PNID}/messages`, {
          messaging_product: "whatsapp",
          to: CONTACT,
          type: "image",
          image: { id: mediaId }
        })
        assert.strictEqual(image.status, 200, JSON.stringify(image.json))
        const list = yield* request(second.sim, "GET", `${PNID}/block_users`)
        assert.deepStrictEqual(list.json.data.map((u: any) => u.wa_id), ["15550108888"])
        const profile = yield* request(second.sim, "GET", `${PNID}/whatsapp_business_profile`)
        assert.strictEqual(profile.json.data[0].about, "Open 9-5")
        const templated = yield* request(second.sim, "POST", `${PNID}/messages`, {
          messaging_product: "whatsapp",
          to: "15550106666",
          type: "template",
          template: { name: "order_shipped", language: { code: "en_US" } }
        })
        assert.strictEqual(templated.status, 200, JSON.stringify(templated.json))
        const outbox = yield* second.sim.outbox(PNID)
        assert.deepStrictEqual(outbox.slice(-2).map((m) => m.status), ["sent", "failed"])
        const expired = yield* second.sim.handle({ ...base("GET", "100000000000002"), authorization: "Bearer old-token" })
        assert.strictEqual(decode(expired.body).error.error_subcode, 463)
      })))

    it.live("keeps the outbox bounded in the store too", () =>
      run(Effect.gen(function*() {
        const first = yield* start({ outboxLimit: 3 })
        yield* first.sim.inbound(PNID, { from: CONTACT, message: { type: "text", text: { body: "hi" } } })
        const ids: Array<string> = []
        for (let i = 0; i < 5; i++) ids.push((yield* sendText(first.sim, CONTACT, `m${i}`)).json.messages[0].id)
        yield* first.stop
        const load = SimulatorStore.use((s) => Effect.map(s.load, (l) => l.deliveries.map((d) => d.id)))
        assert.deepStrictEqual(yield* load, ids.slice(2))
        // A smaller outbox forgets more when the simulator starts again, in the store as well.
        const second = yield* start({ outboxLimit: 2 })
        assert.deepStrictEqual((yield* second.sim.outbox(PNID)).map((m) => m.id), ids.slice(3))
        assert.deepStrictEqual(yield* load, ids.slice(3))
      })))

    it.live("reports the statuses and template reviews still due after a restart", () =>
      run(Effect.gen(function*() {
        const options = { statusDelays: { sent: 0, delivered: 400, read: null }, templateReviewMs: 400 }
        const first = yield* start(options)
        yield* first.sim.inbound(PNID, { from: CONTACT, message: { type: "text", text: { body: "hi" } } })
        const sent = yield* sendText(first.sim, CONTACT, "hello")
        const template = yield* request(first.sim, "POST", `${WABA}/message_templates`, {
          name: "welcome",
          language: "en_US",
          category: "UTILITY",
          components: [{ type: "BODY", text: "Welcome aboard" }]
        })
        yield* first.stop

        const second = yield* start(options)
        const webhooks = yield* Queue.unbounded<any>()
        yield* second.sim.setSink((raw) => Queue.offer(webhooks, decode(raw)))
        const seen: Array<string> = []
        while (!(seen.includes(`delivered ${sent.json.messages[0].id}`) && seen.includes(`APPROVED ${template.json.id}`))) {
          const payload = yield* Queue.take(webhooks).pipe(
            Effect.timeoutOrElse({
              duration: Duration.seconds(5),
              orElse: () => Effect.die(new Error(`no webhook in 5 s; seen so far: ${seen.join(", ") || "nothing"}`))
            })
          )
          for (const change of payload.entry.flatMap((e: any) => e.changes)) {
            for (const status of change.value.statuses ?? []) seen.push(`${status.status} ${status.id}`)
            if (change.field === "message_template_status_update") {
              seen.push(`${change.value.event} ${change.value.message_template_id}`)
            }
          }
        }
      })))

    it.live("answers 503 (code 2) while the store fails, and stores the change with the next save", () =>
      run(Effect.gen(function*() {
        const durable = yield* SimulatorStore
        let down = false
        const flaky = SimulatorStore.of({
          load: durable.load,
          save: (changes) => (down ? Effect.fail(new SimulatorStoreError({ message: "down" })) : durable.save(changes))
        })
        const first = yield* start({}, flaky)
        yield* first.sim.inbound(PNID, { from: CONTACT, message: { type: "text", text: { body: "hi" } } })
        down = true
        const refused = yield* sendText(first.sim, CONTACT, "lost?")
        assert.strictEqual(refused.status, 503)
        assert.strictEqual(refused.json.error.code, 2)
        down = false
        const sent = yield* sendText(first.sim, CONTACT, "again")
        assert.strictEqual(sent.status, 200)
        yield* first.stop
        const second = yield* start()
        assert.strictEqual((yield* second.sim.outbox(PNID)).length, 2)
      })))
  })
}

const PNID = "100000000000001"
const WABA = "200000000000001"
const TOKEN = "store-token"
const CONTACT = "15550109999"
const NUMBER = {
  phoneNumberId: PNID,
  businessAccountId: WABA,
  accessToken: TOKEN,
  displayPhoneNumber: "+1 555-010-0001",
  verifiedName: "Store Shop"
}

const encoder = new TextEncoder()
const decode = (bytes: Uint8Array): any => JSON.parse(new TextDecoder().decode(bytes))

/**
 * A simulator over the store in context (or `over`), registering its number
 * as a host does at every start; `stop` ends it, as a host that stops.
 */
const start = (options: Partial<NetworkSimulatorOptions> = {}, over?: SimulatorStore["Service"]) =>
  Effect.gen(function*() {
    const store = over ?? (yield* SimulatorStore)
    const scope = yield* Effect.scope
    const child = yield* Scope.fork(scope)
    const context = yield* Layer.buildWithScope(
      NetworkSimulator.layer({ appSecret: "store-secret", ...options }).pipe(
        Layer.provide(Layer.mergeAll(Ids.layer, Layer.succeed(SimulatorStore, store)))
      ),
      child
    )
    const sim = Context.get(context, NetworkSimulator)
    yield* sim.registerNumber(NUMBER)
    return { sim, stop: Scope.close(child, Exit.void) }
  })

const base = (method: string, path: string) => ({
  method,
  baseUrl: "http://network.test",
  path: `/v24.0/${path}`,
  query: {},
  authorization: `Bearer ${TOKEN}`,
  body: { _tag: "None" } as const
})

const request = (sim: NetworkSimulator["Service"], method: string, path: string, body?: unknown) =>
  Effect.map(
    sim.handle({
      ...base(method, path),
      ...(body === undefined
        ? {}
        : { body: { _tag: "Bytes", contentType: "application/json", bytes: encoder.encode(JSON.stringify(body)) } })
    }),
    (answer): { readonly status: number; readonly json: any } => ({ status: answer.status, json: decode(answer.body) })
  )

const textEnvelope = (to: string, text: string) => ({ messaging_product: "whatsapp", to, type: "text", text: { body: text } })

const sendText = (sim: NetworkSimulator["Service"], to: string, text: string) =>
  request(sim, "POST", `${PNID}/messages`, textEnvelope(to, text))
