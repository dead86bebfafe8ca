export * from "./shared/ApiError.ts"
export * from "./shared/Ids.ts"
export * from "./shared/Pagination.ts"
export * from "./shared/Slug.ts"
export * from "./shared/Time.ts"
export * from "./shared/PrivateAddress.ts"
export * from "./ports/Transactor.ts"
export * from "./ports/StorageError.ts"
export * from "./ports/ProjectsRepo.ts"
export * from "./ports/WorkflowsRepo.ts"
export * from "./ports/JobQueue.ts"
export * from "./ports/MessagingNetwork.ts"
export * from "./ports/SimulatorStore.ts"
export * as NetworkObjects from "./messaging/NetworkObjects.ts"
export * as UpstreamWebhook from "./messaging/Webhook.ts"
export * as CloudApi from "./messaging/CloudApi.ts"
export * as Simulator from "./messaging/simulator/index.ts"
export type {
  InboundInput as SimulatorInboundInput,
  InboundResult as SimulatorInboundResult,
  NetworkSimulatorOptions,
  NumberPatch as SimulatorNumberPatch,
  OutboxEntry as SimulatorOutboxEntry,
  SimBody,
  SimFile,
  SimRequest,
  SimResponse,
  SimulatedNumberInput,
  WebhookSink
} from "./messaging/simulator/Simulator.ts"
export type { SimulatedNumber } from "./messaging/simulator/Bootstrap.ts"
export * from "./ports/MessageConfigsRepo.ts"
export * from "./ports/MessagingRepo.ts"
export * from "./messaging/numbers/MessageConfig.ts"
export * from "./messaging/numbers/MessageConfigs.ts"
export * from "./messaging/numbers/LiveNumbers.ts"
export * from "./messaging/numbers/NumbersApi.ts"
export * from "./tenancy/Customer.ts"
export * from "./tenancy/Customers.ts"
export * from "./tenancy/CustomersApi.ts"
export * from "./ports/CustomersRepo.ts"
export * from "./ports/TemplatesRepo.ts"
export * from "./ports/KnowledgeSearch.ts"
export * from "./ai/tools/Passages.ts"
export * from "./messaging/templates/Template.ts"
export * from "./messaging/templates/Templates.ts"
export * from "./messaging/templates/TemplatesApi.ts"
export * from "./messaging/Message.ts"
export * as MessageContent from "./messaging/Content.ts"
export * from "./messaging/DomainEvents.ts"
export * from "./messaging/Queues.ts"
export * as Upstream from "./messaging/Upstream.ts"
export { UpstreamSettings } from "./messaging/Upstream.ts"
export * from "./messaging/Messaging.ts"
export { nextStatus } from "./messaging/Recording.ts"
export type {
  FetchedMedia,
  InboundInput,
  InboundOutcome,
  InboundRecording,
  StatusOutcome
} from "./messaging/InboundRecording.ts"
export type { OutboundInput, OutboundRecording } from "./messaging/OutboundRecording.ts"
export {
  CONVERSATION_METADATA_MAX_BYTES,
  type ConversationChange,
  type StoredConversations
} from "./messaging/StoredConversations.ts"
export * from "./messaging/Ingestion.ts"
export * from "./messaging/Sandbox.ts"
export * from "./messaging/MessagingApi.ts"
export * from "./messaging/ConversationsApi.ts"
export * from "./messaging/ProxyApi.ts"
export * from "./messaging/Outbound.ts"
export * from "./messaging/Proxy.ts"
export {
  invalidParameter,
  networkStyleError,
  outsideWindow,
  type ProxyAnswer,
  serviceRefusal,
  unknownObject
} from "./messaging/ProxyAnswers.ts"
export type { ProxyReads } from "./messaging/ProxyReads.ts"
export { MEDIA_DOWNLOAD_TTL_MS, type ProxyMedia } from "./messaging/ProxyMedia.ts"
export type { ProxyPassThrough } from "./messaging/ProxyPassThrough.ts"
export * from "./messaging/MessagingJobs.ts"
export * from "./messaging/Services.ts"
export * from "./projects/Project.ts"
export * from "./projects/Projects.ts"
export * from "./projects/ProjectSecret.ts"
export * from "./projects/ProjectSecrets.ts"
export * from "./ports/ProjectSecretsRepo.ts"
export * from "./workflows/Workflow.ts"
export * from "./workflows/Trigger.ts"
export * from "./workflows/Triggers.ts"
export * from "./workflows/Workflows.ts"
export * from "./workflows/References.ts"
export * from "./workflows/Definition.ts"
export * as NodeConfigs from "./workflows/NodeConfigs.ts"
export * from "./workflows/WorkflowsApi.ts"
export * from "./Api.ts"
export * from "./http/Middleware.ts"
export * from "./http/PublicUrl.ts"
export * as Parley from "./Parley.ts"
export * from "./ports/EventsRepo.ts"
export * from "./ports/Outbox.ts"
export * from "./events/Event.ts"
export * as EventRules from "./events/Rules.ts"
export * from "./events/Conversations.ts"
export * from "./events/EventPlans.ts"
export * from "./events/Events.ts"
export * from "./events/EventsJobs.ts"
export * from "./events/EventsApi.ts"
export * from "./functions/FunctionRuntime.ts"
export * from "./functions/FunctionKv.ts"
export * from "./functions/FunctionCode.ts"
export * from "./functions/Function.ts"
export * from "./functions/FunctionsRepo.ts"
export * from "./functions/SecretCipher.ts"
export * as FunctionRules from "./functions/Rules.ts"
export * from "./functions/Functions.ts"
export * from "./functions/FunctionsJobs.ts"
export * from "./functions/InvocationLog.ts"
export * from "./functions/Invoker.ts"
export * from "./functions/FunctionCalls.ts"
export * from "./functions/FunctionsApi.ts"
export * from "./ports/WebhooksRepo.ts"
export * from "./ports/WebhookHttp.ts"
export * from "./ports/ExecutionsRepo.ts"
export * from "./executions/Execution.ts"
export * from "./executions/Variables.ts"
export * from "./executions/Executions.ts"
export * from "./executions/ExecutionsApi.ts"
export { ExecutionEngine, ExecutionsSettings, type ExecutionsSettingsShape } from "./executions/Engine.ts"
export { Launcher } from "./executions/Launcher.ts"
// Services `Parley.layerExecutionServices` builds: named in the types of layers a host exposes.
export { ActiveTriggers } from "./executions/TriggerIndex.ts"
export { EventTriggers } from "./executions/EventTriggers.ts"
export { InboundRouting } from "./executions/Routing.ts"
export { Observers } from "./executions/Observers.ts"
export type { NodeServices } from "./executions/Nodes.ts"
export * from "./outbox/Relay.ts"
export * from "./outbox/Interest.ts"
export * from "./webhooks/Webhook.ts"
export * as WebhookRules from "./webhooks/Rules.ts"
export * as WebhookPayloads from "./webhooks/Payloads.ts"
export * from "./webhooks/Settings.ts"
export * from "./webhooks/ActiveWebhooks.ts"
export * from "./webhooks/Deliveries.ts"
export * from "./webhooks/Webhooks.ts"
export * from "./webhooks/WebhooksJobs.ts"
export * from "./webhooks/WebhooksApi.ts"
export * from "./shared/JsonText.ts"
