/**
 * The environment the webhook suites run in: webhooks (with their interest in
 * domain events, as `Parley.layerWebhookServices` has it), events and projects
 * (and `more` services beside) over memory ports, and the relay with the
 * webhook workers as `Parley.layerWorkers` runs them, over messaging's services. Appends wake the relay
 * at once; its polling would only make long clock moves slow (one loop per
 * 250 ms of test time), so it polls hourly here.
 */
import { Effect, Layer, Option } from "effect"
import { ConversationLookup } from "../src/events/Conversations.ts"
import { EventPlans } from "../src/events/EventPlans.ts"
import { Events } from "../src/events/Events.ts"
import { DomainEventSubscribers, layerOutboxRelay, layerSignalingOutbox, OutboxRelaySettings } from "../src/outbox/Relay.ts"
import { Projects } from "../src/projects/Projects.ts"
import { Ids } from "../src/shared/Ids.ts"
import { layerMemoryJobQueue, layerMemoryStorage, layerMemoryWebhookHttp } from "../src/testing/index.ts"
import { WebhookDeliveries } from "../src/webhooks/Deliveries.ts"
import { layerWebhooksInterest } from "../src/webhooks/Interest.ts"
import { WebhookSettings } from "../src/shared/OutboundSettings.ts"
import { Webhooks } from "../src/webhooks/Webhooks.ts"
import { layerWebhooksWorkers } from "../src/webhooks/WebhooksJobs.ts"
import { layerMessagingServices } from "../src/Parley.ts"
import { SimulatedUpstream } from "../src/simulators/index.ts"
import { DefinitionReferences } from "../src/workflows/References.ts"

const Ports = Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layerSequential, layerMemoryWebhookHttp)

/** Messaging's services over the simulated network: the inactivity timers read conversations and messages there. */
const MessagingServices = layerMessagingServices.pipe(Layer.provideMerge(SimulatedUpstream.layerSimulatorConfig))

/** `lookup` names the phone numbers the suite's definitions may refer to. */
export const webhooksEnvironment = <A, E, R>(
  lookup: (projectId: string, kind: string, id: string) => Effect.Effect<Option.Option<string>>,
  more: Layer.Layer<A, E, R>
) => {
  const Services = Layer.mergeAll(Webhooks.layer, layerWebhooksInterest, Events.layer, Projects.layer, MessagingServices, more).pipe(
    Layer.provideMerge(WebhookDeliveries.layer),
    Layer.provideMerge(EventPlans.layer.pipe(Layer.provideMerge(Projects.layer))),
    Layer.provide(Layer.succeed(DefinitionReferences, DefinitionReferences.of({ lookup, providerModel: () => Effect.succeed(Option.none()) }))),
    Layer.provide(Layer.succeed(ConversationLookup, ConversationLookup.of({ exists: () => Effect.succeed(true) }))),
    Layer.provideMerge(WebhookSettings.layer({ allowPrivateUrls: false })),
    Layer.provideMerge(layerSignalingOutbox),
    Layer.provideMerge(Ports)
  )
  return layerOutboxRelay.pipe(
    Layer.provide(layerWebhooksWorkers()),
    Layer.provide(DomainEventSubscribers.layer),
    Layer.provide(
      Layer.succeed(OutboxRelaySettings, { pollIntervalMs: 3_600_000, batchSize: 100, lingerMs: 0, handlerRetryLimit: 5 })
    ),
    Layer.provideMerge(Services)
  )
}
