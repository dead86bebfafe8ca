/**
 * Where the network simulator keeps what it must not forget when the host
 * restarts: the simulated network is a party of its own, and a restart of the
 * host must change nothing a contact would notice (a window a contact opened
 * stays open, a template stays approved, a delivered message stays
 * delivered). The simulator keeps its state in memory and writes every change
 * through this port before it answers; at start it loads what was written.
 *
 * The store knows nothing of the simulator's model: it keeps objects (a kind,
 * a key within the kind, a JSON value, optionally bytes) and, per number, the
 * ordered list of the messages the network accepted (its outbox), which the
 * simulator keeps bounded by naming the deliveries it forgets.
 */
import { Context, type Effect, Schema } from "effect"

/** One object of the simulated network (a number, a contact's window, a template, a media file, ...). */
export interface SimObject {
  /** What the object is (`number`, `window`, `template`, ...): keys are unique within a kind. */
  readonly kind: string
  readonly key: string
  /** JSON. */
  readonly value: unknown
  /** Contents stored beside the JSON (a media file's bytes). */
  readonly bytes?: Uint8Array | undefined
}

export interface SimObjectRef {
  readonly kind: string
  readonly key: string
}

/** A message the network accepted for a contact. */
export interface SimDelivery {
  /** The network message id (`wamid.`). */
  readonly id: string
  readonly phoneNumberId: string
  /** JSON: the accepted message as the simulator describes it. */
  readonly record: unknown
  /** The envelope byte for byte as the network received it. */
  readonly raw: Uint8Array
}

/** Changes to apply together, all or nothing. */
export interface SimChanges {
  /** Objects written whole (inserted or replaced). */
  readonly put: ReadonlyArray<SimObject>
  readonly remove: ReadonlyArray<SimObjectRef>
  /** Deliveries appended to their numbers' outboxes, in this order (after the outboxes' earlier ones). */
  readonly delivered: ReadonlyArray<SimDelivery>
  /** Ids of deliveries forgotten (a full outbox drops its oldest). */
  readonly forgotten: ReadonlyArray<string>
}

/** Everything the store holds. */
export interface SimSnapshot {
  /** Every object, in the order each was first written. */
  readonly objects: ReadonlyArray<SimObject>
  /** Every delivery not forgotten, in the order they were appended. */
  readonly deliveries: ReadonlyArray<SimDelivery>
}

/** The store could not be read or written; the simulator answers the network's "temporarily unavailable". */
export class SimulatorStoreError extends Schema.TaggedError<SimulatorStoreError>()("SimulatorStoreError", {
  message: Schema.String
}) {}

export class SimulatorStore extends Context.Service<SimulatorStore, {
  readonly load: Effect.Effect<SimSnapshot, SimulatorStoreError>
  /** Applies `changes` atomically: once it succeeds they survive a crash of the process. */
  readonly save: (changes: SimChanges) => Effect.Effect<void, SimulatorStoreError>
}>()("@parley/core/ports/SimulatorStore") {}

export const isEmptyChanges = (changes: SimChanges): boolean =>
  changes.put.length === 0 && changes.remove.length === 0 && changes.delivered.length === 0 &&
  changes.forgotten.length === 0
