/** `InboxEmbedsRepo` in memory, with the keys the Postgres schema enforces. */
import { Effect, Layer } from "effect"
import { memoryEmbeds } from "../embeds/MemoryEmbeds.ts"
import type { InboxEmbedFilter, InboxEmbedRecord } from "./InboxEmbed.ts"
import { InboxEmbedsRepo } from "./InboxEmbedsRepo.ts"

export const layerMemoryInboxEmbedsRepo = Layer.effect(
  InboxEmbedsRepo,
  Effect.map(
    memoryEmbeds<InboxEmbedRecord, InboxEmbedFilter>({
      table: "inbox_embeds",
      matches: (filter) => (e) =>
        (filter.status === undefined || e.status === filter.status) &&
        (filter.scope_type === undefined || e.scope_type === filter.scope_type) &&
        (filter.scope_id === undefined || e.scope_id === filter.scope_id) &&
        (filter.assigned_user_id === undefined || e.assigned_user_id === filter.assigned_user_id),
      edited: (current, next) => ({
        ...current,
        name: next.name,
        assigned_user_id: next.assigned_user_id,
        assigned_user_name: next.assigned_user_name,
        status: next.status,
        allowed_origins: next.allowed_origins,
        default_mode: next.default_mode,
        language: next.language,
        expires_at: next.expires_at,
        updated_at: next.updated_at
      })
    }),
    InboxEmbedsRepo.of
  )
)
