/**
 * Messaging on the production ports: PostgreSQL storage and the pg-boss job
 * queue, the simulator in process posting through ingestion. What only a real
 * database shows: domain events committed with each change, concurrent
 * deliveries of one payload storing one message, concurrent first messages of
 * one contact opening one conversation, media in `bytea`, and the simulated
 * number's bootstrap surviving a restart.
 */
import { assert, describe, it } from "@effect/vitest"
import {
  Ids,
  layerMessagingServices,
  layerMessagingWorkers,
  MediaRepo,
  type MessageConfigRecord,
  MessageConfigs,
  Messaging,
  MESSAGING_DOMAIN_EVENTS,
  MessagingNetwork,
  Outbox,
  Projects,
  UpstreamIngestion,
  UpstreamSettings,
  UpstreamWebhook
} from "@parley/core"
import { layerFromUrl, layerJobQueue, layerStorage } from "@parley/store-pg"
import { Context, Effect, Exit, Layer, Option, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { afterAll, beforeAll } from "vitest"
import { freshDatabase } from "../../store-pg/test/pg.ts"
import { Simulator, SimulatedUpstream } from "@parley/core/simulators"

const services = (url: string) =>
  Layer.mergeAll(Projects.layer, layerMessagingWorkers).pipe(
    Layer.provideMerge(layerMessagingServices),
  Layer.provideMerge(SimulatedUpstream.layerSimulatorConfig),
    Layer.provideMerge(Layer.mergeAll(layerStorage, layerJobQueue({ pollingIntervalSeconds: 0.5 }), Ids.layer)),
    Layer.provideMerge(layerFromUrl(url))
  )

let url: string
let context: Context.Context<any>
let projectId: string
let config: MessageConfigRecord
let closeAll: () => Promise<void>

const run = <A, E>(effect: Effect.Effect<A, E, any>) => Effect.runPromise(Effect.provideContext(effect, context) as Effect.Effect<A, E>)
const encoder = new TextEncoder()

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    url = yield* freshDatabase
    // A first host connects the simulated number, then stops.
    const firstScope = yield* Scope.make()
    const first = yield* Layer.buildWithScope(services(url), firstScope)
    const project = yield* Context.get(first, Projects).create("Acme")
    projectId = project.id
    const before = Option.getOrThrow(yield* Context.get(first, MessageConfigs).bootstrap(project.id))
    yield* Scope.close(firstScope, Exit.void)
    // The host restarts: the same number stays connected once.
    context = yield* Layer.build(services(url))
    config = Option.getOrThrow(yield* Context.get(context, MessageConfigs).bootstrap(project.id))
    assert.strictEqual(config.id, before.id)
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  closeAll = () => Effect.runPromise(Scope.close(scope, Exit.void))
}, 120_000)
afterAll(() => closeAll())

