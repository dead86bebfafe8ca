/**
 * Storage of contact erasures (decisions 4.8): the erasure records (queued →
 * running → done, with the step reached). The deletions each step makes are
 * the capabilities' own (`ContactHoldings`). Every deletion is bounded (`limit`
 * rows of its table), answers how many it removed, and is idempotent: the job
 * calls one until it answers 0, and a job that crashed calls it again from the
 * step its record reached.
 */
import { Context, type Effect, type Option } from "effect"

export type ContactErasureStatus = "queued" | "running" | "done"

/** What names the contact in stored bytes and JSON; kept on the record only until the erasure is done. */
export interface ErasureTarget {
  readonly wa_id: string | null
  readonly business_scoped_user_id: string | null
  readonly parent_business_scoped_user_id: string | null
}

export interface ContactErasureRecord {
  readonly id: string
  readonly project_id: string
  readonly contact_id: string
  readonly status: ContactErasureStatus
  /**
   * Name of the step it is in (the steps before it are done; the last one once done), null before the first:
   * a name, not a position, so a step added to the list in a later version does not shift an erasure in flight.
   */
  readonly step: string | null
  /** Null once done: the record then holds no identifier of the contact but its (deleted) id. */
  readonly target: ErasureTarget | null
  readonly created_at: string
  readonly updated_at: string
  readonly finished_at: string | null
}

/** The contact an erasure step works on: its project, id and the text that identifies it. */
export interface ErasureSubject {
  readonly project_id: string
  readonly contact_id: string
  readonly target: ErasureTarget
}

/** A bounded, idempotent deletion of one step: answers how many rows it removed (or anonymised). */
export type ErasureDeletion = (subject: ErasureSubject, limit: number) => Effect.Effect<number>

export class ContactErasureRepo extends Context.Service<ContactErasureRepo, {
  /**
   * The unfinished (queued or running) erasure of the record's contact if
   * there is one, else the record inserted; `created` says which.
   */
  readonly open: (
    record: ContactErasureRecord
  ) => Effect.Effect<{ readonly record: ContactErasureRecord; readonly created: boolean }>
  readonly find: (id: string) => Effect.Effect<Option.Option<ContactErasureRecord>>
  /** Marks an unfinished erasure running at `step`; false when it is done or unknown. */
  readonly reach: (id: string, step: string, at: string) => Effect.Effect<boolean>
  /** Marks it done and drops its `target`. */
  readonly finish: (id: string, at: string) => Effect.Effect<void>
  /** Queued or running erasures of every project, oldest first. */
  readonly listUnfinished: (limit: number) => Effect.Effect<ReadonlyArray<ContactErasureRecord>>

}>()("@parley/core/ports/ContactErasureRepo") {}

/** The strings that identify the contact in stored text: its id and network identifiers. */
export const erasureTerms = (subject: ErasureSubject): ReadonlyArray<string> =>
  [
    subject.contact_id,
    subject.target.wa_id,
    subject.target.business_scoped_user_id,
    subject.target.parent_business_scoped_user_id
  ].filter((t): t is string => t !== null && t !== "")
