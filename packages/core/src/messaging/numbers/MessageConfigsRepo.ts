/**
 * Storage of message configs (connected numbers), scoped by project, with
 * the host-wide lookups ingestion routes by: a number id belongs to at most
 * one live config across the host. Adapters store credentials as given: the
 * services see this port through `secrets/SecretsAtRest.ts`, which hands the
 * adapter `access_token` and `app_secret` encrypted.
 */
import { Context, type Effect, type Option, type Stream } from "effect"
import type { ListSlice, ListWindow } from "../../shared/Pagination.ts"
import type { MessageConfigFilter, MessageConfigRecord } from "./MessageConfig.ts"
import type { Duplicate } from "../../ports/StorageError.ts"

export class MessageConfigsRepo extends Context.Service<MessageConfigsRepo, {
  /** Duplicate("phone_number_id") when a live config (any project) has the number. */
  readonly insert: (config: MessageConfigRecord) => Effect.Effect<void, Duplicate>
  /** A live config of the project. */
  readonly findById: (projectId: string, id: string) => Effect.Effect<Option.Option<MessageConfigRecord>>
  /** A live config of any project (the per-config ingestion path). */
  readonly findLiveById: (id: string) => Effect.Effect<Option.Option<MessageConfigRecord>>
  /** The live config of a number, whichever project has it. */
  readonly findByPhoneNumberId: (phoneNumberId: string) => Effect.Effect<Option.Option<MessageConfigRecord>>
  /** Live configs of a business account across projects, oldest first. */
  readonly listByBusinessAccount: (businessAccountId: string) => Effect.Effect<ReadonlyArray<MessageConfigRecord>>
  /** Live configs of the project, newest first by (created_at, id). */
  readonly list: (
    projectId: string,
    filter: MessageConfigFilter,
    window: ListWindow
  ) => Effect.Effect<ListSlice<MessageConfigRecord>>
  /**
   * Replaces every field but identity, project and creation time of a live
   * config; None when it is gone. Duplicate("phone_number_id") when another
   * live config has the new number.
   */
  readonly update: (config: MessageConfigRecord) => Effect.Effect<Option.Option<MessageConfigRecord>, Duplicate>
  /**
   * Live production configs of numbers the service provisioned, connected before `before` and without a message in
   * either direction since (spec Limits: the free number release), any project, at most `limit`.
   */
  readonly listIdleProvisioned: (before: string, limit: number) => Effect.Effect<ReadonlyArray<MessageConfigRecord>>
  /** Disconnects: the config stays for history with `deleted_at`, its number is free. None when not live. */
  readonly markDeleted: (projectId: string, id: string, at: string) => Effect.Effect<Option.Option<MessageConfigRecord>>
  /**
   * Signals once a change to a config (insert, update, disconnect) is
   * committed, by any process sharing the store, and once when listening
   * (re)starts (what happened before may have been missed); for caches.
   */
  readonly changes: Stream.Stream<void>
}>()("@parley/core/ports/MessageConfigsRepo") {}
