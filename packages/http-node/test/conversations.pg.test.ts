/**
 * The Platform API's conversation PATCH on the production storage (PostgreSQL): metadata replaced as a whole,
 * a manual end, the refused reopening while a newer conversation is active, and the reopening once it is not;
 * the message filters the Platform API reads use.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids, layerMessagingServices, type MessageConfigRecord, MessageConfigs, Messaging, Projects } from "@parley/core"
import { layerFromUrl, layerJobQueue, layerStorage } from "@parley/store-pg"
import { Context, Effect, Exit, Layer, Option, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { freshDatabase } from "../../store-pg/test/pg.ts"

let context: Context.Context<any>
let config: MessageConfigRecord
let projectId: string
let closeAll: () => Promise<void>

const run = <A, E>(effect: Effect.Effect<A, E, any>) => Effect.runPromise(Effect.provideContext(effect, context) as Effect.Effect<A, E>)
const runExit = <A, E>(effect: Effect.Effect<A, E, any>) =>
  Effect.runPromiseExit(Effect.provideContext(effect, context) as Effect.Effect<A, E>)

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    const url = yield* freshDatabase
    context = yield* Layer.build(
      Projects.layer.pipe(
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

const inbound = (body: string) =>
  run(Messaging.use((m) =>
    m.recordInbound(config, {
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
    m.listMessages(projectId, { phone_number: "15550601001", direction: "inbound" }, { mode: "cursor", limit: 1 })
  ))
  return page.items[0]!.conversation_id
}

describe("conversation PATCH on PostgreSQL", () => {
  it("replaces metadata, ends manually, refuses a reopening while a newer one is active, reopens otherwise", async () => {
    const first = await conversationOf("one")
    const update = (id: string, change: Parameters<Messaging["Service"]["updateConversation"]>[2]) =>
      run(Messaging.use((m) => m.updateConversation(projectId, id, change)))
    assert.deepStrictEqual((await update(first, { metadata: { a: [1, 2], b: "x" } })).metadata, { a: [1, 2], b: "x" })
    assert.deepStrictEqual((await update(first, { metadata: { c: null } })).metadata, { c: null })
    const ended = await update(first, { status: "ended" })
    assert.strictEqual(ended.status, "ended")
    assert.strictEqual(ended.end_reason, "manual")
    assert.deepStrictEqual(ended.metadata, { c: null })

    const second = await conversationOf("two")
    assert.notStrictEqual(second, first)
    const refused = await runExit(Messaging.use((m) => m.updateConversation(projectId, first, { status: "active" })))
    assert.strictEqual(Exit.isFailure(refused), true)
    const stored = await run(Messaging.use((m) => m.getConversation(projectId, first)))
    assert.strictEqual(stored.status, "ended")

    await update(second, { status: "ended" })
    const reopened = await update(first, { status: "active" })
    assert.strictEqual(reopened.status, "active")
    const again = await run(Messaging.use((m) => m.getConversation(projectId, first)))
    assert.strictEqual(again.status, "active")
    assert.strictEqual(again.end_reason, null)
    assert.strictEqual(again.ended_at, null)

    const texts = await run(Messaging.use((m) =>
      m.listMessages(projectId, { msg_config_id: config.id, type: "text", has_media: false }, { mode: "page", page: 1, perPage: 10 })
    ))
    assert.strictEqual(texts.total, 2)
    const media = await run(Messaging.use((m) => m.listMessages(projectId, { has_media: true }, { mode: "cursor", limit: 10 })))
    assert.deepStrictEqual(media.items, [])
  })
})
