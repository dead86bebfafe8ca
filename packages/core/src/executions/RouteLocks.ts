/**
 * The route lock of a (number, contact) pair: who owns the pair (its routed run, its debounce batch, its queued
 * inputs) changes under it. Routing, starts, parking, queued inputs and a handoff's release take it, so two
 * transactions never settle one pair's owner at once, across processes.
 */
import { Context, Effect, Layer } from "effect"

/**
 * The pair's lock key. Stores lock it as they lock messaging's keys (`MessagingLocks`), so this key is what
 * hosts of earlier versions, which took it through `MessagingLocks`, hold too: both exclude each other while
 * a rolling upgrade runs them side by side.
 */
export const routeLock = (msgConfigId: string, contactId: string) => `contact:route:${msgConfigId}:${contactId}`

export class RouteLocks extends Context.Service<RouteLocks, {
  /**
   * Holds the pair's lock until the transaction ends (taking it again in the same transaction holds it still);
   * outside a transaction it holds nothing. Taken after any of messaging's locks the transaction takes. A store
   * may send it with the transaction's next statement, so work between the two (no storage call) is not covered.
   */
  readonly lock: (msgConfigId: string, contactId: string) => Effect.Effect<void>
}>()("@parley/core/executions/RouteLocks") {}

/** Memory transactions already run one at a time, so a lock has nothing left to hold. */
export const layerMemoryRouteLocks: Layer.Layer<RouteLocks> = Layer.succeed(RouteLocks, RouteLocks.of({ lock: () => Effect.void }))
