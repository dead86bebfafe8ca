/**
 * The domain of Parley as one layer: every capability's service, built over
 * the ports. A host provides the ports (Postgres, or memory in tests) and
 * the network (the Cloud API or the simulator: `@parley/core/simulators`)
 * and gets the services.
 */
import { ApiRateLimits } from "./projects/ApiRateLimits.ts"
import { Effect, Layer, Option } from "effect"
import { Projects } from "./projects/Projects.ts"
import { ProjectSecrets } from "./projects/ProjectSecrets.ts"
import { ProviderModels } from "./ai/ProviderModels.ts"
import { McpServers } from "./ai/tools/McpServers.ts"
import { DefinitionReferences } from "./workflows/References.ts"
import { ProviderModelsRepo } from "./ai/ProviderModelsRepo.ts"
import { EventDefinitionsRepo } from "./events/EventsRepo.ts"
import { FunctionsRepo } from "./functions/FunctionsRepo.ts"
import { TemplatesRepo } from "./messaging/templates/TemplatesRepo.ts"
import { Triggers } from "./workflows/Triggers.ts"
import { Workflows } from "./workflows/Workflows.ts"
import { StoredWorkflows } from "./workflows/StoredWorkflows.ts"
import { StoredExecutions } from "./executions/StoredExecutions.ts"
import { StoredRevisions } from "./workflows/StoredRevisions.ts"
import { layerFunctionReferrers } from "./workflows/FunctionReferrers.ts"
import { layerConversationLookup } from "./messaging/ConversationLookup.ts"
import { EventPlans } from "./events/EventPlans.ts"
import { Events } from "./events/Events.ts"
import { layerEventsWorkers } from "./events/EventsJobs.ts"
import { layerMessagingWorkers } from "./messaging/MessagingJobs.ts"
import { layerMessagingServices as messagingServices } from "./messaging/Services.ts"
import { removeNumberTriggers } from "./workflows/NumberTriggers.ts"
import { TriggersRepo, WorkflowsRepo } from "./workflows/WorkflowsRepo.ts"
import { NumberDependents } from "./messaging/numbers/NumberDependents.ts"
import { WebhooksRepo } from "./webhooks/WebhooksRepo.ts"
import { FunctionCalls } from "./functions/FunctionCalls.ts"
import { Functions } from "./functions/Functions.ts"
import { layerFunctionsWorkers } from "./functions/FunctionsJobs.ts"
import { FunctionInvocationLog } from "./functions/InvocationLog.ts"
import { FunctionInvoker } from "./functions/Invoker.ts"
import { InvocationTargets } from "./functions/InvocationTargets.ts"
import { layerHostCipher } from "./functions/FunctionsRepo.ts"
import { layerSealedRepos } from "./secrets/SecretsAtRest.ts"
import { DomainEventSubscribers, layerOutboxRelay, layerSignalingOutbox } from "./outbox/Relay.ts"
import { WebhookDeliveries } from "./webhooks/Deliveries.ts"
import { layerWebhooksInterest } from "./webhooks/Interest.ts"
import { WebhookSettings } from "./shared/OutboundSettings.ts"
import { Webhooks } from "./webhooks/Webhooks.ts"
import { layerWebhooksWorkers } from "./webhooks/WebhooksJobs.ts"
import { ExecutionEngine } from "./executions/Engine.ts"
import { Executions } from "./executions/Executions.ts"
import { layerExecutionsWorkers } from "./executions/ExecutionsJobs.ts"
import { Launcher } from "./executions/Launcher.ts"
import { WorkflowRevisions } from "./executions/lifecycle/Revisions.ts"
import { ActiveRollouts, Rollouts } from "./executions/lifecycle/Rollouts.ts"
import { ActiveGuardrails } from "./guardrails/ActiveGuardrails.ts"
import { RunMigrations } from "./executions/lifecycle/RunMigration.ts"
import { Experiments } from "./executions/lifecycle/Experiments.ts"
import { EventTriggers } from "./executions/EventTriggers.ts"
import { Observers } from "./executions/Observers.ts"
import { InboundRouting } from "./executions/Routing.ts"
import { layerRoutingWorkers } from "./executions/RoutingJobs.ts"
import { InboundRouter } from "./messaging/InboundRouter.ts"
import { RoutedMessages } from "./executions/RoutedMessages.ts"
import { ContactsRepo, MessagesRepo } from "./messaging/MessagingRepo.ts"
import { LiveNumbers } from "./messaging/numbers/LiveNumbers.ts"
import { MessageConfigsRepo } from "./messaging/numbers/MessageConfigsRepo.ts"
import { ActiveTriggers, layerExecutionsInterest } from "./executions/TriggerIndex.ts"
import { ConversationClosing } from "./executions/ConversationClosing.ts"
import { InboxEmbeds } from "./inbox/InboxEmbeds.ts"
import { WorkflowEmbeds } from "./viewer/WorkflowEmbeds.ts"
import { ContactErasures } from "./erasure/ContactErasures.ts"
import { ContactHoldings } from "./erasure/ContactHoldings.ts"
import { erasureTerms } from "./erasure/ContactErasureRepo.ts"
import { Outbox } from "./ports/Outbox.ts"
import { ExecutionsErasure } from "./executions/ExecutionsErasure.ts"
import { EventsErasure } from "./events/EventsErasure.ts"
import { WebhooksErasure } from "./webhooks/WebhooksErasure.ts"
import { MessagingErasure } from "./messaging/MessagingErasure.ts"
import { BroadcastsRepo } from "./broadcasts/BroadcastsRepo.ts"
import { GuardrailsRepo } from "./guardrails/GuardrailsRepo.ts"
import { layerContactErasureWorkers } from "./erasure/ContactErasureJobs.ts"
import { VoiceAgents } from "./voice/VoiceAgent.ts"
import { LogRecorder, LogSettings } from "./logs/LogRecorder.ts"
import { ApiLogs } from "./logs/ApiLogs.ts"
import { Logs } from "./logs/Logs.ts"
import { layerRecordedSteps } from "./executions/StepLogEntries.ts"
import { layerRecordedDeliveries } from "./webhooks/DeliveryLogEntries.ts"
import { layerLogsWorkers } from "./logs/LogsJobs.ts"
import { Broadcasts } from "./broadcasts/Broadcasts.ts"
import { BroadcastSender, layerBroadcastsWorkers } from "./broadcasts/Sender.ts"
import { Guardrails } from "./guardrails/Guardrails.ts"
import { layerGuardrailsInterest, layerGuardrailsWorkers } from "./guardrails/GuardrailsJobs.ts"
import { layerStoppedMarketingInterest, layerStoppedMarketingWorkers } from "./messaging/StoppedMarketing.ts"
import { OptOuts } from "./guardrails/OptOuts.ts"
import { SendPolicy } from "./guardrails/SendPolicy.ts"
import { layerOptOutNotices, layerSendFacts } from "./messaging/GuardrailPorts.ts"

