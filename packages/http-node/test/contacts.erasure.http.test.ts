/**
 * `DELETE /platform/v1/msg/contacts/<identifier>` over real HTTP (decisions 4.8): 204 once the erasure is queued,
 * again while it runs (the same erasure), 404 for an unknown contact (or another project's), 422 for a malformed
 * phone number; then the job erases the contact, and a later inbound message creates a fresh one.
 */
import { assert, describe, it } from "@effect/vitest"
import { ContactErasureRepo, ContactsRepo, ExecutionsErasure, Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Exit, Latch, Layer, Option, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { connectSimulatedNumber, eventually, type MessagingHost, startMessagingHost, storedMessage } from "./messaging.support.ts"

const CONTACTS = "/platform/v1/msg/contacts"
const LIN = "15550402001"
const KIM = "15550402002"

let host: MessagingHost
let pnid: string
let close: () => Promise<void>
// Holds every erasure at its first step until opened: the erasure stays running while the test repeats the request.
const gate = Latch.makeUnsafe(false)

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)

const inbound = async (from: string, body: string) => {
  const sent = await run(host.simulator.inbound(pnid, { from, profile_name: from === LIN ? "Lin" : "Kim", message: { type: "text", text: { body } } }))
  return storedMessage(host, pnid, sent.id)
}

const contactOf = (waId: string) => run(Effect.flatMap(Effect.succeed(Context.get(host.context, ContactsRepo)), (c) => c.findByWaId(host.projectA, waId)))

const unfinishedOf = async (contactId: string) =>
  (await run(Context.get(host.context, ContactErasureRepo).listUnfinished(1000))).filter((e) => e.contact_id === contactId)

const layerGatedErasures = Layer.effect(
  ExecutionsErasure,
  Effect.gen(function*() {
    const erasure = yield* ExecutionsErasure
    return ExecutionsErasure.of({
      ...erasure,
      deleteStepEvents: (projectId, contactId, limit) => Effect.andThen(gate.await, erasure.deleteStepEvents(projectId, contactId, limit))
    })
  })
)

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    const storage = Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)
    // The gated erasure port replaces the memory one (the later of two outputs wins), over the same store.
    host = yield* startMessagingHost(
      layerGatedErasures.pipe(Layer.provideMerge(storage)),
      { PARLEY_UPSTREAM_VERIFY_TOKEN: "erasure-http-verify-token-0123" }
    )
    pnid = (yield* connectSimulatedNumber(host, { sink: true })).phoneNumberId
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
  await inbound(LIN, "please forget me")
  await inbound(LIN, "thanks")
  await inbound(KIM, "hello")
}, 60_000)
afterAll(() => close())

describe("DELETE /msg/contacts/<identifier>", () => {
  it("answers 422 for a malformed phone number or identifier, naming the identifier", async () => {
    for (const identifier of ["+123", "12345678901234567890", "+1 (555) 0", "nobody", "+1 555 CALL-NOW", "0190a0a0-0000"]) {
      const res = await host.request("DELETE", `${CONTACTS}/${encodeURIComponent(identifier)}`)
      assert.strictEqual(res.status, 422, `${identifier}: ${res.text}`)
      assert.match(res.body.error, /phone number/)
      assert.deepStrictEqual(res.body.details?.map((d: { path: string }) => d.path), ["identifier"])
    }
  })

  it("answers 404 for an unknown contact, and for another project's", async () => {
    for (const identifier of ["+15550402999", "0190a0a0-0000-7000-8000-000000000000", "US.0000000000000000000000"]) {
      const res = await host.request("DELETE", `${CONTACTS}/${encodeURIComponent(identifier)}`)
      assert.strictEqual(res.status, 404, `${identifier}: ${res.text}`)
      assert.deepStrictEqual(Object.keys(res.body), ["error"])
    }
    const other = await host.request("DELETE", `${CONTACTS}/${LIN}`, { key: host.otherKey })
    assert.strictEqual(other.status, 404, other.text)
    assert.isTrue(Option.isSome(await contactOf(LIN)))
    // The request log writes the route, never the identifier the erasure names.
    assert.isTrue(host.logs.some((line) => line.includes("/platform/v1/msg/contacts/:identifier")))
    assert.isFalse(host.logs.some((line) => line.includes("15550402999")))
  })

  it("answers 204 once queued and again while the erasure runs; the job then erases the contact", async () => {
    const lin = Option.getOrThrow(await contactOf(LIN))
    const first = await host.request("DELETE", `${CONTACTS}/${encodeURIComponent("+1 555-040-2001")}`)
    assert.strictEqual(first.status, 204, first.text)
    assert.strictEqual(first.text, "")
    await eventually("the erasure running", async () => (await unfinishedOf(lin.id)).some((e) => e.status === "running"))
    const again = await host.request("DELETE", `${CONTACTS}/${LIN}`)
    assert.strictEqual(again.status, 204, again.text)
    const byId = await host.request("DELETE", `${CONTACTS}/${lin.id}`)
    assert.strictEqual(byId.status, 204, byId.text)
    assert.strictEqual((await unfinishedOf(lin.id)).length, 1, "the repeated requests found the same erasure")

    await run(gate.open)
    await eventually("the contact erased", async () => Option.isNone(await contactOf(LIN)))
    assert.deepStrictEqual(await unfinishedOf(lin.id), [])
    const conversations = await host.request("GET", `/platform/v1/msg/conversations?phone_number=${LIN}`)
    assert.deepStrictEqual(conversations.body.data, [])
    const messages = await host.request("GET", `/platform/v1/msg/messages?phone_number=${LIN}`)
    assert.deepStrictEqual(messages.body.data, [])
    const kim = await host.request("GET", `/platform/v1/msg/messages?phone_number=${KIM}`)
    assert.strictEqual(kim.body.data.length, 1, "another contact's messages stay")

    const after = await host.request("DELETE", `${CONTACTS}/${LIN}`)
    assert.strictEqual(after.status, 404, after.text)
    // A later inbound message creates a fresh contact.
    const fresh = await inbound(LIN, "hello again")
    assert.notStrictEqual(fresh.contact_id, lin.id)
  })

  it("finds a contact by its business-scoped id", async () => {
    const kim = Option.getOrThrow(await contactOf(KIM))
    assert.isNotNull(kim.business_scoped_user_id)
    const res = await host.request("DELETE", `${CONTACTS}/${kim.business_scoped_user_id}`)
    assert.strictEqual(res.status, 204, res.text)
    await eventually("the contact erased", async () => Option.isNone(await contactOf(KIM)))
  })
})
