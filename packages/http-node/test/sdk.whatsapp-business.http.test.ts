/**
 * `whatsapp-business` (1.7) against `{proxy_url}` over real HTTP (issue 29 §2).
 * Its client is an axios instance (`restClient.fetch`) whose base URL is
 * `https://graph.facebook.com/v17.0`: the test points that base at the proxy
 * and gives the project's API key as its token (`Authorization: Bearer`).
 * Its media read (`getMedia`) names no number, as the network allows. Calls
 * it has no method for (templates) go through its own `restClient`. Its
 * webhook receiver (`WebhookClient`, on express) does not check signatures:
 * the test checks the relay's `X-Hub-Signature-256` in front of it with the
 * webhook's secret, as a user of the library would.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { createHmac, timingSafeEqual } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import type { Server } from "node:http"
import { createRequire } from "node:module"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { WABAClient, WebhookClient } from "whatsapp-business"
import { eventually, storedMessage } from "./messaging.support.ts"
import { contactWrites, PNG, relayUpstream, removeWebhook, type SdkSuite, sdkSuite, TRACING_HEADERS } from "./sdk.support.ts"

let suite: SdkSuite
sdkSuite("whatsapp-business", (s) => (suite = s))

const SECRET = "whatsapp-business-app-secret-0123"

/** The library's client with its base address on `{proxy_url}` (the version segment it uses kept). */
const client = () => {
  const waba = new WABAClient({ accountId: suite.waba, apiToken: suite.host.key, phoneId: suite.pnid })
  waba.restClient.fetch.defaults.baseURL = `${suite.proxyUrl}/v17.0`
  return waba
}

describe("whatsapp-business against {proxy_url}", () => {
  it("sends text, a template and interactive buttons, and marks the contact's message read", async () => {
    const waba = client()
    const text = await waba.sendMessage({ to: suite.contact, type: "text", text: { body: "Hello from whatsapp-business" } })
    const template = await waba.sendMessage({
      to: suite.contact,
      type: "template",
      template: {
        name: suite.template.name,
        language: { code: "en_US", policy: "deterministic" },
        components: [{ type: "body", parameters: [{ type: "text", text: "A-8" }] }]
      }
    })
    const buttons = await waba.sendMessage({
      to: suite.contact,
      type: "interactive",
      interactive: {
        type: "button",
        body: { text: "Ready?" },
        action: { buttons: [{ type: "reply", reply: { id: "yes", title: "Yes" } }, { type: "reply", reply: { id: "no", title: "No" } }] }
      }
    })
    const stored = await Promise.all([text, template, buttons].map((r) => storedMessage(suite.host, suite.pnid, r.messages[0]!.id)))
    assert.deepStrictEqual(stored.map((m) => [m.direction, m.type]), [["outbound", "text"], ["outbound", "template"], [
      "outbound",
      "interactive"
    ]])
    // Sent with the library's version segment, as given.
    const outbox = await Effect.runPromise(suite.host.simulator.outbox(suite.pnid))
    assert.strictEqual(outbox.find((e) => e.id === text.messages[0]!.id)?.version, "v17.0")
    assert.deepStrictEqual(await waba.markMessageAsRead(suite.inboundId), { success: true })
    assert.strictEqual((await storedMessage(suite.host, suite.pnid, suite.inboundId)).status, "read")
  })

  it("uploads media from a file and reads it back by id (no phone_number_id)", async () => {
    const waba = client()
    const dir = mkdtempSync(join(tmpdir(), "parley-sdk-"))
    try {
      const file = join(dir, "photo.png")
      writeFileSync(file, PNG)
      const uploaded = await waba.uploadMedia({ file, type: "image/png" })
      assert.match(uploaded.id, /^\d+$/)
      const info = await waba.getMedia(uploaded.id)
      assert.strictEqual(info.id, uploaded.id)
      assert.strictEqual(info.mime_type, "image/png")
      assert.strictEqual(Number(info.file_size), PNG.byteLength)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("reads the account's numbers and the number; lists templates and reads one by id", async () => {
    const waba = client()
    const numbers = await waba.getBusinessPhoneNumbers()
    assert.deepStrictEqual(numbers.data.map((n) => n.id), [suite.pnid])
    const number = await waba.getSingleBusinessPhoneNumber(suite.pnid)
    assert.strictEqual(number.id, suite.pnid)
    assert.strictEqual(typeof number.display_phone_number, "string")
    assert.strictEqual(typeof number.verified_name, "string")
    const templates = await waba.restClient.get(`${suite.waba}/message_templates`, { name: suite.template.name })
    assert.deepStrictEqual(templates.data.map((t: { id: string }) => t.id), [suite.template.id])
    const template = await waba.restClient.get(suite.template.id)
    assert.strictEqual(template.name, suite.template.name)
    assert.strictEqual(template.status, "APPROVED")
  })

  it("its webhook receiver reads an upstream relay of a Parley number webhook, signed as the network signs", async () => {
    // The library's own express (it sets up JSON parsing only on an app it creates and listens on a fixed port).
    const express = createRequire(createRequire(import.meta.url).resolve("whatsapp-business"))("express")
    const app = express()
    const verified: Array<boolean> = []
    const headers: Array<Record<string, unknown>> = []
    app.use(express.json({
      verify: (req: { headers: Record<string, unknown> }, _res: unknown, raw: Buffer) => {
        headers.push({ ...req.headers })
        const expected = Buffer.from(`sha256=${createHmac("sha256", SECRET).update(raw).digest("hex")}`)
        const given = Buffer.from(String(req.headers["x-hub-signature-256"] ?? ""))
        verified.push(given.length === expected.length && timingSafeEqual(given, expected))
      }
    }))
    const texts: Array<{ readonly from: string; readonly body: string; readonly phoneNumberId: string | undefined }> = []
    new WebhookClient({ token: "verify-token", path: "/whatsapp", expressApp: { app, shouldStartListening: false } }).initWebhook({
      onTextMessageReceived: (message, _contact, metadata) => {
        texts.push({ from: message.from, body: message.text?.body ?? "", phoneNumberId: metadata?.phone_number_id })
      }
    })
    const server: Server = await new Promise((resolve) => {
      const s: Server = app.listen(0, "127.0.0.1", () => resolve(s))
    })
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/whatsapp`
    const webhook = await relayUpstream(suite, url, SECRET)
    try {
      await contactWrites(suite, "relayed to whatsapp-business")
      await eventually("the library read the relayed message", () => texts.some((t) => t.body === "relayed to whatsapp-business"))
      assert.deepStrictEqual(texts.find((t) => t.body === "relayed to whatsapp-business"), {
        from: suite.contact,
        body: "relayed to whatsapp-business",
        phoneNumberId: suite.pnid
      })
      assert.isTrue(verified.length > 0 && verified.every(Boolean), "X-Hub-Signature-256 verifies with the webhook's secret")
      for (const h of headers) for (const name of TRACING_HEADERS) assert.notProperty(h, name)
    } finally {
      await removeWebhook(suite, webhook)
      await new Promise<void>((done) => server.close(() => done()))
    }
  })
})
