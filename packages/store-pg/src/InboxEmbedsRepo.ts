/** `InboxEmbedsRepo` on PostgreSQL (migration 0022). */
import { InboxEmbed, type InboxEmbedFilter, type InboxEmbedRecord, InboxEmbedsRepo, inboxEmbedsTable } from "@parley/core"
import { Effect, Layer } from "effect"
import { embedRow, pgEmbedsRepo } from "./EmbedsTable.ts"

export const layerInboxEmbedsRepo = Layer.effect(
  InboxEmbedsRepo,
  Effect.map(pgEmbedsRepo<InboxEmbedRecord, InboxEmbedFilter>(inboxEmbedsTable, embedRow(InboxEmbed.fields)), InboxEmbedsRepo.of)
)
