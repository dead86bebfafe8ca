/**
 * Storage of webhook registrations, their deliveries (with every attempt)
 * and the buffers of batched events, always scoped by project where a caller
 * names a record. Adapters store `secret_key` as given: the services see these
 * ports through `secrets/SecretsAtRest.ts`, which hands it to them encrypted.
 */
import { Context, type Effect, type Option, type Stream } from "effect"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import type { Duplicate } from "../ports/StorageError.ts"
import type {
  BufferedItem,
  DeliveryFilter,
  WebhookAttemptRecord,
  WebhookBufferRecord,
  WebhookDeliveryRecord,
  WebhookFilter,
  WebhookRecord
} from "./Webhook.ts"

/** Page-mode totals of delivery lists are counted up to this many (decisions 1.3: bounded estimates). */
export const DELIVERY_TOTAL_CAP = 10_000

export class WebhooksRepo extends Context.Service<WebhooksRepo, {
  /** Fails with Duplicate("upstream") when the number already has an `upstream` webhook. */
  readonly insert: (webhook: WebhookRecord) => Effect.Effect<void, Duplicate>
  readonly findById: (projectId: string, id: string) => Effect.Effect<Option.Option<WebhookRecord>>
  /** Newest first by (created_at, id); page totals are exact. */
  readonly list: (projectId: string, filter: WebhookFilter, window: ListWindow) => Effect.Effect<ListSlice<WebhookRecord>>
  /** Replaces every field but identity, project, number, kind and created_at; None when the webhook is gone. */
  readonly update: (webhook: WebhookRecord) => Effect.Effect<Option.Option<WebhookRecord>>
  readonly delete: (projectId: string, id: string) => Effect.Effect<boolean>
  /** Active webhooks of one number, or the project-level ones (null), oldest first. */
  readonly listActive: (projectId: string, phoneNumberId: string | null) => Effect.Effect<ReadonlyArray<WebhookRecord>>
  /**
   * Pauses a webhook that is still active (`active` false, `paused_at`,
   * `pause_reason`); None when it is gone or no longer active.
   */
  readonly pause: (
    projectId: string,
    id: string,
    at: string,
    reason: "failure_rate"
  ) => Effect.Effect<Option.Option<WebhookRecord>>
  /**
   * Signals each insert, update, delete and pause of a webhook once it is
   * done (committed, on a database), made by any process sharing the store;
   * it may also signal when it (re)starts listening, having maybe missed some.
   */
  readonly changes: Stream.Stream<void>
}>()("@parley/core/ports/WebhooksRepo") {}

/** What a delivery's state may be compared with before it is replaced. */
export interface DeliveryExpectation {
  readonly status: WebhookDeliveryRecord["status"]
  readonly attempt_count: number
}

export class WebhookDeliveriesRepo extends Context.Service<WebhookDeliveriesRepo, {
  /**
   * Stores the delivery, unless its webhook already has one with the same
   * (non-null) `source_key`: then answers that one, with `created` false.
   * With `attempt` (a first attempt made before storing), records it with
   * the delivery in the same step, only when the delivery is created.
   */
  readonly insert: (
    delivery: WebhookDeliveryRecord,
    attempt?: WebhookAttemptRecord
  ) => Effect.Effect<{ readonly delivery: WebhookDeliveryRecord; readonly created: boolean }>
  readonly findById: (projectId: string, id: string) => Effect.Effect<Option.Option<WebhookDeliveryRecord>>
  /** The delivery with its webhook (None when the webhook is gone), in one read: what an attempt starts from. */
  readonly findWithWebhook: (
    projectId: string,
    id: string
  ) => Effect.Effect<Option.Option<{ readonly delivery: WebhookDeliveryRecord; readonly webhook: Option.Option<WebhookRecord> }>>
  /** Newest first by (created_at, id); page totals count at most `DELIVERY_TOTAL_CAP`. */
  readonly list: (
    projectId: string,
    filter: DeliveryFilter,
    window: ListWindow
  ) => Effect.Effect<ListSlice<WebhookDeliveryRecord>>
  /**
   * Replaces the state of a delivery (status, response_status, delivered_at,
   * failed_at, last_attempt_at, next_attempt_at, attempt_count,
   * max_attempts, error_message, webhook_url) when its stored state still
   * matches `expected`; with `attempt`, records that attempt in the same
   * step. False when the state had moved on (nothing written).
   */
  readonly update: (
    next: WebhookDeliveryRecord,
    expected: DeliveryExpectation,
    attempt?: WebhookAttemptRecord
  ) => Effect.Effect<boolean>
  /** Attempts of a delivery, first first. */
  readonly attempts: (deliveryId: string) => Effect.Effect<ReadonlyArray<WebhookAttemptRecord>>
  /**
   * Non-test deliveries of the webhook that finished (delivered or failed for
   * good) at or after `since`, and how many of them failed.
   */
  readonly finishedSince: (
    webhookId: string,
    since: string
  ) => Effect.Effect<{ readonly total: number; readonly failed: number }>
  /**
   * Pending non-test deliveries whose next attempt was due strictly before
   * `before`, oldest due first, at most `limit`: attempts whose job was lost.
   */
  readonly listStalled: (before: string, limit: number) => Effect.Effect<ReadonlyArray<WebhookDeliveryRecord>>
  /** Removes up to `limit` deliveries created strictly before `before` (attempts with them); answers how many. */
  readonly prune: (before: string, limit: number) => Effect.Effect<number>
}>()("@parley/core/ports/WebhookDeliveriesRepo") {}

export class WebhookBuffersRepo extends Context.Service<WebhookBuffersRepo, {
  /**
   * Adds `item` to the buffer of (`open.webhook_id`, `open.conversation_key`).
   * With no buffer there, stores `open` (its items are the first item). With
   * one, appends the item and moves `due_at` to `due_at` of `open`, capped at
   * `capMs` after the buffer's `first_at`. Atomic: concurrent appends keep
   * every item. Answers the buffer as stored and whether this opened it.
   */
  readonly append: (
    open: WebhookBufferRecord,
    item: BufferedItem,
    capMs: number
  ) => Effect.Effect<{ readonly buffer: WebhookBufferRecord; readonly opened: boolean }>
  readonly find: (id: string) => Effect.Effect<Option.Option<WebhookBufferRecord>>
  /** Buffers due strictly before `before`, oldest due first, at most `limit`: flushes whose job was lost. */
  readonly listOverdue: (before: string, limit: number) => Effect.Effect<ReadonlyArray<WebhookBufferRecord>>
  /** Removes and answers the buffer if it is due at `now` (or at any time with `now` null); None otherwise. */
  readonly take: (id: string, now: string | null) => Effect.Effect<Option.Option<WebhookBufferRecord>>
}>()("@parley/core/ports/WebhookBuffersRepo") {}
