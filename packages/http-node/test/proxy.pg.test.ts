/**
 * The proxy's send on the production storage (PostgreSQL), the simulator as
 * the network: a send to a new contact records the message and opens its
 * conversation, concurrent sends to one contact all go out and each gets its
 * network id, and a refusal leaves the message `failed` with the network's
 * error.
 */
import { assert, describe, it } from "@effect/vitest"
import { Messaging, MessagingProxy, UpstreamSettings } from "@parley/core"
import { Context, Effect, Exit, Option } from "effect"
import { messagingOnPostgres } from "./messagingPg.support.ts"
import { Simulator } from "@parley/core/simulators"

const { env, run } = messagingOnPostgres(MessagingProxy.layer)
const encoder = new TextEncoder()
const decoder = new TextDecoder()

const send = (envelope: unknown) =>
  run(MessagingProxy.use((proxy) =>
    proxy.send(env.projectId, env.config.phone_number_id, encoder.encode(JSON.stringify(envelope)))
  ))

describe("proxy send on PostgreSQL", () => {
  it("records template sends, serialises concurrent ones, and fails refused ones", async () => {
    const simulator = Option.getOrThrow(Context.getOption(env.context, Simulator.NetworkSimulator))
    // Inside the window: the contact writes first, to the simulated network and to the store (as ingestion would).
    await run(Messaging.use((m) =>
      m.recordInbound(env.config, {
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
    await run(
      simulator.inbound(env.config.phone_number_id, { from: "15550501001", message: { type: "text", text: { body: "hi" } } })
    )
    const answers = await Promise.all([1, 2, 3, 4].map((i) =>
      send({ messaging_product: "whatsapp", to: "15550501001", type: "text", text: { body: `n${i}` } })
    ))
    const ids = answers.map((a) => {
      assert.strictEqual(a.status, 200, decoder.decode(a.body))
      return JSON.parse(decoder.decode(a.body)).messages[0].id as string
    })
    for (const id of ids) {
      const stored = await run(Messaging.use((m) => m.getMessage(env.projectId, env.config.phone_number_id, id)))
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
      m.listConversations(env.projectId, { phone_number: "15550501002" }, { mode: "cursor", limit: 5 })
    ))
    assert.strictEqual(conversations.items.length, 1)
    const messages = await run(Messaging.use((m) =>
      m.listMessages(env.projectId, { conversation_id: conversations.items[0]!.id }, { mode: "cursor", limit: 5 })
    ))
    assert.strictEqual(messages.items.length, 1)
    assert.strictEqual(messages.items[0]!.status, "failed")
  })
})
