/** The behaviour every `InboxEmbedsRepo` adapter owes: the embed repos' suite with the inbox's record and filters. */
import { Effect, type Layer } from "effect"
import type { InboxEmbedFilter, InboxEmbedRecord } from "../../inbox/InboxEmbed.ts"
import { InboxEmbedsRepo } from "../../inbox/InboxEmbedsRepo.ts"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import { embedsRepoConformance } from "./EmbedsRepoConformance.ts"
import { at, uniqueId } from "./fixtures.ts"

const makeEmbed = (projectId: string, overrides: Partial<InboxEmbedRecord> = {}): InboxEmbedRecord => ({
  id: uniqueId("emb"),
  project_id: projectId,
  name: "Support",
  scope_type: "project",
  scope_id: null,
  scope_name: "Acme",
  assigned_user_id: null,
  assigned_user_name: null,
  status: "active",
  allowed_origins: [],
  default_mode: "system",
  language: "en",
  expires_at: null,
  last_used_at: null,
  token_hash: uniqueId("hash"),
  created_at: at(0),
  updated_at: at(0),
  ...overrides
})

export const inboxEmbedsRepoConformance = <E>(name: string, storage: Layer.Layer<InboxEmbedsRepo | ProjectsRepo, E>): void =>
  embedsRepoConformance<InboxEmbedRecord, InboxEmbedFilter, InboxEmbedsRepo, E>(name, storage, {
    repo: Effect.service(InboxEmbedsRepo),
    make: makeEmbed,
    rich: {
      scope_type: "customer",
      scope_id: "cus_1",
      allowed_origins: ["https://app.example.com", "http://localhost:3000"],
      assigned_user_id: "u-7",
      assigned_user_name: "Ana"
    },
    edited: {
      name: "Night shift",
      assigned_user_id: "u-1",
      assigned_user_name: "Bo",
      allowed_origins: ["https://x.example"],
      default_mode: "dark",
      language: "es"
    },
    fixed: { scope_type: "phone_number", scope_id: "999" },
    listed: {
      first: { assigned_user_id: "u-1" },
      second: { scope_type: "phone_number", scope_id: "123" },
      filters: [[{ scope_type: "phone_number", scope_id: "123" }, "second"], [{ assigned_user_id: "u-1" }, "first"]]
    }
  })
