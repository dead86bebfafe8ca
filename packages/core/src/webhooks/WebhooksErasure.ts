/**
 * What contact erasure (decisions 4.8) removes of webhooks' records: the deliveries (with their attempts) and the
 * buffers that name the contact, by its number or by one of its identifiers in their bodies. Webhooks owns the port;
 * `Parley.ts` wires it into erasure (`ContactHoldings`). A deletion removes at most `limit` rows, answers how many and
 * is idempotent: erasure calls it until it answers less.
 */
import { Context, Effect, Layer } from "effect"
import type { WebhookAttemptRecord, WebhookBufferRecord, WebhookDeliveryRecord } from "./Webhook.ts"
import { byId, MemoryStore, memoryTable, removeSome } from "../ports/MemoryStore.ts"

export class WebhooksErasure extends Context.Service<WebhooksErasure, {
  /** Deliveries, then buffers, of the conversation with `phoneNumber` or holding one of `terms`. */
  readonly deleteDeliveries: (
    projectId: string,
    phoneNumber: string | null,
    terms: ReadonlyArray<string>,
    limit: number
  ) => Effect.Effect<number>
}>()("@parley/core/webhooks/WebhooksErasure") {}

const Deliveries = memoryTable<WebhookDeliveryRecord>("webhook_deliveries")
const Attempts = memoryTable<WebhookAttemptRecord & { readonly id: string }>("webhook_delivery_attempts")
const Buffers = memoryTable<WebhookBufferRecord>("webhook_buffers")

const mentions = (text: string, terms: ReadonlyArray<string>) => terms.some((t) => text.includes(t))

export const layerMemoryWebhooksErasure = Layer.effect(
  WebhooksErasure,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    return WebhooksErasure.of({
      deleteDeliveries: Effect.fn("WebhooksErasure.deleteDeliveries")(
        (projectId: string, phoneNumber: string | null, terms: ReadonlyArray<string>, limit: number) =>
          store.run((db) => {
            const deliveries = db.all(Deliveries).filter((d) =>
              d.project_id === projectId &&
              ((phoneNumber !== null && d.conversation_phone_number === phoneNumber) ||
                mentions(Buffer.from(d.body, "base64").toString("utf8"), terms))
            ).slice(0, limit)
            const gone = new Set(deliveries.map((d) => d.id))
            for (const a of db.all(Attempts)) if (gone.has(a.delivery_id)) db.remove(Attempts, a.id)
            const removed = removeSome(db, Deliveries, deliveries, limit, byId)
            const buffers = db.all(Buffers).filter((b) =>
              b.project_id === projectId &&
              ((phoneNumber !== null && b.conversation_phone_number === phoneNumber) || mentions(JSON.stringify(b.items), terms))
            )
            return removed + removeSome(db, Buffers, buffers, limit - removed, byId)
          })
      )
    })
  })
)