const eventually = async (what: string, check: () => Promise<boolean>, ms = 15_000) => {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`still waiting for: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

const stored = async (id: string) => {
  await eventually(`message ${id}`, async () =>
    Exit.isSuccess(await Effect.runPromiseExit(Context.get(context, Messaging).getMessage(projectId, config.phone_number_id, id))))
  return run(Context.get(context, Messaging).getMessage(projectId, config.phone_number_id, id))
}

const takeEvents = () => run(Context.get(context, Outbox).take(MESSAGING_DOMAIN_EVENTS, 1000))

const simulator = () => Option.getOrThrow(Context.getOption(context, Simulator.NetworkSimulator))
const appSecret = () => Redacted.value(Option.getOrThrow(Context.get(context, UpstreamSettings).appSecret))

describe("messaging (postgres)", () => {
  it("keeps the simulated number connected once across restarts", async () => {
    const list = await run(Context.get(context, MessageConfigs).list(
      { project: { id: projectId } as any, apiKey: { id: "k", name: "k" } },
      {},
      { mode: "page", page: 1, perPage: 10 }
    ))
    assert.strictEqual(list.total, 1)
  })

  it("stores an inbound message with its domain events in the same transaction", async () => {
    await takeEvents()
    const sent = await run(simulator().inbound(config.phone_number_id, {
      from: "15550008001",
      profile_name: "Ada",
      message: { type: "text", text: { body: "hello pg" } }
    }))
    const message = await stored(sent.id)
    assert.strictEqual(message.content, "hello pg")
    const events = await takeEvents()
    assert.deepStrictEqual(events.map((e) => e.type).sort(), ["msg.conversation.created", "msg.message.received", "upstream.payload"])
    const received = events.find((e) => e.type === "msg.message.received")!
    assert.strictEqual(received.project_id, projectId)
    assert.strictEqual((received.payload as any).data.message.id, sent.id)
  })

  it("stores one message from concurrent deliveries of one payload", async () => {
    const sent = await run(simulator().inbound(config.phone_number_id, { from: "15550008002", message: { type: "text", text: { body: "dup" } } }))
    const raw = encoder.encode(JSON.stringify(sent.payload))
    const signature = UpstreamWebhook.hubSignature(raw, appSecret())
    const ingestion = Context.get(context, UpstreamIngestion)
    await Promise.all(Array.from({ length: 20 }, () => run(ingestion.receive(raw, signature))))
    const message = await stored(sent.id)
    await new Promise((resolve) => setTimeout(resolve, 1500))
    const all = await run(Context.get(context, Messaging).listMessages(projectId, { conversation_id: message.conversation_id }, { mode: "cursor", limit: 100 }))
    assert.strictEqual(all.items.length, 1)
    const received = (await takeEvents()).filter((e) => e.type === "msg.message.received" && (e.payload as any).data.message.id === sent.id)
    assert.strictEqual(received.length, 1)
  })

  it("opens one conversation for concurrent first messages of one contact", async () => {
    const from = "15550008003"
    const ids = await Promise.all(Array.from({ length: 10 }, (_, i) =>
      run(simulator().inbound(config.phone_number_id, { from, message: { type: "text", text: { body: `m${i}` } } })).then((r) => r.id)))
    const messages = await Promise.all(ids.map(stored))
    const conversations = new Set(messages.map((m) => m.conversation_id))
    assert.strictEqual(conversations.size, 1)
    const conversation = await run(Context.get(context, Messaging).getConversation(projectId, [...conversations][0]!))
    assert.strictEqual(conversation.messages_count, 10)
    const contacts = await run(Context.get(context, Messaging).listContacts(projectId, { wa_id: from }, { mode: "cursor", limit: 10 }))
    assert.strictEqual(contacts.items.length, 1)
  })

  it("moves a send to read with the simulator's real delays, one domain event per change", async () => {
    await run(simulator().inbound(config.phone_number_id, { from: "15550008004", message: { type: "text", text: { body: "open" } } }))
    const envelope = { messaging_product: "whatsapp", to: "15550008004", type: "text", text: { body: "reply" } }
    const messaging = Context.get(context, Messaging)
    await eventually("window open", async () => {
      const contacts = await run(messaging.listContacts(projectId, { wa_id: "15550008004" }, { mode: "cursor", limit: 1 }))
      return contacts.items.length === 1
    })
    const { message } = await run(messaging.recordOutbound(config, { envelope }))
    const answer = await run(Context.get(context, MessagingNetwork).send({ accessToken: config.access_token }, config.phone_number_id, envelope))
    const id = "messages" in answer.value ? answer.value.messages[0]!.id : ""
    await run(messaging.assignNetworkId(config, message, id))
    await takeEvents()
    await eventually("read", async () => (await stored(id)).status === "read", 10_000)
    const events = (await takeEvents()).filter((e) => e.type.startsWith("msg.message.") && (e.payload as any).data.message.id === id)
    assert.deepStrictEqual(events.map((e) => e.type), ["msg.message.sent", "msg.message.delivered", "msg.message.read"])
  })

  it("gives sends their network ids together; one a report overtook takes it with the report applied, once", async () => {
    const messaging = Context.get(context, Messaging)
    const envelope = (to: string) => ({ messaging_product: "whatsapp", to, type: "text", text: { body: "x" } })
    const [fast, overtaken] = await Promise.all(["15550008011", "15550008012"].map((to) =>
      run(messaging.recordOutbound(config, { envelope: envelope(to) }))
    ))
    const ids = [`wamid.fast-${crypto.randomUUID()}`, `wamid.overtaken-${crypto.randomUUID()}`]
    // The network reported the second send before its answer came back.
    const early = await run(messaging.applyStatuses(config, [{ id: ids[1], status: "sent", timestamp: "1" }]))
    assert.deepStrictEqual(early.map((o) => o._tag), ["Pending"])
    const assigned = await Promise.all([fast!, overtaken!].map(({ message }, i) => run(messaging.assignNetworkId(config, message, ids[i]!))))
    assert.deepStrictEqual(assigned.map((m) => [m.network_id, m.status]), [[ids[0], "pending"], [ids[1], "sent"]])
    for (const m of assigned) assert.deepStrictEqual(await stored(m.network_id!), m)
    // A report after the assignment applies to the message directly.
    await run(messaging.applyStatuses(config, [{ id: ids[1], status: "delivered", timestamp: "2" }]))
    assert.deepStrictEqual((await stored(ids[1]!)).statuses.map((x: any) => x.status), ["sent", "delivered"])
  })

  it("records a send on its caller's guess of the contact, and under the real contact when the guess is wrong", async () => {
    const messaging = Context.get(context, Messaging)
    const from = "15550008006"
    await run(simulator().inbound(config.phone_number_id, { from, message: { type: "text", text: { body: "hi" } } }))
    const contactOf = async (waId: string) => (await run(messaging.listContacts(projectId, { wa_id: waId }, { mode: "cursor", limit: 1 }))).items[0]
    await eventually("contact stored", async () => (await contactOf(from)) !== undefined)
    const contact = (await contactOf(from))!
    const envelope = (to: string) => ({ messaging_product: "whatsapp", to, type: "text", text: { body: "reply" } })
    const guessed = await run(messaging.recordOutbound(config, { envelope: envelope(from), contact_id: contact.id }))
    assert.strictEqual(guessed.message.contact_id, contact.id)
    // A wrong guess (another contact, or one not stored yet) is undone and recorded again without it.
    const other = "00000000-0000-4000-8000-000000000006"
    const wrong = await run(messaging.recordOutbound(config, { envelope: envelope(from), contact_id: other }))
    assert.strictEqual(wrong.message.contact_id, contact.id)
    assert.strictEqual(wrong.conversation.id, guessed.conversation.id)
    const fresh = await run(messaging.recordOutbound(config, { envelope: envelope("15550008007"), contact_id: contact.id }))
    const made = (await contactOf("15550008007"))!
    assert.strictEqual(fresh.message.contact_id, made.id)
    assert.notStrictEqual(made.id, contact.id)
    const conversation = await run(messaging.getConversation(projectId, guessed.conversation.id))
    assert.strictEqual(conversation.messages_count, 3)
  })

  it("remembers a recipient's contact for the next send, and records under a new one when it was erased", async () => {
    const messaging = Context.get(context, Messaging)
    const to = "15550008008"
    const envelope = { messaging_product: "whatsapp", to, type: "text", text: { body: "hello" } }
    const first = await run(messaging.recordOutbound(config, { envelope }))
    const second = await run(messaging.recordOutbound(config, { envelope }))
    assert.strictEqual(second.message.contact_id, first.message.contact_id)
    assert.strictEqual(second.conversation.id, first.conversation.id)
    // Erased (its conversations and messages go with it): the remembered contact is a wrong guess, undone.
    await run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`DELETE FROM msg_contacts WHERE id = ${first.message.contact_id}`))
    const third = await run(messaging.recordOutbound(config, { envelope }))
    assert.notStrictEqual(third.message.contact_id, first.message.contact_id)
    const contact = (await run(messaging.listContacts(projectId, { wa_id: to }, { mode: "cursor", limit: 2 }))).items
    assert.deepStrictEqual(contact.map((c) => c.id), [third.message.contact_id])
    assert.strictEqual((await run(messaging.getConversation(projectId, third.conversation.id))).messages_count, 1)
  })

  it("keeps inbound media in the database byte for byte", async () => {
    const bytes = new Uint8Array(250_000)
    for (let offset = 0; offset < bytes.length; offset += 65_536) {
      crypto.getRandomValues(bytes.subarray(offset, Math.min(bytes.length, offset + 65_536)))
    }
    const sent = await run(simulator().inbound(config.phone_number_id, {
      from: "15550008005",
      message: { type: "audio", audio: { voice: true } },
      media: { bytes, mimeType: "audio/ogg" }
    }))
    const message = await stored(sent.id)
    const kept = Option.getOrThrow(await run(Context.get(context, MediaRepo).find(projectId, message.media!.id)))
    assert.isTrue(Buffer.from(kept.bytes).equals(Buffer.from(bytes)))
    assert.strictEqual(kept.content_type, "audio/ogg")
  })
})
