/**
 * Every storage port in memory over one `MemoryStore`, with its `Transactor`: unit tests and demos (nothing
 * persists). Each adapter sits beside its port in its capability's folder; this root composes them, as `Parley.ts`
 * composes the services.
 */
import { Layer } from "effect"
import { layerMemoryTransactor, MemoryStore } from "./ports/MemoryStore.ts"
import { layerMemoryRateLimits } from "./ports/MemoryRateLimits.ts"
import { layerMemoryDatabaseStats } from "./ports/DatabaseStats.ts"
import { layerMemoryTimePartitions } from "./ports/TimePartitions.ts"
import { layerMemoryProjectsRepo } from "./projects/MemoryProjects.ts"
import { layerMemoryProjectSecretsRepo } from "./projects/MemoryProjectSecrets.ts"
import { layerMemoryTriggersRepo, layerMemoryWorkflowsRepo } from "./workflows/MemoryWorkflows.ts"
import { layerMemoryEventsStorage } from "./events/MemoryEvents.ts"
import { layerMemoryExecutionsStorage } from "./executions/MemoryExecutions.ts"
import { layerMemoryRouteLocks } from "./executions/RouteLocks.ts"
import { layerMemoryFunctionsStorage } from "./functions/MemoryFunctions.ts"
import { layerMemoryMessagingStorage } from "./messaging/MemoryMessaging.ts"
import { layerMemoryTemplatesRepo } from "./messaging/templates/MemoryTemplates.ts"
import { layerMemoryNumberOperations } from "./messaging/numbers/MemoryNumberOperations.ts"
import { layerMemoryWebhooksStorage } from "./webhooks/MemoryWebhooks.ts"
import { layerMemoryCustomersRepo } from "./tenancy/MemoryCustomers.ts"
import { layerMemorySetupLinksRepo } from "./tenancy/MemorySetupLinks.ts"
import { layerMemoryProviderModelsRepo } from "./ai/MemoryProviderModels.ts"
import { layerMemoryKnowledgeSearch } from "./ai/tools/MemoryKnowledgeSearch.ts"
import { layerMemoryInboxEmbedsRepo } from "./inbox/MemoryInboxEmbeds.ts"
import { layerMemoryWorkflowEmbedsRepo } from "./viewer/MemoryWorkflowEmbeds.ts"
import { layerMemoryContactErasureRepo } from "./erasure/MemoryContactErasure.ts"
import { layerMemoryExecutionsErasure } from "./executions/ExecutionsErasure.ts"
import { layerMemoryEventsErasure } from "./events/EventsErasure.ts"
import { layerMemoryWebhooksErasure } from "./webhooks/WebhooksErasure.ts"
import { layerMemoryMessagingErasure } from "./messaging/MessagingErasure.ts"
import { layerMemoryVoiceAgentsRepo } from "./voice/MemoryVoiceAgents.ts"
import { layerMemoryLogSearch } from "./logs/MemoryLogSearch.ts"
import { layerMemoryBroadcastsRepo } from "./broadcasts/MemoryBroadcasts.ts"
import { layerMemoryGuardrailsRepo } from "./guardrails/MemoryGuardrails.ts"
import { layerMemoryRevisionsRepo } from "./workflows/MemoryRevisions.ts"
import { layerMemoryWorkflowStatsRepo } from "./executions/lifecycle/MemoryWorkflowStats.ts"

/** Transactor + every storage port in memory, plus the `MemoryStore` they share. */
export const layerMemoryStorage = Layer.mergeAll(
  layerMemoryTransactor,
  layerMemoryProjectsRepo,
  layerMemoryWorkflowsRepo,
  layerMemoryTriggersRepo,
  layerMemoryEventsStorage,
  layerMemoryFunctionsStorage,
  layerMemoryMessagingStorage,
  layerMemoryWebhooksStorage,
  layerMemoryCustomersRepo,
  layerMemoryExecutionsStorage,
  layerMemoryRouteLocks,
  layerMemoryTemplatesRepo,
  layerMemoryProjectSecretsRepo,
  layerMemoryProviderModelsRepo,
  layerMemoryKnowledgeSearch,
  layerMemoryRateLimits,
  layerMemoryDatabaseStats,
  layerMemoryTimePartitions,
  layerMemorySetupLinksRepo,
  layerMemoryInboxEmbedsRepo,
  layerMemoryWorkflowEmbedsRepo,
  layerMemoryContactErasureRepo,
  layerMemoryExecutionsErasure,
  layerMemoryEventsErasure,
  layerMemoryWebhooksErasure,
  layerMemoryMessagingErasure,
  layerMemoryVoiceAgentsRepo,
  layerMemoryLogSearch,
  layerMemoryNumberOperations,
  layerMemoryBroadcastsRepo,
  layerMemoryGuardrailsRepo,
  layerMemoryRevisionsRepo,
  layerMemoryWorkflowStatsRepo
).pipe(Layer.provideMerge(MemoryStore.layer))

