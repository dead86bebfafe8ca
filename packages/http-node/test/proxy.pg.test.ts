/**
 * The proxy's send on the production storage (PostgreSQL), the simulator as
 * the network: a send to a new contact records the message and opens its
 * conversation, concurrent sends to one contact all go out and each gets its
 * network id, and a refusal leaves the message `failed` with the network's
 * error.
 */
import { assert, describe, it } from "@effect/vitest"
import {
  Ids,
  layerMessagingServices,
  type MessageConfigRecord,
  MessageConfigs,
  Messaging,
  MessagingProxy,
  Projects,
  UpstreamSettings
} from "@parley/core"
import { layerFromUrl, layerJobQueue, layerStorage } from "@parley/store-pg"
import { Context, Effect, Exit, Layer, Option, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { freshDatabase } from "../../store-pg/test/pg.ts"

let context: Context.Context<any>
let config: MessageConfigRecord
let projectId: string
let closeAll: () => Promise<void>

const run = <A, E>(effect: Effect.Effect<A, E, any>) => Effect.runPromise(Effect.provideContext(effect, context) as Effect.Effect<A, E>)
const encoder = new TextEncoder()
const decoder = new TextDecoder()

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    const url = yield* freshDatabase
    context = yield* Layer.build(
      Layer.mergeAll(Projects.layer, MessagingProxy.layer).pipe(
        Layer.provideMerge(layerMessagingServices),
        Layer.provideMerge(Layer.mergeAll(layerStorage, layerJobQueue({ pollingIntervalSeconds: 0.5 }), Ids.layer)),
        Layer.provideMerge(layerFromUrl(url))
      )
    )
    const project = yield* Context.get(context, Projects).create("Acme")
    projectId = project.id
    config = Option.getOrThrow(yield* Context.get(context, MessageConfigs).bootstrap(project.id))
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  closeAll = () => Effect.runPromise(Scope.close(scope, Exit.void))
}, 120_000)
afterAll(() => closeAll())

const send = (envelope: unknown) =>
  run(MessagingProxy.use((proxy) => proxy.send(projectId, config.phone_number_id, encoder.encode(JSON.stringify(envelope)))))

describe("proxy send on PostgreSQL", () => {
  it("records template sends, serialises concurrent ones, and fails refused ones", async () => {
    const simulator = Option.getOrThrow(Context.get(context, UpstreamSettings).simulator)
    // Inside the window: the contact writes first, to the simulated network and to the store (as ingestion would).
    await run(Messaging.use((m) =>
      m.recordInbound(config, {
        contact: { wa_id: "15550501001", profile: { name: "Pat" } },
        message: {
          from: "15550501001",
          id: `wamid.in-${crypto.randomUUID()}`,
          timestamp: String(Math.floor(Date.now() / 1000)),
          type: "text",
          text: { body: "hi" }
        }
      })
    ))
    await run(simulator.inbound(config.phone_number_id, { from: "15550501001", message: { type: "text", text: { body: "hi" } } }))
    const answers = await Promise.all([1, 2, 3, 4].map((i) =>
      send({ messaging_product: "whatsapp", to: "15550501001", type: "text", text: { body: `n${i}` } })
    ))
    const ids = answers.map((a) => {
      assert.strictEqual(a.status, 200, decoder.decode(a.body))
      return JSON.parse(decoder.decode(a.body)).messages[0].id as string
    })
    for (const id of ids) {
      const stored = await run(Messaging.use((m) => m.getMessage(projectId, config.phone_number_id, id)))
      assert.strictEqual(stored.direction, "outbound")
      assert.strictEqual(stored.origin, "api")
    }

    const refused = await send({
      messaging_product: "whatsapp",
      to: "15550501002",
      type: "template",
      template: { name: "missing_template", language: { code: "en" } }
    })
    assert.strictEqual(JSON.parse(decoder.decode(refused.body)).error.code, 132001)
    const conversations = await run(Messaging.use((m) =>
      m.listConversations(projectId, { phone_number: "15550501002" }, { mode: "cursor", limit: 5 })
    ))
    assert.strictEqual(conversations.items.length, 1)
    const messages = await run(Messaging.use((m) =>
      m.listMessages(projectId, { conversation_id: conversations.items[0]!.id }, { mode: "cursor", limit: 5 })
    ))
    assert.strictEqual(messages.items.length, 1)
    assert.strictEqual(messages.items[0]!.status, "failed")
  })
})
