/** `parseWebhookBatch` on the bodies Parley sends (decisions 6.3, 6.4). */
import { assert, describe, it } from "@effect/vitest"
import { parseWebhookBatch } from "../src/Webhooks.ts"

const message = (n: number) => ({ message: { id: `wamid.${n}` }, conversation: { id: "c" }, phone_number_id: "1" })

describe("parseWebhookBatch on Parley's deliveries", () => {
  it("reads a buffered batch: one event per item, named by type, in order", () => {
    const batch = { type: "msg.message.received", batch: true, data: [message(1), message(2)] }
    const expected = [
      { event: "msg.message.received", data: message(1) },
      { event: "msg.message.received", data: message(2) }
    ]
    assert.deepStrictEqual(parseWebhookBatch(JSON.stringify(batch)), expected)
    assert.deepStrictEqual(parseWebhookBatch(batch, "msg.message.received"), expected)
    assert.deepStrictEqual(parseWebhookBatch({ type: "msg.message.received", batch: true, data: [] }), [])
  })

  it("reads a single message event named by its X-Webhook-Event header", () => {
    assert.deepStrictEqual(parseWebhookBatch(JSON.stringify(message(1)), "msg.message.read"), [
      { event: "msg.message.read", data: message(1) }
    ])
    assert.throws(() => parseWebhookBatch(message(1)), undefined, undefined, "without the header it has no name")
  })

  it("reads a project event by its own event member", () => {
    const body = { event: "project.event", project_id: "p", data: { id: "e", name: "order.paid" } }
    assert.deepStrictEqual(parseWebhookBatch(JSON.stringify(body), "project.event"), [
      { event: "project.event", data: { id: "e", name: "order.paid" } }
    ])
  })

  it("refuses batches it cannot read", () => {
    assert.throws(() => parseWebhookBatch({ type: "msg.message.received", batch: true, data: "nope" }))
    assert.throws(() => parseWebhookBatch({ batch: true, data: [] }, "msg.message.received"))
    assert.throws(() => parseWebhookBatch([message(1)], "msg.message.received"))
  })
})
