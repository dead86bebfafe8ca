/**
 * Storage of broadcasts and their recipients (decisions 2.14, 3.4), scoped by
 * project. Counters and a recipient's delivery times are read with the
 * recipient's stored message (`msg_messages`): the adapter reads both.
 */
import { Context, type Effect, type Option } from "effect"
import type {
  BroadcastCounts,
  BroadcastFilter,
  BroadcastRecord,
  BroadcastStatus,
  RecipientErrorDetails,
  RecipientRecord,
  RecipientStatus,
  RecipientView
} from "./Broadcast.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"

/** What the sender did with one pending recipient. */
export interface RecipientOutcome {
  readonly id: string
  readonly status: Exclude<RecipientStatus, "pending">
  readonly at: string
  readonly error_message: string | null
  readonly error_details: RecipientErrorDetails | null
}

/** A pending recipient's next attempt. */
export interface RecipientRetry {
  readonly id: string
  readonly message_id: string
  readonly attempts: number
  readonly retry_at: string
  /** Kept when the message id stays (a send in doubt waits for its reports), null with a new one. */
  readonly attempted_at: string | null
  /** Set when the wait is the recipient's quiet hours (counted as held); absent: not held. */
  readonly held_until?: string | undefined
}

export class BroadcastsRepo extends Context.Service<BroadcastsRepo, {
  readonly insert: (broadcast: BroadcastRecord) => Effect.Effect<void>
  readonly findById: (projectId: string, id: string) => Effect.Effect<Option.Option<BroadcastRecord>>
  /** Newest first by (created_at, id). */
  readonly list: (projectId: string, filter: BroadcastFilter, window: ListWindow) => Effect.Effect<ListSlice<BroadcastRecord>>
  /** Writes the record when its stored status is one of `from` (compare-and-set); the stored record, or None. */
  readonly transition: (
    broadcast: BroadcastRecord,
    from: ReadonlyArray<BroadcastStatus>
  ) => Effect.Effect<Option.Option<BroadcastRecord>>
  /**
   * Adds recipients to a broadcast that is still `draft`; one whose phone number the broadcast already has (or that
   * came earlier in the same call) is a duplicate and is not added. None when the broadcast is not a draft.
   */
  readonly addRecipients: (
    projectId: string,
    broadcastId: string,
    recipients: ReadonlyArray<RecipientRecord>
  ) => Effect.Effect<Option.Option<{ readonly added: number; readonly duplicates: number }>>
  /** Removes every recipient of a `draft` or `scheduled` broadcast; None when it is in another status. */
  readonly clearRecipients: (projectId: string, broadcastId: string) => Effect.Effect<Option.Option<number>>
  /** Newest first by (created_at, id); `status` filters on the status as read (a failed report makes `sent` `failed`). */
  readonly listRecipients: (
    projectId: string,
    broadcastId: string,
    status: RecipientStatus | undefined,
    window: ListWindow
  ) => Effect.Effect<ListSlice<RecipientView>>
  /** The counters of decisions 2.14, read now. */
  readonly counts: (projectId: string, broadcastId: string) => Effect.Effect<BroadcastCounts>
  /**
   * Takes the broadcast for `owner` until `until` when nobody holds it (or its lease ended at `now`, or `owner`
   * holds it already): the one sender across hosts. The record, or None when another holds it.
   */
  readonly lease: (broadcastId: string, owner: string, now: string, until: string) => Effect.Effect<Option.Option<BroadcastRecord>>
  /** Gives the lease up (when `owner` holds it). */
  readonly release: (broadcastId: string, owner: string) => Effect.Effect<void>
  /** Up to `limit` pending recipients due at `now` (no `retry_at` after it), oldest first: the sender's next batch. */
  readonly pendingBatch: (broadcastId: string, now: string, limit: number) => Effect.Effect<ReadonlyArray<RecipientRecord>>
  /** Notes that a sender took these recipients at `at` (before it sends any of them). */
  readonly markAttempted: (broadcastId: string, ids: ReadonlyArray<string>, at: string) => Effect.Effect<void>
  /** Leaves pending recipients for later: their next attempt's message id, attempt count and time. */
  readonly postpone: (broadcastId: string, retries: ReadonlyArray<RecipientRetry>) => Effect.Effect<void>
  /** Records what became of recipients; a recipient no longer `pending` keeps its outcome. */
  readonly settle: (broadcastId: string, outcomes: ReadonlyArray<RecipientOutcome>) => Effect.Effect<void>
  /** (total, pending) of a broadcast without reading messages: the sender's progress. */
  readonly progress: (broadcastId: string) => Effect.Effect<{ readonly total: number; readonly pending: number }>
  /** Scheduled broadcasts whose `scheduled_at` is at or before `now`, and sending ones (a restart's work), any project. */
  readonly listRunnable: (now: string, limit: number) => Effect.Effect<ReadonlyArray<BroadcastRecord>>
  /**
   * Distinct phone numbers the broadcasts of these numbers sent to at or after `since`: the contacts a business
   * portfolio reached, as far as broadcasts know (decisions 8.2's messaging limit).
   */
  readonly contactsReachedSince: (msgConfigIds: ReadonlyArray<string>, since: string) => Effect.Effect<number>
  /**
   * Erasure of a contact: every recipient of the project with this phone number keeps its row (the counters stay
   * true) with the phone number replaced by `ANONYMISED_PHONE` and its template parameters dropped. Answers how many.
   */
  readonly anonymiseRecipients: (projectId: string, phoneNumber: string) => Effect.Effect<number>
}>()("@parley/core/ports/BroadcastsRepo") {}
