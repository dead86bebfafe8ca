/**
 * Storage of guardrails (issue 32 §1, §2), scoped by project: opt-outs, the settings of the project and of each
 * number, contacts' own time zones, and the marketing templates let through (what frequency caps count).
 */
import { Context, type Effect, type Option, type Stream } from "effect"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import type { ContactZoneRecord, GuardrailSettingsRecord, MarketingSendRecord, OptOutRecord } from "./Guardrail.ts"

export interface OptOutFilter {
  /** Opt-outs of this number (not the project-wide ones). */
  readonly msg_config_id?: string | undefined
  readonly recipient?: string | undefined
}

/** What a send's check needs of its recipient, read at once (the settings are remembered: `ActiveGuardrails`). */
export interface RecipientFacts {
  /** The recipient's opt-out of this number, else its project-wide one. */
  readonly optOut: Option.Option<OptOutRecord>
  /** The recipient's own time zone, when set. */
  readonly zone: Option.Option<string>
}

export class GuardrailsRepo extends Context.Service<GuardrailsRepo, {
  /**
   * The facts of those `recipients` that have any (an opt-out of the number or the project, a time zone), in one read:
   * one send's recipient, or a broadcast's batch. A recipient absent from the answer has neither.
   */
  readonly recipientsFacts: (
    projectId: string,
    msgConfigId: string,
    recipients: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyMap<string, RecipientFacts>>

  /** Inserts the opt-out unless the recipient has one of the same scope (number, or the project's): None then. */
  readonly insertOptOut: (optOut: OptOutRecord) => Effect.Effect<Option.Option<OptOutRecord>>
  readonly findOptOut: (projectId: string, id: string) => Effect.Effect<Option.Option<OptOutRecord>>
  /** Newest first by (created_at, id). */
  readonly listOptOuts: (projectId: string, filter: OptOutFilter, window: ListWindow) => Effect.Effect<ListSlice<OptOutRecord>>
  /** Removes one opt-out; the removed record, or None. */
  readonly deleteOptOut: (projectId: string, id: string) => Effect.Effect<Option.Option<OptOutRecord>>
  /** Removes the recipient's opt-out of exactly this scope (a number, or null: the project's); the removed one. */
  readonly deleteOptOutOf: (projectId: string, msgConfigId: string | null, recipient: string) => Effect.Effect<Option.Option<OptOutRecord>>

  readonly findSettings: (projectId: string, msgConfigId: string | null) => Effect.Effect<Option.Option<GuardrailSettingsRecord>>
  /** The project's and every number's settings. */
  readonly listSettings: (projectId: string) => Effect.Effect<ReadonlyArray<GuardrailSettingsRecord>>
  /** Inserts or replaces the settings of the record's scope; signals `changes` once done. */
  readonly putSettings: (settings: GuardrailSettingsRecord) => Effect.Effect<void>
  /** A signal per settings change of any process sharing the store (and one on connecting). */
  readonly changes: Stream.Stream<void>

  /** Sets (or replaces) a contact's own time zone. */
  readonly putZone: (zone: ContactZoneRecord) => Effect.Effect<void>
  readonly deleteZone: (projectId: string, recipient: string) => Effect.Effect<boolean>

  /** Notes a marketing send (once per key), dropping the recipient's notes older than `prunedBefore`. */
  readonly recordMarketing: (send: MarketingSendRecord, prunedBefore: string) => Effect.Effect<void>
  /** Marketing sends to the recipient at or after `since`, of one number or (null) of every number of the project. */
  readonly countMarketing: (projectId: string, msgConfigId: string | null, recipient: string, since: string) => Effect.Effect<number>

  /** Erasure of a contact: its opt-outs, time zone and marketing notes; answers how many rows went. */
  readonly eraseRecipient: (projectId: string, recipient: string) => Effect.Effect<number>
}>()("@parley/core/ports/GuardrailsRepo") {}
