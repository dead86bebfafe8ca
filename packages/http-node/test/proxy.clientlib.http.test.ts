/**
 * "Existing Cloud API client libraries work unchanged when pointed at
 * {proxy_url} with X-API-Key", proved with a published client: Kapso's
 * `@kapso/whatsapp-cloud-api`, configured the way its README says to use a
 * proxy (`baseUrl` plus `kapsoApiKey`, which it sends as `X-API-Key`) and
 * nothing else: no custom fetch, no patching. It runs against a real Parley
 * host over HTTP with the network simulator behind it. A simulated contact
 * writes first; then everything goes through the library: text, reaction,
 * interactive and template sends, mark read, the stored history (messages,
 * conversations, contacts), media upload/metadata/download/delete,
 * template create/list/get, and the business profile and settings (edges the
 * proxy forwards as is). A wrong key surfaces as the library's error.
 */
import { assert, describe, it } from "@effect/vitest"
import { GraphApiError, WhatsAppClient } from "@kapso/whatsapp-cloud-api"
import { Ids, type MessageRecord, Messaging } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { connectSimulatedNumber, eventually, type MessagingHost, startMessagingHost, storedMessage as stored } from "./messaging.support.ts"

const CONTACT = "15550401001"

let host: MessagingHost
let messaging: Messaging["Service"]
let pnid: string
let waba: string
let client: WhatsAppClient
let close: () => Promise<void>
/** The contact's first message, written before any test runs. */
let inbound: MessageRecord

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)

const storedMessage = (id: string) => stored(host, pnid, id)

/** Parley's extension object: the library types unknown keys as `unknown` (and camelCases them). */
const ext = (record: Readonly<Record<string, unknown>>) => record["ext"] as Record<string, unknown>

/** The error a library call rejects with. */
const rejection = async (call: Promise<unknown>): Promise<unknown> => {
  try {
    await call
  } catch (error) {
    return error
  }
  throw new Error("expected the call to fail")
}

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    const ports = Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)
    host = yield* startMessagingHost(ports, { PARLEY_UPSTREAM_VERIFY_TOKEN: "proxy-clientlib-verify-token-0123" })
    const number = yield* connectSimulatedNumber(host, { sink: true })
    pnid = number.phoneNumberId
    waba = number.businessAccountId
    messaging = Context.get(host.context, Messaging)
    // Network webhooks reach the host, so inbound messages and statuses get stored.
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
  // The README's proxy configuration, verbatim but for the address and key.
  client = new WhatsAppClient({ baseUrl: `${host.url}/proxy`, kapsoApiKey: host.key })
  // The contact writes first: it opens the 24-hour window the sends need.
  const written = await run(host.simulator.inbound(pnid, { from: CONTACT, profile_name: "Ada", message: { type: "text", text: { body: "hi" } } }))
  inbound = await storedMessage(written.id)
}, 60_000)
afterAll(() => close())

