/**
 * The README's webhook section is true (issue 29 §3): the headers its snippet reads are the ones a delivery carries
 * (built by the host's own `deliveryHeaders`), and the snippet's two calls accept a real delivery of each shape it
 * describes: a message event (its name only in the header), a project event, a batch.
 */
import { WebhookPayloads } from "@parley/core"
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import { parseWebhookBatch, verifyWebhookSignature } from "../src/index.ts"

const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8")
const section = readme.slice(readme.indexOf("## Webhooks"))
const snippet = section.slice(section.indexOf("```ts"), section.indexOf("```", section.indexOf("```ts") + 5))
const headersRead = [...snippet.matchAll(/headers\["([^"]+)"\]/g)].map((m) => m[1]!)

const SECRET = "whsec-readme-0123456789"

/** A delivery as the host sends it: its body bytes and its headers, lowercased as a Node server sees them. */
const delivery = (event: string, body: unknown, options: { readonly payloadVersion: "v1" | "v2" | null; readonly batch?: number }) => {
  const bytes = new TextEncoder().encode(JSON.stringify(body))
  const headers = WebhookPayloads.deliveryHeaders(
    { kind: "ext", headers: { "X-Tenant": "acme" }, secret_key: SECRET },
    { event, idempotency_key: "idem-1", payload_version: options.payloadVersion, batch_size: options.batch ?? null, test: false },
    bytes
  )
  return { raw: new TextDecoder().decode(bytes), headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v])) }
}

/** The README's snippet, run: verify with the header it names, parse with the other. */
const receive = (d: { readonly raw: string; readonly headers: Record<string, string> }) => {
  const [signature, eventHeader] = headersRead
  if (!verifyWebhookSignature(d.raw, d.headers[signature!], SECRET)) return "401"
  return parseWebhookBatch(d.raw, d.headers[eventHeader!])
}

describe("the client README's webhook section", () => {
  it("reads the signature and event headers a delivery carries", () => {
    expect(headersRead).toEqual(["x-webhook-signature", "x-webhook-event"])
    const sent = delivery("msg.message.received", { id: "wamid.1" }, { payloadVersion: "v2" })
    for (const name of headersRead) expect(Object.keys(sent.headers)).toContain(name)
    // The other headers the section names are sent too.
    for (const name of ["X-Idempotency-Key", "X-Webhook-Payload-Version"]) {
      expect(section).toContain(name)
      expect(Object.keys(sent.headers)).toContain(name.toLowerCase())
    }
  })

  it("accepts a message event, a project event and a batch, and refuses a body that was changed", () => {
    const message = { id: "wamid.1", from: "15551234567", text: { body: "hi" } }
    expect(receive(delivery("msg.message.received", message, { payloadVersion: "v2" })))
      .toEqual([{ event: "msg.message.received", data: message }])
    const project = { event: "workflow.execution.failed", data: { execution_id: "e1" } }
    expect(receive(delivery("workflow.execution.failed", project, { payloadVersion: null })))
      .toEqual([{ event: "workflow.execution.failed", data: { execution_id: "e1" } }])
    const batch = { type: "msg.message.received", batch: true, data: [message, { ...message, id: "wamid.2" }] }
    const batched = delivery("msg.message.received", batch, { payloadVersion: "v2", batch: 2 })
    expect(batched.headers["x-webhook-batch"]).toBe("true")
    expect(receive(batched)).toEqual([
      { event: "msg.message.received", data: message },
      { event: "msg.message.received", data: { ...message, id: "wamid.2" } }
    ])
    const tampered = delivery("msg.message.received", message, { payloadVersion: "v2" })
    expect(receive({ ...tampered, raw: tampered.raw.replace("hi", "ho") })).toBe("401")
  })

  it("says nothing provisional or illustrative about the shapes", () => {
    expect(section).not.toMatch(/provisional|illustrative|x-parley-signature/i)
  })
})