/** Workflows' `DefinitionReferences`, answered from the stores of the capabilities that own each kind. */
export const layerDefinitionReferences = Layer.effect(
  DefinitionReferences,
  Effect.gen(function*() {
    const workflows = yield* WorkflowsRepo
    const eventDefinitions = yield* EventDefinitionsRepo
    const numbers = yield* MessageConfigsRepo
    const functions = yield* FunctionsRepo
    const templates = yield* TemplatesRepo
    const models = yield* ProviderModelsRepo
    // `provider_model_name` is checked as a reference too: an id first, else a name.
    const providerModel = (idOrName: string) =>
      Effect.flatMap(models.findById(idOrName), (byId) => Option.isSome(byId) ? Effect.succeed(byId) : models.findByName(idOrName))
    return DefinitionReferences.of({
      providerModel,
      lookup: (projectId, kind, id) =>
        kind === "workflow"
          ? Effect.map(workflows.findById(projectId, id), Option.map((w) => w.name))
          : kind === "function"
          ? Effect.map(functions.findById(projectId, id), Option.map((f) => f.name))
          : kind === "event_definition"
          // A definition pending deletion is already gone for its project.
          ? Effect.map(eventDefinitions.findById(projectId, id), Option.flatMap((d) =>
            d.deletion_requested_at === null ? Option.some(d.name) : Option.none()))
          : kind === "phone_number"
          // A number of the project (network id), by the name contacts see.
          ? Effect.map(numbers.findByPhoneNumberId(id), Option.flatMap((c) =>
            c.project_id === projectId ? Option.some(c.display_name) : Option.none()))
          : kind === "msg_config"
          ? Effect.map(numbers.findById(projectId, id), Option.map((c) => c.name))
          : kind === "template"
          // The service's mirror (decisions 4.8.1); approval is checked at run time.
          ? Effect.map(templates.findById(projectId, id), Option.map((t) => t.name))
          : kind === "provider_model"
          ? Effect.map(providerModel(id), Option.map((m) => m.name))
          : Effect.succeed(Option.none())
    })
  })
)

