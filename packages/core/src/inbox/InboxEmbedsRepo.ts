/** Storage of inbox embeds (decisions 2.17): the embed repos' contract with the inbox's record and filters. */
import { Context } from "effect"
import type { EmbedsRepo, EmbedTable } from "../embeds/EmbedsRepo.ts"
import type { InboxEmbedFilter, InboxEmbedRecord } from "./InboxEmbed.ts"

export class InboxEmbedsRepo extends Context.Service<InboxEmbedsRepo, EmbedsRepo<InboxEmbedRecord, InboxEmbedFilter>>()(
  "@parley/core/ports/InboxEmbedsRepo"
) {}

/** The inbox's table: the shared columns and the assigned user. */
export const inboxEmbedsTable: EmbedTable<InboxEmbedRecord> = {
  table: "inbox_embeds",
  ownColumns: ["assigned_user_id", "assigned_user_name"]
}
