/**
 * The Platform API's conversation PATCH on the production storage (PostgreSQL): metadata replaced as a whole,
 * a manual end, the refused reopening while a newer conversation is active, and the reopening once it is not;
 * the message filters the Platform API reads use.
 */
import { assert, describe, it } from "@effect/vitest"
import { Messaging } from "@parley/core"
import { Effect, Exit } from "effect"
import { messagingOnPostgres } from "./messagingPg.support.ts"

const { env, run, runExit } = messagingOnPostgres()

const inbound = (body: string) =>
  run(Messaging.use((m) =>
    m.recordInbound(env.config, {
      contact: { wa_id: "15550601001", profile: { name: "Pat" } },
      message: {
        from: "15550601001",
        id: `wamid.in-${crypto.randomUUID()}`,
        timestamp: String(Math.floor(Date.now() / 1000)),
        type: "text",
        text: { body }
      }
    })
  ))

const conversationOf = async (body: string) => {
  await inbound(body)
  const page = await run(Messaging.use((m) =>
    m.listMessages(env.projectId, { phone_number: "15550601001", direction: "inbound" }, { mode: "cursor", limit: 1 })
  ))
  return page.items[0]!.conversation_id
}

describe("conversation PATCH on PostgreSQL", () => {
  it("replaces metadata, ends manually, refuses a reopening while a newer one is active, reopens otherwise", async () => {
    const first = await conversationOf("one")
    const update = (id: string, change: Parameters<Messaging["Service"]["updateConversation"]>[2]) =>
      run(Messaging.use((m) => m.updateConversation(env.projectId, id, change)))
    assert.deepStrictEqual((await update(first, { metadata: { a: [1, 2], b: "x" } })).metadata, { a: [1, 2], b: "x" })
    assert.deepStrictEqual((await update(first, { metadata: { c: null } })).metadata, { c: null })
    const ended = await update(first, { status: "ended" })
    assert.strictEqual(ended.status, "ended")
    assert.strictEqual(ended.end_reason, "manual")
    assert.deepStrictEqual(ended.metadata, { c: null })

    const second = await conversationOf("two")
    assert.notStrictEqual(second, first)
    const refused = await runExit(Messaging.use((m) => m.updateConversation(env.projectId, first, { status: "active" })))
    assert.strictEqual(Exit.isFailure(refused), true)
    const stored = await run(Messaging.use((m) => m.getConversation(env.projectId, first)))
    assert.strictEqual(stored.status, "ended")

    await update(second, { status: "ended" })
    const reopened = await update(first, { status: "active" })
    assert.strictEqual(reopened.status, "active")
    const again = await run(Messaging.use((m) => m.getConversation(env.projectId, first)))
    assert.strictEqual(again.status, "active")
    assert.strictEqual(again.end_reason, null)
    assert.strictEqual(again.ended_at, null)

    const texts = await run(Messaging.use((m) =>
      m.listMessages(
        env.projectId,
        { msg_config_id: env.config.id, type: "text", has_media: false },
        { mode: "page", page: 1, perPage: 10 }
      )
    ))
    assert.strictEqual(texts.total, 2)
    const media = await run(Messaging.use((m) => m.listMessages(env.projectId, { has_media: true }, { mode: "cursor", limit: 10 })))
    assert.deepStrictEqual(media.items, [])
  })
})