const References = layerDefinitionReferences

/**
 * Erasure's `ContactHoldings`, answered from the stores of messaging (contacts), broadcasts and guardrails, and each
 * step's deletion from the erasure port of the capability whose records it removes.
 */
export const layerContactHoldings = Layer.effect(
  ContactHoldings,
  Effect.gen(function*() {
    const contacts = yield* ContactsRepo
    const broadcasts = yield* BroadcastsRepo
    const guardrails = yield* GuardrailsRepo
    const executions = yield* ExecutionsErasure
    const events = yield* EventsErasure
    const webhooks = yield* WebhooksErasure
    const outbox = yield* Outbox
    const messaging = yield* MessagingErasure
    return ContactHoldings.of({
      contactById: contacts.findById,
      contactByUserId: contacts.findByUserId,
      contactByWaId: contacts.findByWaId,
      anonymiseBroadcastRecipients: broadcasts.anonymiseRecipients,
      eraseGuardrails: guardrails.eraseRecipient,
      deleteStepEvents: (s, limit) => executions.deleteStepEvents(s.project_id, s.contact_id, limit),
      deleteExecutions: (s, limit) => executions.deleteRuns(s.project_id, s.contact_id, limit),
      deleteProjectEvents: (s, limit) => events.deleteConversationEvents(s.project_id, s.contact_id, limit),
      deleteDeliveries: (s, limit) => webhooks.deleteDeliveries(s.project_id, s.target.wa_id, erasureTerms(s), limit),
      deleteDomainEvents: (s, limit) => outbox.eraseMentions(s.project_id, erasureTerms(s), limit),
      deleteUpstreamPayloads: (s, limit) => messaging.deleteUpstreamPayloads(s.project_id, s.contact_id, erasureTerms(s), limit),
      deleteMedia: (s, limit) => messaging.deleteMedia(s.project_id, s.contact_id, limit),
      deleteMessages: (s, limit) => messaging.deleteMessages(s.project_id, s.contact_id, limit),
      deleteConversations: (s, limit) => messaging.deleteConversations(s.project_id, s.contact_id, limit),
      deleteContact: (s) => messaging.deleteContact(s.project_id, s.contact_id)
    })
  })
)

/** What goes with a disconnected number: its webhooks (webhooks) and its triggers (workflows). */
const layerNumberDependents = Layer.effect(
  NumberDependents,
  Effect.gen(function*() {
    const triggers = yield* TriggersRepo
    const webhooks = yield* WebhooksRepo
    return NumberDependents.of({
      removeFor: (projectId, phoneNumberId) =>
        Effect.andThen(webhooks.deleteByPhoneNumber(projectId, phoneNumberId), removeNumberTriggers(triggers, projectId, phoneNumberId))
    })
  })
)

/**
 * Messaging's services (`messaging/Services.ts`) with what goes with a disconnected number answered by workflows and
 * webhooks. Over the network of the host's choice (`MessagingNetwork`, `UpstreamSettings`: `@parley/core/simulators`).
 */
