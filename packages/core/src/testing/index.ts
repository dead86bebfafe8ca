/** Memory implementations of every port, for unit tests and demos (`@parley/core/testing`). */
export * from "./MemoryStore.ts"
export * from "./MemoryRepos.ts"
export * from "./MemoryJobQueue.ts"
export * from "./MemoryEvents.ts"
export * from "./MemoryMessaging.ts"
export * from "./MemoryFunctionRuntime.ts"
export * from "./MemoryFunctions.ts"
export * from "./MemoryWebhooks.ts"
