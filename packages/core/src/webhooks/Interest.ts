/**
 * Webhooks' `DomainEventInterest` (see `outbox/Interest.ts`): an entry matters
 * to them only when an active webhook listens to what it reports, which the
 * remembered active webhooks answer without a read. Declared with the webhook
 * services, so every process that appends knows it.
 */
import { Effect, Layer } from "effect"
import { MSG_CONVERSATION_ACTIVITY } from "../messaging/DomainEvents.ts"
import { DomainEventInterest, type InterestScope } from "../outbox/Interest.ts"
import { ActiveWebhooks } from "./ActiveWebhooks.ts"
import { WebhookDeliveries } from "./Deliveries.ts"
import { INACTIVITY_SUBSCRIBER, inactivityWanted } from "./Inactivity.ts"
import { WEBHOOK_SOURCE_TYPES } from "./Payloads.ts"
import { WEBHOOKS_SUBSCRIBER } from "./WebhooksJobs.ts"

export const layerWebhooksInterest = Layer.effectDiscard(Effect.gen(function*() {
  const interest = yield* DomainEventInterest
  const deliveries = yield* WebhookDeliveries
  const active = yield* ActiveWebhooks
  // An entry about a message or a conversation of a number is delivered to the number's webhooks listening to its
  // type (`planDeliveries`); others (a number's lifecycle, with its legacy twin; upstream payloads) are not scoped.
  const inScope = (type: string, scope: InterestScope) =>
    type.startsWith("msg.message.") || type.startsWith("msg.conversation.")
      ? Effect.map(active.list(scope.projectId, scope.phoneNumberId), (webhooks) => webhooks.some((w) => w.kind === "ext" && w.events.includes(type)))
      : Effect.succeed(true)
  yield* interest.declare(WEBHOOKS_SUBSCRIBER, WEBHOOK_SOURCE_TYPES, deliveries.wants, inScope)
  yield* interest.declare(INACTIVITY_SUBSCRIBER, [MSG_CONVERSATION_ACTIVITY], inactivityWanted(active))
}))
