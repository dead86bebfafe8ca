/**
 * `whatsapp-api-js` (6.3) against `{proxy_url}` over real HTTP (issue 29 §2).
 * The library has no base URL setting: it calls `https://graph.facebook.com`
 * through the `fetch` it is given (its `ponyfill.fetch`), so the test gives
 * it one that sends those requests to the proxy instead, and the project's
 * API key is its token (`Authorization: Bearer`). Calls it has no method for
 * (template list and read, the number, the account's numbers) go through its
 * own `$$apiFetch$$`, as its docs say to. Its webhook receiver is its
 * node:http middleware with the webhook's secret as the app secret: it
 * verifies `X-Hub-Signature-256` of an `upstream` relay.
 */
import { assert, describe, it } from "@effect/vitest"
import { WhatsAppAPI } from "whatsapp-api-js/middleware/node-http"
import { ActionButtons, Body, BodyComponent, BodyParameter, Button, Interactive, Template, Text } from "whatsapp-api-js/messages"
import { eventually, storedMessage } from "./messaging.support.ts"
import { contactWrites, listen, PNG, relayUpstream, removeWebhook, type SdkSuite, sdkSuite, TRACING_HEADERS } from "./sdk.support.ts"

let suite: SdkSuite
sdkSuite("whatsapp-api-js", (s) => (suite = s))

const GRAPH = "https://graph.facebook.com/"
const SECRET = "whatsapp-api-js-app-secret-0123"

/** The library's `fetch`: its Graph addresses go to `{proxy_url}`. */
const proxied: typeof fetch = (input, init) => {
  const url = input instanceof URL ? input.href : typeof input === "string" ? input : input.url
  return fetch(url.startsWith(GRAPH) ? `${suite.proxyUrl}/${url.slice(GRAPH.length)}` : url, init)
}

const client = () =>
  new WhatsAppAPI({ token: suite.host.key, appSecret: SECRET, v: "v24.0", ponyfill: { fetch: proxied } })

/** A call the library has no method for, through its own authenticated fetch. */
const graphGet = async (api: WhatsAppAPI, path: string) => {
  const response = await api.$$apiFetch$$(`${GRAPH}v24.0/${path}`)
  return { status: response.status, body: (await response.json()) as any }
}

describe("whatsapp-api-js against {proxy_url}", () => {
  it("sends text, a template and interactive buttons, and marks the contact's message read", async () => {
    const api = client()
    const text = await api.sendMessage(suite.pnid, suite.contact, new Text("Hello from whatsapp-api-js"))
    const template = await api.sendMessage(
      suite.pnid,
      suite.contact,
      new Template(suite.template.name, "en_US", new BodyComponent(new BodyParameter("A-7")))
    )
    const buttons = await api.sendMessage(
      suite.pnid,
      suite.contact,
      new Interactive(new ActionButtons(new Button("yes", "Yes"), new Button("no", "No")), new Body("Ready?"))
    )
    const ids = [text, template, buttons].map((r) => r.error === undefined ? r.messages[0].id : assert.fail(JSON.stringify(r)))
    const stored = await Promise.all(ids.map((id) => storedMessage(suite.host, suite.pnid, id)))
    assert.deepStrictEqual(stored.map((m) => [m.direction, m.type]), [["outbound", "text"], ["outbound", "template"], [
      "outbound",
      "interactive"
    ]])
    assert.deepStrictEqual(await api.markAsRead(suite.pnid, suite.inboundId), { success: true })
    assert.strictEqual((await storedMessage(suite.host, suite.pnid, suite.inboundId)).status, "read")
  })

  it("uploads media and reads it back by id, with and without the number", async () => {
    const api = client()
    const form = new FormData()
    form.set("messaging_product", "whatsapp")
    form.set("file", new Blob([PNG], { type: "image/png" }), "photo.png")
    const uploaded = await api.uploadMedia(suite.pnid, form)
    assert.match((uploaded as { id: string }).id, /^\d+$/)
    const id = (uploaded as { id: string }).id
    for (const info of [await api.retrieveMedia(id, suite.pnid), await api.retrieveMedia(id)]) {
      if (info.error !== undefined) assert.fail(JSON.stringify(info))
      assert.strictEqual(info.id, id)
      assert.strictEqual(info.mime_type, "image/png")
    }
  })

  it("lists templates and reads one by id, the number and the account's numbers", async () => {
    const api = client()
    const list = await graphGet(api, `${suite.waba}/message_templates?name=${suite.template.name}`)
    assert.strictEqual(list.status, 200, JSON.stringify(list.body))
    assert.deepStrictEqual(list.body.data.map((t: any) => t.id), [suite.template.id])
    const template = await graphGet(api, suite.template.id)
    assert.strictEqual(template.status, 200, JSON.stringify(template.body))
    assert.strictEqual(template.body.name, suite.template.name)
    const number = await graphGet(api, `${suite.pnid}?fields=display_phone_number,verified_name`)
    assert.strictEqual(number.status, 200, JSON.stringify(number.body))
    assert.strictEqual(number.body.id, suite.pnid)
    assert.strictEqual(typeof number.body.display_phone_number, "string")
    const numbers = await graphGet(api, `${suite.waba}/phone_numbers`)
    assert.strictEqual(numbers.status, 200, JSON.stringify(numbers.body))
    assert.deepStrictEqual(numbers.body.data.map((n: any) => n.id), [suite.pnid])
  })

  it("its webhook receiver verifies and reads an upstream relay of a Parley number webhook", async () => {
    const api = client()
    const messages: Array<{ readonly phoneID: string; readonly from: string; readonly text: string | undefined }> = []
    api.on.message = ({ from, message, phoneID }) => {
      messages.push({ phoneID, from, text: message.type === "text" ? message.text.body : undefined })
    }
    const statuses: Array<number> = []
    const headers: Array<Record<string, unknown>> = []
    const receiver = await listen((req, res) => {
      headers.push({ ...req.headers })
      void api.handle_post(req).then((status) => {
        statuses.push(status)
        res.statusCode = status
        res.end()
      })
    })
    const webhook = await relayUpstream(suite, `${receiver.url}/whatsapp`, SECRET)
    try {
      await contactWrites(suite, "relayed to whatsapp-api-js, olá 👋")
      await eventually("the library read the relayed message", () => messages.some((m) => m.text === "relayed to whatsapp-api-js, olá 👋"))
      assert.deepStrictEqual(messages.find((m) => m.text === "relayed to whatsapp-api-js, olá 👋"), {
        phoneID: suite.pnid,
        from: suite.contact,
        text: "relayed to whatsapp-api-js, olá 👋"
      })
      assert.isTrue(statuses.every((s) => s === 200), `the receiver answered ${statuses.join(", ")}`)
      for (const h of headers) for (const name of TRACING_HEADERS) assert.notProperty(h, name)
    } finally {
      await removeWebhook(suite, webhook)
      await receiver.close()
    }
  })
})
