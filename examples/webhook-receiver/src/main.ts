/**
 * Receives Parley webhook deliveries and prints their events.
 *
 *   WEBHOOK_SECRET=whsec_... PORT=8787 npm start
 *
 * Then register it (a local URL needs PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS=true
 * on the Parley host; in production use an https URL):
 *
 *   curl -X POST localhost:4000/platform/v1/msg/webhooks -H "X-API-Key: $KEY" -H 'content-type: application/json' \
 *     -d '{"msg_webhook":{"url":"http://127.0.0.1:8787/","events":["project.event"],"secret_key":"whsec_..."}}'
 */
import { createWebhookReceiver } from "./receiver.ts"

const secret = process.env.WEBHOOK_SECRET
if (secret === undefined || secret === "") {
  console.error("Set WEBHOOK_SECRET to the webhook's secret_key.")
  process.exit(1)
}
const port = Number(process.env.PORT ?? 8787)

createWebhookReceiver({
  secret,
  onDelivery: (delivery) => {
    const tag = [delivery.test ? "test" : "", delivery.batch ? `batch of ${delivery.events.length}` : ""].filter(Boolean)
    console.log(`${delivery.event} ${delivery.idempotencyKey}${tag.length > 0 ? ` (${tag.join(", ")})` : ""}`)
    for (const event of delivery.events) console.log(`  ${JSON.stringify(event.data)}`)
  }
}).listen(port, "127.0.0.1", () => console.log(`Receiving Parley webhooks on http://127.0.0.1:${port}/`))
