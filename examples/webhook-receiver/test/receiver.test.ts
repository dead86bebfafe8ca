/** The example receiver: signatures over raw bytes, deduplication by idempotency key, batches. */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { signWebhookBody } from "@parley/client"
import type { AddressInfo } from "node:net"
import { createWebhookReceiver, type ReceivedDelivery } from "../src/receiver.ts"

const secret = "whsec_example"
const deliveries: Array<ReceivedDelivery> = []
const server = createWebhookReceiver({ secret, onDelivery: (d) => void deliveries.push(d) })
let url: string

beforeAll(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => {
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
  resolve()
})))
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

const send = (raw: string, headers: Record<string, string>, signature = signWebhookBody(raw, secret)) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", "x-webhook-signature": signature, ...headers },
    body: raw
  }).then(async (r) => ({ status: r.status, body: await r.json() }))

describe("example webhook receiver", () => {
  it("accepts a signed single event once, however often it is retried", async () => {
    const raw = `{"event":"project.event","project_id":"p","data":{"id":"e1","name":"order.paid"}}`
    const headers = { "x-webhook-event": "project.event", "x-idempotency-key": "k-1" }
    assert.deepStrictEqual(await send(raw, headers), { status: 200, body: { received: 1 } })
    assert.deepStrictEqual(await send(raw, headers), { status: 200, body: { duplicate: true } })
    assert.strictEqual(deliveries.filter((d) => d.idempotencyKey === "k-1").length, 1)
    assert.deepStrictEqual(deliveries.at(-1)!.events, [{ event: "project.event", data: { id: "e1", name: "order.paid" } }])
  })

  it("refuses a body whose bytes do not match the signature", async () => {
    const raw = `{"event":"project.event","data":{}}`
    const reformatted = JSON.stringify(JSON.parse(raw), null, 1)
    const answer = await send(reformatted, { "x-webhook-event": "project.event", "x-idempotency-key": "k-2" }, signWebhookBody(raw, secret))
    assert.deepStrictEqual(answer, { status: 401, body: { error: "Invalid signature" } })
  })

  it("reads a batch as its events", async () => {
    const raw = JSON.stringify({ type: "msg.message.received", batch: true, data: [{ message: { id: "m1" } }, { message: { id: "m2" } }] })
    const answer = await send(raw, {
      "x-webhook-event": "msg.message.received",
      "x-webhook-batch": "true",
      "x-batch-size": "2",
      "x-idempotency-key": "k-3"
    })
    assert.deepStrictEqual(answer, { status: 200, body: { received: 2 } })
    const delivery = deliveries.at(-1)!
    assert.deepStrictEqual([delivery.batch, delivery.events.map((e) => e.event)], [true, ["msg.message.received", "msg.message.received"]])
  })
})
