/** Every storage port on PostgreSQL, over a `SqlClient` (see `Database.ts` for one). */
import { Layer } from "effect"
import { layerProjectsRepo } from "./ProjectsRepo.ts"
import { layerTransactor, PgTransactions } from "./Transactor.ts"
import { layerTriggersRepo, layerWorkflowsRepo } from "./WorkflowsRepo.ts"
import { layerEventsStorage } from "./EventsRepo.ts"
import { layerFunctionsStorage } from "./FunctionsRepo.ts"
import { layerMessagingStorage } from "./MessagingRepo.ts"
import { layerWebhooksStorage } from "./WebhooksRepo.ts"
import { layerCustomersRepo } from "./CustomersRepo.ts"
import { layerExecutionsStorage } from "./ExecutionsRepo.ts"
import { layerRouteLocks } from "./RouteLocks.ts"
import { layerTemplatesRepo } from "./TemplatesRepo.ts"
import { layerProjectSecretsRepo } from "./ProjectSecretsRepo.ts"
import { layerProviderModelsRepo } from "./ProviderModelsRepo.ts"
import { layerKnowledgeSearch } from "./KnowledgeSearch.ts"
import { layerRateLimits } from "./RateLimits.ts"
import { layerDatabaseStats } from "./DatabaseStats.ts"
import { layerSetupLinksRepo } from "./SetupLinksRepo.ts"
import { layerInboxEmbedsRepo } from "./InboxEmbedsRepo.ts"
import { layerWorkflowEmbedsRepo } from "./WorkflowEmbedsRepo.ts"
import { layerContactErasureRepo } from "./ContactErasureRepo.ts"
import { layerExecutionsErasure } from "./ExecutionsErasure.ts"
import { layerEventsErasure } from "./EventsErasure.ts"
import { layerWebhooksErasure } from "./WebhooksErasure.ts"
import { layerMessagingErasure } from "./MessagingErasure.ts"
import { layerVoiceAgentsRepo } from "./VoiceAgentsRepo.ts"
import { layerLogSearch } from "./LogSearch.ts"
import { layerNumberOperationsStorage } from "./NumberOperationsRepo.ts"
import { layerBroadcastsRepo } from "./BroadcastsRepo.ts"
import { layerGuardrailsRepo } from "./GuardrailsRepo.ts"
import { layerRevisionsRepo } from "./RevisionsRepo.ts"
import { layerWorkflowStatsRepo } from "./WorkflowStatsRepo.ts"
import { layerTimePartitions } from "./TimePartitions.ts"

export const layerStorage = Layer.mergeAll(
  layerTransactor,
  layerProjectsRepo,
  layerWorkflowsRepo,
  layerTriggersRepo,
  layerEventsStorage,
  layerFunctionsStorage,
  layerMessagingStorage,
  layerWebhooksStorage,
  layerCustomersRepo,
  layerExecutionsStorage,
  layerRouteLocks,
  layerTemplatesRepo,
  layerProjectSecretsRepo,
  layerProviderModelsRepo,
  layerKnowledgeSearch,
  layerRateLimits,
  layerDatabaseStats,
  layerSetupLinksRepo,
  layerInboxEmbedsRepo,
  layerWorkflowEmbedsRepo,
  layerContactErasureRepo,
  layerExecutionsErasure,
  layerEventsErasure,
  layerWebhooksErasure,
  layerMessagingErasure,
  layerVoiceAgentsRepo,
  layerLogSearch,
  layerNumberOperationsStorage,
  layerBroadcastsRepo,
  layerGuardrailsRepo,
  layerRevisionsRepo,
  layerWorkflowStatsRepo,
  layerTimePartitions
).pipe(
  Layer.provide(PgTransactions.layer)
)
