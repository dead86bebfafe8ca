/**
 * The test kit (`@parley/core/testing`): Parley whole on memory ports (`layerMemoryParley`, simulated contacts) and the
 * model simulator as a language model; with the memory adapters of every port (they live beside their ports and are
 * exported from `@parley/core` too) and, in `@parley/core/testing/conformance`, one conformance suite per port.
 */
import { requireSupportedNode } from "../NodeVersion.ts"
// A consumer's unit test may import only this entry: the same one line as `@parley/core` on an unsupported Node.
requireSupportedNode()

export * from "../ports/MemoryStore.ts"
export * from "../MemoryStorage.ts"
export * from "../projects/MemoryProjects.ts"
export * from "../workflows/MemoryWorkflows.ts"
export * from "../ports/MemoryJobQueue.ts"
export * from "../events/MemoryEvents.ts"
export * from "../messaging/MemoryMessaging.ts"
export * from "../ports/MemorySimulatorStore.ts"
export * from "../functions/MemoryFunctionRuntime.ts"
export * from "../functions/MemoryFunctions.ts"
export * from "../webhooks/MemoryWebhooks.ts"
export * from "../executions/MemoryExecutions.ts"
export * from "../messaging/templates/MemoryTemplates.ts"
export * from "../projects/MemoryProjectSecrets.ts"
export * from "../ai/MemoryProviderModels.ts"
export * from "../ports/MemoryRateLimits.ts"
export * from "../logs/MemoryLogSearch.ts"
export * from "./MemoryLanguageModels.ts"
export * from "../ai/tools/MemoryKnowledgeSearch.ts"
export * from "./MemoryParley.ts"
export * from "../tenancy/MemorySetupLinks.ts"
export * from "../inbox/MemoryInboxEmbeds.ts"
export * from "../viewer/MemoryWorkflowEmbeds.ts"
export * from "../erasure/MemoryContactErasure.ts"
export * from "../voice/MemoryVoiceAgents.ts"
export * from "../messaging/numbers/MemoryNumberOperations.ts"
export * from "../broadcasts/MemoryBroadcasts.ts"
export * from "./SentMessages.ts"
export * from "./WorkflowKit.ts"
export * from "./FlowScripts.ts"
export * from "./Recording.ts"
// The simulator the kit runs, by name (the declaration bundler refers to it from the kit's types).
export { NetworkSimulator } from "../simulators/network/Simulator.ts"
