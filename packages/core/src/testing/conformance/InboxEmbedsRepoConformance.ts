/** The behaviour every `InboxEmbedsRepo` adapter owes: the embed repos' suite with the inbox's record and filters. */
import { Effect, type Layer } from "effect"
import type { InboxEmbedFilter, InboxEmbedRecord } from "../../inbox/InboxEmbed.ts"
import { InboxEmbedsRepo } from "../../inbox/InboxEmbedsRepo.ts"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import { embedsRepoConformance } from "./EmbedsRepoConformance.ts"

export const inboxEmbedsRepoConformance = <E>(name: string, storage: Layer.Layer<InboxEmbedsRepo | ProjectsRepo, E>): void =>
  embedsRepoConformance<InboxEmbedRecord, InboxEmbedFilter, InboxEmbedsRepo, E>(name, storage, {
    repo: Effect.service(InboxEmbedsRepo),
    own: { assigned_user_id: null, assigned_user_name: null },
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
