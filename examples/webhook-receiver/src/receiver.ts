/**
 * A webhook receiver for Parley deliveries on plain `node:http`:
 *
 * 1. read the raw body and check `X-Webhook-Signature` against those bytes
 *    (never against re-serialized JSON) — 401 when it does not match;
 * 2. drop a delivery already handled (`X-Idempotency-Key` is the same on
 *    every retry of one delivery) — answered 200 so Parley stops retrying;
 * 3. read its events with `parseWebhookBatch`: one event, or a batch
 *    (`X-Webhook-Batch: true`, body `{ "type", "batch": true, "data": [...] }`);
 * 4. answer 2xx within 10 seconds (do slow work after answering).
 *
 * `upstream` webhooks carry the network's own payload and no
 * `X-Webhook-Event`: their events are handed over as one `upstream` event.
 */
import { parseWebhookBatch, verifyWebhookSignature, type WebhookEvent } from "@parley/client"
import { createServer, type IncomingMessage, type Server } from "node:http"

export interface ReceivedDelivery {
  readonly idempotencyKey: string
  /** The webhook's event name (`X-Webhook-Event`); `upstream` for network payloads. */
  readonly event: string
  readonly batch: boolean
  readonly test: boolean
  readonly events: ReadonlyArray<WebhookEvent>
}

export interface ReceiverOptions {
  /** The webhook's `secret_key`. */
  readonly secret: string
  readonly onDelivery: (delivery: ReceivedDelivery) => void
  /** Idempotency keys remembered for deduplication (a real receiver keeps them in its database). */
  readonly maxRemembered?: number
}

const readBody = (req: IncomingMessage, limit = 10 * 1024 * 1024) =>
  new Promise<Buffer>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    req.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) req.destroy(new Error("body too large"))
      else chunks.push(chunk)
    })
    req.on("end", () => resolve(Buffer.concat(chunks)))
    req.on("error", reject)
  })

const header = (req: IncomingMessage, name: string) => {
  const value = req.headers[name]
  return Array.isArray(value) ? value[0] : value
}

export const createWebhookReceiver = (options: ReceiverOptions): Server => {
  const seen = new Set<string>()
  const remember = (key: string) => {
    seen.add(key)
    if (seen.size > (options.maxRemembered ?? 10_000)) seen.delete(seen.values().next().value!)
  }

  return createServer(async (req, res) => {
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" })
      res.end(JSON.stringify(body))
    }
    if (req.method !== "POST") return reply(405, { error: "POST only" })
    const raw = await readBody(req).catch(() => undefined)
    if (raw === undefined) return reply(413, { error: "Body too large" })
    if (!verifyWebhookSignature(raw, header(req, "x-webhook-signature"), options.secret)) {
      return reply(401, { error: "Invalid signature" })
    }
    const idempotencyKey = header(req, "x-idempotency-key") ?? ""
    if (seen.has(idempotencyKey)) return reply(200, { duplicate: true })
    const event = header(req, "x-webhook-event")
    let events: ReadonlyArray<WebhookEvent>
    try {
      events = event === undefined
        ? [{ event: "upstream", data: JSON.parse(raw.toString("utf8")) as unknown }]
        : parseWebhookBatch(raw.toString("utf8"), event)
    } catch {
      return reply(400, { error: "Unreadable body" })
    }
    remember(idempotencyKey)
    options.onDelivery({
      idempotencyKey,
      event: event ?? "upstream",
      batch: header(req, "x-webhook-batch") === "true",
      test: header(req, "x-webhook-test") === "true",
      events
    })
    reply(200, { received: events.length })
  })
}
