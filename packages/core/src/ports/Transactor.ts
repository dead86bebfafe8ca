/**
 * The transaction boundary of the storage ports. Everything a domain service
 * runs inside `withTransaction` commits together or not at all, whichever
 * adapter stores it.
 */
import { Context, type Effect } from "effect"

export class Transactor extends Context.Service<Transactor, {
  readonly withTransaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}>()("@parley/core/ports/Transactor") {}
