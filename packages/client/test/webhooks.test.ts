/** Webhook signatures (HMAC-SHA256 hex of the raw body) and delivery parsing. */
import { assert, describe, it } from "@effect/vitest"
import { createHmac } from "node:crypto"
import { parseWebhookBatch, signWebhookBody, verifyWebhookSignature } from "../src/Webhooks.ts"

const secret = "whsec_test_0123456789"
const body = JSON.stringify({ event: "message.received", data: { text: "héllo" } })

describe("webhook signatures", () => {
  it("signs with the hex HMAC-SHA256 of the raw bytes and verifies the round trip", () => {
    const signature = signWebhookBody(body, secret)
    assert.strictEqual(signature, createHmac("sha256", secret).update(body, "utf8").digest("hex"))
    assert.match(signature, /^[0-9a-f]{64}$/)
    assert.isTrue(verifyWebhookSignature(body, signature, secret))
    assert.isTrue(verifyWebhookSignature(new TextEncoder().encode(body), signature, secret))
    assert.strictEqual(signWebhookBody(new TextEncoder().encode(body), secret), signature)
    assert.isTrue(verifyWebhookSignature(body, signature.toUpperCase(), secret))
  })

  it("refuses a tampered body", () => {
    const signature = signWebhookBody(body, secret)
    assert.isFalse(verifyWebhookSignature(body.replace("héllo", "hello"), signature, secret))
    // Same JSON value, different bytes: signatures cover bytes, not values.
    assert.isFalse(verifyWebhookSignature(JSON.stringify(JSON.parse(body), null, 2), signature, secret))
  })

  it("refuses a signature made with another secret", () => {
    assert.isFalse(verifyWebhookSignature(body, signWebhookBody(body, "another_secret"), secret))
  })

  it("refuses a missing or empty header", () => {
    assert.isFalse(verifyWebhookSignature(body, undefined, secret))
    assert.isFalse(verifyWebhookSignature(body, null, secret))
    assert.isFalse(verifyWebhookSignature(body, "", secret))
  })

  it("refuses headers of another length or that are not hex, without throwing", () => {
    const signature = signWebhookBody(body, secret)
    assert.isFalse(verifyWebhookSignature(body, signature.slice(0, 63), secret))
    assert.isFalse(verifyWebhookSignature(body, `${signature}00`, secret))
    assert.isFalse(verifyWebhookSignature(body, `sha256=${signature}`, secret))
    assert.isFalse(verifyWebhookSignature(body, `${signature.slice(0, 63)}z`, secret))
  })
})

describe("webhook deliveries", () => {
  it("reads a single event as a list of one", () => {
    assert.deepStrictEqual(parseWebhookBatch(body), [{ event: "message.received", data: { text: "héllo" } }])
  })

  it("reads a batch, raw or parsed", () => {
    const batch = { batch: true, events: [{ event: "a", data: 1 }, { event: "b", data: null }] }
    assert.deepStrictEqual(parseWebhookBatch(JSON.stringify(batch)), batch.events)
    assert.deepStrictEqual(parseWebhookBatch(batch), batch.events)
    assert.deepStrictEqual(parseWebhookBatch({ batch: true, events: [] }), [])
  })

  it("refuses bodies that are neither", () => {
    assert.throws(() => parseWebhookBatch({ hello: "world" }))
    assert.throws(() => parseWebhookBatch({ batch: true, events: [{ data: 1 }] }))
    assert.throws(() => parseWebhookBatch("not json"))
  })
})