export const layerMessagingServices = messagingServices.pipe(
  Layer.provide(layerNumberDependents),
  // Every send passes the guardrails' check, every inbound message their keywords; messaging answers their facts.
  Layer.provideMerge(
    Layer.mergeAll(SendPolicy.layer, Guardrails.layer).pipe(
      Layer.provideMerge(OptOuts.layer),
      Layer.provideMerge(ActiveGuardrails.layer),
      Layer.provide(layerSendFacts)
    )
  )
)

export const layerServices = Layer.mergeAll(
  Projects.layer,
  ApiRateLimits.layer,
  ProviderModels.layer,
  Workflows.layer.pipe(Layer.provide(Triggers.layer), Layer.provideMerge(References)),
  Triggers.layer.pipe(Layer.provide(References)),
  // What executions read of the stored workflows, triggers and revisions (never workflows' repositories).
  StoredWorkflows.layer,
  StoredRevisions.layer,
  // What the inbox and the run viewer read of the stored runs (never executions' repositories).
  StoredExecutions.layer,
  Events.layer.pipe(Layer.provide(layerConversationLookup), Layer.provideMerge(EventPlans.layer), Layer.provide(Projects.layer)),
  layerMessagingServices,
  Functions.layer.pipe(
    // A function a workflow calls is not deleted: workflows answer which do.
    Layer.provide(layerFunctionReferrers),
    Layer.provideMerge(ProjectSecrets.layer),
    Layer.provideMerge(FunctionInvocationLog.layer),
    // One cache of invocation targets per host: the invoker reads it, the functions service and its jobs drop it.
    Layer.provideMerge(InvocationTargets.layer.pipe(Layer.provide(Projects.layer)))
  ),
  // Inbox scopes name a customer or a number: their names come from messaging's services.
  InboxEmbeds.layer.pipe(Layer.provide(layerMessagingServices), Layer.provide(Projects.layer)),
  WorkflowEmbeds.layer.pipe(Layer.provide(StoredWorkflows.layer), Layer.provide(Projects.layer)),
  ContactErasures.layer.pipe(Layer.provide(layerContactHoldings)),
  VoiceAgents.layer.pipe(Layer.provide(Projects.layer)),
  // Confirmations of opt-outs are sent by a subscriber every appending process must know of.
  layerGuardrailsInterest,
  // So are late refusals 131050, which record opt-outs.
  layerStoppedMarketingInterest,
  // Broadcasts send through messaging's one path (`Outbound`).
  Layer.mergeAll(Broadcasts.layer, BroadcastSender.layer).pipe(Layer.provide(layerMessagingServices))
).pipe(
  // Every append to the outbox wakes this process's relay (see `outbox/Relay.ts`).
  Layer.provideMerge(layerSignalingOutbox),
  // Between every service and the storage adapters: credentials are stored encrypted (`secrets/SecretsAtRest.ts`).
  Layer.provideMerge(layerSealedRepos),
  // The one key of every secret at rest: function and project secrets, credentials.
  Layer.provideMerge(layerHostCipher),
  // Log search: step events and delivery attempts are recorded where they are stored (under the sealed repos).
  Layer.merge(Layer.merge(Logs.layer, ApiLogs.layer)),
  Layer.provideMerge(Layer.mergeAll(layerRecordedSteps, layerRecordedDeliveries)),
  Layer.provideMerge(LogRecorder.layer),
  Layer.provideMerge(LogSettings.layerConfig)
)

/**
 * The services that run function code (`FunctionInvoker`, `FunctionCalls`),
 * over `layerServices` and a `FunctionRuntime` (workerd in the host, the
 * memory runtime in tests), which tools that never run code do without.
 */
export const layerFunctionServices = FunctionCalls.layer.pipe(Layer.provideMerge(FunctionInvoker.layer))

