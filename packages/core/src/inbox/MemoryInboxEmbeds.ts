/** `InboxEmbedsRepo` in memory, with the keys the Postgres schema enforces. */
import { Effect, Layer } from "effect"
import { memoryEmbeds } from "../embeds/MemoryEmbeds.ts"
import type { InboxEmbedFilter, InboxEmbedRecord } from "./InboxEmbed.ts"
import { InboxEmbedsRepo, inboxEmbedsTable } from "./InboxEmbedsRepo.ts"

export const layerMemoryInboxEmbedsRepo = Layer.effect(
  InboxEmbedsRepo,
  Effect.map(memoryEmbeds<InboxEmbedRecord, InboxEmbedFilter>(inboxEmbedsTable), InboxEmbedsRepo.of)
)
