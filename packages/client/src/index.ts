/**
 * `@parley/client`: the typed Effect client of the Parley HTTP API, its
 * Promise facade, and the webhook signature verifier.
 */
export * from "./Client.ts"
export * from "./NetworkError.ts"
export * from "./Promise.ts"
export * from "./Webhooks.ts"