/** What routing needs of messaging's stored messages, contacts and numbers (executions' port, messaging's storage). */
const layerRoutedMessages = Layer.effect(
  RoutedMessages,
  Effect.gen(function*() {
    const messages = yield* MessagesRepo
    const contacts = yield* ContactsRepo
    const configs = yield* MessageConfigsRepo
    const liveNumbers = yield* LiveNumbers
    return RoutedMessages.of({
      findInbound: (projectId, phoneNumberId, networkId) =>
        Effect.map(messages.findByNetworkId(phoneNumberId, networkId), Option.filter((m) => m.project_id === projectId && m.direction === "inbound")),
      settle: messages.settleProcessing,
      contact: contacts.findById,
      number: Effect.fnUntraced(function*(projectId, msgConfigId, phoneNumberId) {
        // As remembered (ingestion read it moments ago); the store when that is another config, or none is known.
        const live = phoneNumberId === undefined
          ? Option.none()
          : Option.filter(yield* liveNumbers.byPhoneNumberId(phoneNumberId), (c) => c.id === msgConfigId && c.project_id === projectId)
        if (Option.isSome(live)) return live
        return Option.filter(yield* configs.findById(projectId, msgConfigId), (c) => c.deleted_at === null)
      })
    })
  })
)

/** Messaging routes what it records through executions' routing, in the recording's transaction. */
const layerInboundRouter = Layer.effectDiscard(Effect.gen(function*() {
  const routing = yield* InboundRouting
  yield* (yield* InboundRouter).register({ look: routing.lookAhead, route: routing.routeRecorded })
}))

/**
 * Workflow executions (`Executions`, the `Launcher` that starts them, the
 * `ExecutionEngine` that runs them, and what starts and feeds them: inbound
 * routing, observers, event triggers, with their interest in domain events),
 * over `layerServices`, `layerFunctionServices` (function and decide nodes
 * call functions), and a `WebhookHttp` with the `WebhookSettings` (webhook
 * nodes).
 */
export const layerExecutionServices = Layer.mergeAll(
  Executions.layer,
  layerInboundRouter.pipe(Layer.provideMerge(InboundRouting.layer), Layer.provideMerge(Observers.layer), Layer.provide(layerRoutedMessages)),
  EventTriggers.layer,
  ConversationClosing.layer,
  layerExecutionsInterest,
  // A workflow's revisions, rollout, run migrations and experiments (issue 32 §3, §4).
  WorkflowRevisions.layer,
  Rollouts.layer,
  RunMigrations.layer,
  Experiments.layer
).pipe(
  Layer.provideMerge(ActiveTriggers.layer),
  Layer.provideMerge(Launcher.layer),
  Layer.provideMerge(ActiveRollouts.layer),
  Layer.provideMerge(ExecutionEngine.layer),
  Layer.provideMerge(McpServers.layerFetch)
)

/**
 * Webhook registrations and deliveries (`Webhooks`, `WebhookDeliveries`) and
 * their interest in domain events (entries no webhook listens to are not
 * written), over `layerServices` and a `WebhookHttp` (Node's in the host, a scripted
 * receiver in tests), with their settings from the environment
 * (`PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS`).
 */
export const layerWebhookServices = Layer.mergeAll(Webhooks.layer, layerWebhooksInterest).pipe(
  Layer.provideMerge(WebhookDeliveries.layer),
  Layer.provideMerge(WebhookSettings.layerConfig)
)

/**
 * The background workers of every capability (job queue consumers, daily
 * maintenance), for as long as the layer lives. A host runs them next to
 * `layerServices` and `layerExecutionServices`; short-lived tools (the CLI) do not.
 */
export const layerWorkers = Layer.mergeAll(
  layerEventsWorkers.pipe(Layer.provide(EventPlans.layer)),
  layerMessagingWorkers,
  layerFunctionsWorkers,
  layerExecutionsWorkers,
  layerContactErasureWorkers,
  layerLogsWorkers,
  layerBroadcastsWorkers,
  layerGuardrailsWorkers.pipe(Layer.provide(layerOptOutNotices)),
  layerStoppedMarketingWorkers,
  // The consumers of domain events subscribe first; then the relay starts taking the outbox for them.
  layerOutboxRelay.pipe(Layer.provide(Layer.mergeAll(layerWebhooksWorkers(), layerRoutingWorkers)))
).pipe(Layer.provide(DomainEventSubscribers.layer))
