/** Storage of inbox embeds (decisions 2.17), scoped by project; found by token hash to authenticate the inbox. */
import { Context, type Effect, type Option } from "effect"
import type { InboxEmbedFilter, InboxEmbedRecord } from "./InboxEmbed.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"

export class InboxEmbedsRepo extends Context.Service<InboxEmbedsRepo, {
  readonly insert: (embed: InboxEmbedRecord) => Effect.Effect<void>
  readonly findById: (projectId: string, id: string) => Effect.Effect<Option.Option<InboxEmbedRecord>>
  readonly findByTokenHash: (tokenHash: string) => Effect.Effect<Option.Option<InboxEmbedRecord>>
  /** Newest first by (created_at, id). */
  readonly list: (
    projectId: string,
    filter: InboxEmbedFilter,
    window: ListWindow
  ) => Effect.Effect<ListSlice<InboxEmbedRecord>>
  /** Replaces the editable fields, `status` and `updated_at`; None when gone. Scope and token never change. */
  readonly update: (embed: InboxEmbedRecord) => Effect.Effect<Option.Option<InboxEmbedRecord>>
  /** Sets `last_used_at` when it is older than `at` (never moves it back). */
  readonly touch: (id: string, at: string) => Effect.Effect<void>
}>()("@parley/core/ports/InboxEmbedsRepo") {}
