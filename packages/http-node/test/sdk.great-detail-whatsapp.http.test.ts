/**
 * `@great-detail/whatsapp` (9.2) against `{proxy_url}` over real HTTP (issue
 * 29 §2), configured as its README says: `baseUrl` (the proxy) and the
 * request headers (`Authorization: Bearer` with the project's API key).
 * Everything goes through its own methods: sends, mark read, media upload and
 * URL, templates, the number, the account's numbers and subscriptions, and
 * its webhook `eventNotification` + `verifySignature` with the webhook's
 * secret as the app secret, on an `upstream` relay.
 */
import Client, { MessageType } from "@great-detail/whatsapp"
import { assert, describe, it } from "@effect/vitest"
import type { IncomingHttpHeaders } from "node:http"
import { eventually, storedMessage } from "./messaging.support.ts"
import { contactWrites, listen, PNG, relayUpstream, removeWebhook, type SdkSuite, sdkSuite, TRACING_HEADERS } from "./sdk.support.ts"

let suite: SdkSuite
sdkSuite("great-detail-whatsapp", (s) => (suite = s))

const SECRET = "great-detail-app-secret-0123"

const sdk = () =>
  new Client({ baseUrl: suite.proxyUrl, graphVersion: "v24.0", request: { headers: { Authorization: `Bearer ${suite.host.key}` } } })

describe("@great-detail/whatsapp against {proxy_url}", () => {
  it("sends text, a template and interactive buttons, and marks the contact's message read", async () => {
    const client = sdk()
    const text = await client.message.createMessage({
      phoneNumberID: suite.pnid,
      to: suite.contact,
      type: MessageType.Text,
      text: { body: "Hello from @great-detail/whatsapp" }
    }).json()
    const template = await client.message.createMessage({
      phoneNumberID: suite.pnid,
      to: suite.contact,
      type: MessageType.Template,
      template: {
        name: suite.template.name,
        language: { code: "en_US" },
        components: [{ type: "body", parameters: [{ type: "text", text: "A-9" }] }]
      }
    }).json()
    const buttons = await client.message.createMessage({
      phoneNumberID: suite.pnid,
      to: suite.contact,
      type: MessageType.Interactive,
      interactive: {
        type: "button",
        body: { text: "Ready?" },
        action: { buttons: [{ type: "reply", reply: { id: "yes", title: "Yes" } }, { type: "reply", reply: { id: "no", title: "No" } }] }
      }
    }).json()
    const stored = await Promise.all([text, template, buttons].map((r) => storedMessage(suite.host, suite.pnid, r.messages[0]!.id)))
    assert.deepStrictEqual(stored.map((m) => [m.direction, m.type]), [["outbound", "text"], ["outbound", "template"], [
      "outbound",
      "interactive"
    ]])
    const read = await client.message.createStatus({ phoneNumberID: suite.pnid, message_id: suite.inboundId, status: "read" }).json()
    assert.deepStrictEqual<unknown>(read, { success: true })
    assert.strictEqual((await storedMessage(suite.host, suite.pnid, suite.inboundId)).status, "read")
  })

  it("uploads media and reads its URL by id, with and without the number", async () => {
    const client = sdk()
    const uploaded = await client.media.upload({
      phoneNumberID: suite.pnid,
      file: new Blob([PNG], { type: "image/png" }),
      filename: "photo.png",
      mimeType: "image/png"
    }).json()
    for (const phoneNumberID of [suite.pnid, undefined]) {
      const info = await client.media.getURL({ mediaID: uploaded.id, ...(phoneNumberID !== undefined ? { phoneNumberID } : {}) }).json()
      assert.strictEqual(info.id, uploaded.id)
      assert.strictEqual(info.mime_type, "image/png")
      assert.match(info.url, /^http/)
    }
  })

  it("lists templates and reads one by id; reads the number, the account's numbers and subscriptions", async () => {
    const client = sdk()
    const templates = await client.template.list(suite.waba, { limit: 10 }).json()
    assert.include(templates.data.map((t) => t.id), suite.template.id)
    const template = await client.template.get(suite.template.id, { fields: ["name", "status", "language"] }).json()
    assert.strictEqual(template.id, suite.template.id)
    assert.strictEqual(template.name, suite.template.name)
    assert.strictEqual(template.status, "APPROVED")
    const number = await client.phoneNumbers.getPhoneNumber({ phoneNumberID: suite.pnid, fields: ["display_phone_number", "quality_rating"] })
      .json()
    assert.strictEqual(number.id, suite.pnid)
    assert.strictEqual(typeof number.display_phone_number, "string")
    const numbers = await client.phoneNumbers.listPhoneNumbers({ businessAccountID: suite.waba }).json()
    assert.deepStrictEqual(numbers.data.map((n) => n.id), [suite.pnid])
    const subscriptions = await client.subscribedApps.listSubscriptions({ businessAccountID: suite.waba }).json()
    assert.strictEqual(subscriptions.data.length, 1)
  })

  it("its webhook eventNotification verifies an upstream relay of a Parley number webhook", async () => {
    const client = sdk()
    const events: Array<{ readonly verified: boolean; readonly text: string | undefined; readonly pnid: string | undefined }> = []
    const received: Array<IncomingHttpHeaders> = []
    const receiver = await listen((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        received.push(req.headers)
        void client.webhook.eventNotification({
          method: req.method ?? "",
          query: {},
          body: Buffer.concat(chunks).toString("utf8"),
          headers: req.headers as Record<string, string>
        }).then(async (event) => {
          const verified = await event.checkSignature(SECRET)
          await event.verifySignature(SECRET)
          // A `messages` change (the library's type is the union of every field's).
          const change = event.eventNotification.entry[0]?.changes[0] as {
            readonly value?: {
              readonly metadata?: { readonly phone_number_id?: string }
              readonly messages?: ReadonlyArray<{ readonly text?: { readonly body?: string } }>
            }
          } | undefined
          events.push({ verified, text: change?.value?.messages?.[0]?.text?.body, pnid: change?.value?.metadata?.phone_number_id })
          res.statusCode = 200
          res.end(event.accept())
        }).catch(() => {
          events.push({ verified: false, text: undefined, pnid: undefined })
          res.statusCode = 400
          res.end()
        })
      })
    })
    const webhook = await relayUpstream(suite, `${receiver.url}/whatsapp`, SECRET)
    try {
      await contactWrites(suite, "relayed to @great-detail/whatsapp, ça va? 🙂")
      await eventually("the library verified the relayed message", () => events.some((e) => e.text?.startsWith("relayed to") === true))
      assert.deepStrictEqual(events.find((e) => e.text?.startsWith("relayed to") === true), {
        verified: true,
        text: "relayed to @great-detail/whatsapp, ça va? 🙂",
        pnid: suite.pnid
      })
      assert.isTrue(events.every((e) => e.verified), "every relay verifies")
      for (const h of received) for (const name of TRACING_HEADERS) assert.notProperty(h, name)
    } finally {
      await removeWebhook(suite, webhook)
      await receiver.close()
    }
  })
})
