/**
 * One conformance suite per port (`@parley/core/testing/conformance`): each
 * adapter, memory or Postgres, runs the same assertions. Needs `@effect/vitest`.
 */
export * from "./StorageConformance.ts"
export * from "./JobQueueConformance.ts"
export * from "./EventsStorageConformance.ts"
export * from "./FunctionRuntimeConformance.ts"
export * from "./FunctionsStorageConformance.ts"
export * from "./MessagingNetworkConformance.ts"
export * from "./MessagingStorageConformance.ts"
export * from "./WebhooksStorageConformance.ts"
export * from "./SimulatorStoreConformance.ts"
export * from "./ExecutionsStorageConformance.ts"
export * from "./EngineConformance.ts"
export * from "./TemplatesRepoConformance.ts"
export * from "./ProjectSecretsRepoConformance.ts"
export * from "./ProviderModelsRepoConformance.ts"
export * from "./KnowledgeSearchConformance.ts"
export * from "./SecretsAtRestConformance.ts"
export * from "./RateLimitsConformance.ts"
export * from "./SetupLinksRepoConformance.ts"
export * from "./BroadcastsRepoConformance.ts"
