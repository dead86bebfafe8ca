/**
 * The proxy's send on the production storage (PostgreSQL), the simulator as
 * the network: a send to a new contact records the message and opens its
 * conversation, concurrent sends to one contact all go out and each gets its
 * network id, and a refusal leaves the message `failed` with the network's
 * error. The guardrails' check runs in the recording's transaction: a send
 * to an opted-out contact, concurrent with sends that go out, records nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import { Messaging, MessagingProxy, OptOuts, UpstreamSettings } from "@parley/core"
import { Context, Effect, Exit, Option } from "effect"
import { messagingOnPostgres } from "./messagingPg.support.ts"
import { Simulator } from "@parley/core/simulators"

const { env, run } = messagingOnPostgres(MessagingProxy.layer)
const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** The contact writes first, to the simulated network and to the store (as ingestion would): its window is open. */
const writesFirst = (from: string) =>
  Effect.gen(function*() {
    const simulator = Option.getOrThrow(Context.getOption(env.context, Simulator.NetworkSimulator))
    yield* Messaging.use((m) =>
      m.recordInbound(env.config, {
        contact: { wa_id: from, profile: { name: "Pat" } },
        message: {
          from,
          id: `wamid.in-${crypto.randomUUID()}`,
          timestamp: String(Math.floor(Date.now() / 1000)),
          type: "text",
          text: { body: "hi" }
        }
      })
    )
    yield* simulator.inbound(env.config.phone_number_id, { from, message: { type: "text", text: { body: "hi" } } })
  })

const send = (envelope: unknown) =>
  run(MessagingProxy.use((proxy) =>
    proxy.send(env.projectId, env.config.phone_number_id, encoder.encode(JSON.stringify(envelope)))
  ))

describe("proxy send on PostgreSQL", () => {
  it("records template sends, serialises concurrent ones, and fails refused ones", async () => {
    await run(writesFirst("15550501001"))
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

  it("withholds a send to an opted-out contact in its recording's transaction, beside sends that go out", async () => {
    const [ada, bob, cy] = ["15550501011", "15550501012", "15550501013"]
    for (const from of [ada, bob, cy]) await run(writesFirst(from))
    // Bob opted out after he wrote: a free-form message to him is withheld until he writes again.
    await run(OptOuts.use((o) => o.add(env.projectId, { phone_number: `+${bob}`, msg_config_id: env.config.id })))
    const answers = await Promise.all([ada, bob, cy, ada, bob, cy].map((to, i) =>
      send({ messaging_product: "whatsapp", to, type: "text", text: { body: `m${i}` } })
    ))
    const statuses = answers.map((a) => a.status)
    assert.deepStrictEqual(statuses, [200, 422, 200, 200, 422, 200])
    assert.strictEqual(JSON.parse(decoder.decode(answers[1]!.body)).code, "opted_out")
    const outbound = async (phone: string) => {
      const conversations = await run(Messaging.use((m) =>
        m.listConversations(env.projectId, { phone_number: phone }, { mode: "cursor", limit: 5 })
      ))
      const messages = await run(Messaging.use((m) =>
        m.listMessages(env.projectId, { conversation_id: conversations.items[0]!.id, direction: "outbound" }, { mode: "cursor", limit: 10 })
      ))
      return messages.items.map((m) => m.network_id !== null)
    }
    assert.deepStrictEqual(await outbound(ada), [true, true])
    assert.deepStrictEqual(await outbound(bob), [])
    assert.deepStrictEqual(await outbound(cy), [true, true])
  })
})