describe("@kapso/whatsapp-cloud-api against {proxy_url}", () => {
  it("sends text, reaction and interactive buttons, recorded outbound; marks the contact's message read", async () => {
    const text = await client.messages.sendText({ phoneNumberId: pnid, to: `+${CONTACT}`, body: "Hello from a client library" })
    assert.strictEqual(text.messagingProduct, "whatsapp")
    assert.deepStrictEqual(text.contacts, [{ input: `+${CONTACT}`, waId: CONTACT }])
    assert.match(text.messages[0].id, /^wamid\./)

    const reaction = await client.messages.sendReaction({
      phoneNumberId: pnid,
      to: CONTACT,
      reaction: { messageId: inbound.network_id!, emoji: "👍" }
    })
    const buttons = await client.messages.sendInteractiveButtons({
      phoneNumberId: pnid,
      to: CONTACT,
      bodyText: "Pick an option",
      buttons: [{ id: "accept", title: "Accept" }, { id: "decline", title: "Decline" }]
    })

    const sent = [text, reaction, buttons].map((r) => r.messages[0].id)
    const stored = await Promise.all(sent.map(storedMessage))
    assert.deepStrictEqual(stored.map((m) => [m.direction, m.origin, m.type, m.conversation_id]), [
      ["outbound", "api", "text", inbound.conversation_id],
      ["outbound", "api", "reaction", inbound.conversation_id],
      ["outbound", "api", "interactive", inbound.conversation_id]
    ])
    assert.strictEqual(stored[0]!.content, "Hello from a client library")
    // The library's default Graph version is forwarded as given.
    const outbox = (await run(host.simulator.outbox(pnid))).filter((e) => sent.includes(e.id))
    assert.deepStrictEqual(outbox.map((e) => e.version), ["v23.0", "v23.0", "v23.0"])

    const read = await client.messages.markRead({ phoneNumberId: pnid, messageId: inbound.network_id!, typingIndicator: { type: "text" } })
    assert.deepStrictEqual(read, { success: true })
    assert.strictEqual((await storedMessage(inbound.network_id!)).status, "read")
  })

  it("reads the stored history: messages.query/get, conversations.list, contacts.list, with paging", async () => {
    const reply = await client.messages.sendText({ phoneNumberId: pnid, to: CONTACT, body: "history" })
    const id = reply.messages[0].id
    // The network reports delivery and reading; the library sees what storage holds.
    await eventually("reply read, through the library", async () => {
      const one = await client.messages.get({ phoneNumberId: pnid, messageId: id, fields: "text,ext(direction,status)" })
      return ext(one)["status"] === "read"
    })
    assert.strictEqual((await storedMessage(id)).status, "read")
    const one = await client.messages.get({ phoneNumberId: pnid, messageId: id, fields: "text,ext(direction,status)" })
    // Only the selected fields come back (the library's type promises more, as for any `fields` selection).
    assert.deepStrictEqual<unknown>(one, { id, text: { body: "history" }, ext: { direction: "outbound", status: "read" } })

    const outbound = await client.messages.query({ phoneNumberId: pnid, conversationId: inbound.conversation_id, direction: "outbound" })
    assert.strictEqual(outbound.data[0]!.id, id, "newest first")
    for (const m of outbound.data) {
      assert.strictEqual(ext(m)["direction"], "outbound")
      assert.strictEqual(ext(m)["msgConversationId"], inbound.conversation_id)
      assert.strictEqual(ext(m)["status"], (await storedMessage(m.id)).status)
    }
    const all = await client.messages.query({ phoneNumberId: pnid, conversationId: inbound.conversation_id })
    assert.include(all.data.map((m) => m.id), inbound.network_id!)
    assert.strictEqual(all.data.find((m) => m.id === inbound.network_id)!.from, CONTACT)

    // Cursor paging as the library exposes it: `paging.cursors.after` into `after`.
    const first = await client.messages.query({ phoneNumberId: pnid, conversationId: inbound.conversation_id, limit: 2 })
    assert.deepStrictEqual(first.data.map((m) => m.id), all.data.slice(0, 2).map((m) => m.id))
    assert.isString(first.paging.next)
    const after = first.paging.cursors.after
    assert.isString(after)
    const second = await client.messages.query({ phoneNumberId: pnid, conversationId: inbound.conversation_id, limit: 2, after: after! })
    assert.deepStrictEqual(second.data.map((m) => m.id), all.data.slice(2, 4).map((m) => m.id))

    const conversations = await client.conversations.list({ phoneNumberId: pnid, phoneNumber: `+${CONTACT}` })
    assert.deepStrictEqual(conversations.data.map((c) => c.id), [inbound.conversation_id])
    assert.strictEqual(conversations.data[0]!.status, "active")
    assert.strictEqual(ext(conversations.data[0]!)["contactName"], "Ada")
    assert.strictEqual(ext(conversations.data[0]!)["messagesCount"], all.data.length)

    const contacts = await client.contacts.list({ phoneNumberId: pnid, waId: CONTACT })
    assert.strictEqual(contacts.data.length, 1)
    assert.strictEqual(contacts.data[0]!.waId, CONTACT)
    assert.strictEqual(contacts.data[0]!.profileName, "Ada")
  })

  it("uploads media, reads its metadata, downloads it, sends it and deletes it", async () => {
    const bytes = crypto.getRandomValues(new Uint8Array(20_000))
    bytes.set([0x89, 0x50, 0x4e, 0x47], 0)
    // `type` is the MIME type, as in the Cloud API's upload.
    const uploaded = await client.media.upload({
      phoneNumberId: pnid,
      type: "image/png",
      file: new Blob([bytes], { type: "image/png" }),
      fileName: "photo.png"
    })
    assert.isString(uploaded.id)

    const metadata = await client.media.get({ mediaId: uploaded.id, phoneNumberId: pnid })
    assert.strictEqual(metadata.id, uploaded.id)
    assert.strictEqual(metadata.mimeType, "image/png")
    assert.strictEqual(metadata.fileSize, "20000")
    assert.isString(metadata.sha256)
    assert.isTrue(metadata.downloadUrl!.startsWith(`${host.url}/proxy/media_download/`))

    // download() follows downloadUrl without credentials (not a kapso.ai host): the link's token suffices.
    const downloaded = await client.media.download({ mediaId: uploaded.id, phoneNumberId: pnid })
    assert.instanceOf(downloaded, ArrayBuffer)
    assert.isTrue(Buffer.from(downloaded).equals(Buffer.from(bytes)), "byte-identical")

    const image = await client.messages.sendImage({ phoneNumberId: pnid, to: CONTACT, image: { id: uploaded.id, caption: "a photo" } })
    const stored = await storedMessage(image.messages[0].id)
    assert.strictEqual(stored.direction, "outbound")
    assert.strictEqual(stored.type, "image")

    assert.deepStrictEqual(await client.media.delete({ mediaId: uploaded.id, phoneNumberId: pnid }), { success: true })
    const gone = await rejection(client.media.get({ mediaId: uploaded.id, phoneNumberId: pnid }))
    assert.instanceOf(gone, GraphApiError)
  })

  it("creates a template, lists and gets it, and sends it once review approves it", async () => {
    const name = "clientlib_order_update"
    const created = await client.templates.create({
      businessAccountId: waba,
      name,
      language: "en_US",
      category: "UTILITY",
      components: [{ type: "BODY", text: "Order {{1}} ships on {{2}}.", example: { bodyText: [["#1", "Monday"]] } }]
    })
    assert.match(created.id, /^\d+$/)
    assert.strictEqual(created.status, "PENDING")
    assert.strictEqual(created.category, "UTILITY")

    const listed = await client.templates.list({ businessAccountId: waba, name: "clientlib_order" })
    assert.deepStrictEqual(listed.data.map((t) => [t.id, t.name, t.language]), [[created.id, name, "en_US"]])

    // The simulator reviews templates a few seconds after creation.
    await eventually("template approved", async () =>
      (await client.templates.get({ businessAccountId: waba, templateId: created.id })).status === "APPROVED", 30_000)
    const template = await client.templates.get({ businessAccountId: waba, templateId: created.id })
    assert.strictEqual(template.components![0]!["type"], "BODY")

    const sent = await client.messages.sendTemplate({
      phoneNumberId: pnid,
      to: CONTACT,
      // Meta's send shape; the library's own builder output does not type-check against this input (its typing gap, not Parley's).
      template: {
        name,
        language: { code: "en_US" },
        components: [{ type: "body", parameters: [{ type: "text", text: "#1" }, { type: "text", text: "Monday" }] }]
      }
    })
    const stored = await storedMessage(sent.messages[0].id)
    assert.strictEqual(stored.direction, "outbound")
    assert.strictEqual(stored.type, "template")
  })

  it("reads and updates the business profile and the number's settings, forwarded to the network as is", async () => {
    const updated = await client.phoneNumbers.businessProfile.update({
      phoneNumberId: pnid,
      about: "Open 9 to 5",
      websites: ["https://acme.test"],
      vertical: "RETAIL"
    })
    assert.deepStrictEqual(updated, { success: true })
    const profile = await client.phoneNumbers.businessProfile.get({ phoneNumberId: pnid, fields: "about,websites,vertical" })
    assert.deepStrictEqual(profile, {
      data: [{ about: "Open 9 to 5", websites: ["https://acme.test"], vertical: "RETAIL", messagingProduct: "whatsapp" }]
    })
    const tooLong = await rejection(client.phoneNumbers.businessProfile.update({ phoneNumberId: pnid, about: "x".repeat(140) }))
    assert.instanceOf(tooLong, GraphApiError)
    if (!(tooLong instanceof GraphApiError)) return
    assert.strictEqual(tooLong.httpStatus, 400)
    assert.strictEqual(tooLong.code, 100)

    const enabled = await client.phoneNumbers.settings.update({ phoneNumberId: pnid, calling: { status: "ENABLED" } })
    assert.deepStrictEqual(enabled, { success: true })
    const settings = await client.phoneNumbers.settings.get({ phoneNumberId: pnid })
    assert.strictEqual(settings.calling?.status, "ENABLED")
  })

  it("also works Meta-style, with the project key as the bearer accessToken", async () => {
    const bearer = new WhatsAppClient({ baseUrl: `${host.url}/proxy`, accessToken: host.key })
    const sent = await bearer.messages.sendText({ phoneNumberId: pnid, to: CONTACT, body: "bearer" })
    assert.strictEqual((await storedMessage(sent.messages[0].id)).direction, "outbound")
  })

  it("surfaces a wrong key as the library's GraphApiError (401), on sends and reads", async () => {
    const wrong = new WhatsAppClient({ baseUrl: `${host.url}/proxy`, kapsoApiKey: "pk_test_not_a_key" })
    const before = (await run(host.simulator.outbox(pnid))).length
    // Started one at a time: a second call already running would reject before anyone awaits it.
    for (
      const call of [
        () => wrong.messages.sendText({ phoneNumberId: pnid, to: CONTACT, body: "nope" }),
        () => wrong.messages.query({ phoneNumberId: pnid })
      ]
    ) {
      const error = await rejection(call())
      assert.instanceOf(error, GraphApiError)
      if (!(error instanceof GraphApiError)) return
      assert.strictEqual(error.httpStatus, 401)
      assert.strictEqual(error.message, "Invalid API key")
    }
    assert.strictEqual((await run(host.simulator.outbox(pnid))).length, before, "nothing reached the network")
    // Another project's valid key sees the number as unknown: the Cloud API's error object, code 100.
    const other = new WhatsAppClient({ baseUrl: `${host.url}/proxy`, kapsoApiKey: host.otherKey })
    const unknown = await rejection(other.messages.sendText({ phoneNumberId: pnid, to: CONTACT, body: "nope" }))
    assert.instanceOf(unknown, GraphApiError)
    if (!(unknown instanceof GraphApiError)) return
    assert.strictEqual(unknown.httpStatus, 404)
    assert.strictEqual(unknown.code, 100)
  })
})
