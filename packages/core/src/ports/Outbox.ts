/**
 * The transactional outbox: domain events a capability writes in the same
 * transaction as the change they describe (a project event recorded, later a
 * message received, ...), for consumers that act on them after the commit
 * (the execution engine's triggers, webhook deliveries). A change that rolls
 * back leaves no domain event behind; a committed one always has its entry.
 *
 * Consumers `take` entries inside their own transaction: entries taken are
 * gone for everyone else, and come back if the consumer's transaction fails.
 */
import { Context, type Effect, Schema } from "effect"

export interface DomainEvent {
  readonly id: string
  /** The project the change belongs to; null for changes of the whole host. */
  readonly project_id: string | null
  /** Dotted name of what happened, e.g. `project_event.recorded`. */
  readonly type: string
  /** JSON. */
  readonly payload: unknown
  readonly created_at: string
}

/** A domain event as it travels in a job (the relay's subscriber queues). */
export const DomainEvent: Schema.Codec<DomainEvent> = Schema.Struct({
  id: Schema.String,
  project_id: Schema.NullOr(Schema.String),
  type: Schema.String,
  payload: Schema.Unknown,
  created_at: Schema.String
})

export class Outbox extends Context.Service<Outbox, {
  readonly append: (event: DomainEvent) => Effect.Effect<void>
  /** Appends the entries in one step. */
  readonly appendMany: (events: ReadonlyArray<DomainEvent>) => Effect.Effect<void>
  /**
   * Removes and answers up to `limit` of the oldest entries of the given
   * types, oldest first (created_at, id). Concurrent takers never receive the
   * same entry (others' claimed entries are skipped, not waited for).
   */
  readonly take: (types: ReadonlyArray<string>, limit: number) => Effect.Effect<ReadonlyArray<DomainEvent>>
  /** Drops entries created strictly before `before` that nobody took; answers how many. */
  readonly prune: (before: string) => Effect.Effect<number>
  /**
   * Drops up to `limit` of the project's entries whose payload holds one of `terms` (contact erasure's step over
   * domain events); answers how many.
   */
  readonly eraseMentions: (projectId: string, terms: ReadonlyArray<string>, limit: number) => Effect.Effect<number>
}>()("@parley/core/ports/Outbox") {}
