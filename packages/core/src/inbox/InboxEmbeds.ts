/**
 * Inbox embeds (decisions 2.17, 3.6, 4.7, 5): create, list, read, update and revoke them, and authenticate the
 * embedded inbox's requests by token. The token is random, answered once and stored as its sha256 hash; it is
 * refused once the embed is revoked, after `expires_at`, and when its project is disabled (`embeds/Embeds.ts`).
 */
import { Context, Effect, Layer, Option } from "effect"
import { type EmbedsService, makeEmbeds, type OpenedEmbed } from "../embeds/Embeds.ts"
import { Messaging } from "../messaging/Messaging.ts"
import type { Unprocessable } from "../shared/ApiError.ts"
import { Customers } from "../tenancy/Customers.ts"
import type {
  EmbedScopeType,
  InboxEmbedCreateInput,
  InboxEmbedFilter,
  InboxEmbedRecord,
  InboxEmbedUpdateInput
} from "./InboxEmbed.ts"
import { InboxEmbedsRepo } from "./InboxEmbedsRepo.ts"

/** An authenticated embedded inbox: its embed and its project. */
export type EmbedSession = OpenedEmbed<InboxEmbedRecord>

const USER_FIELD_MAX = 200

export class InboxEmbeds extends Context.Service<
  InboxEmbeds,
  EmbedsService<InboxEmbedRecord, InboxEmbedCreateInput, InboxEmbedUpdateInput, InboxEmbedFilter>
>()("@parley/core/inbox/InboxEmbeds") {
  static readonly layer = Layer.effect(
    InboxEmbeds,
    Effect.gen(function*() {
      const customers = yield* Customers
      const messaging = yield* Messaging

      const service = yield* makeEmbeds<
        EmbedScopeType,
        Pick<InboxEmbedRecord, "assigned_user_id" | "assigned_user_name">,
        InboxEmbedCreateInput,
        InboxEmbedUpdateInput,
        InboxEmbedFilter
      >(yield* InboxEmbedsRepo, {
        service: "InboxEmbeds",
        resource: "Inbox embed",
        envelope: "inbox_embed",
        tokenPrefix: "ie",
        pagePath: "embed",
        invalidToken: "Invalid inbox token",
        defaultName: () => "Inbox",
        scopeName: (project, scopeType, id) =>
          scopeType === "customer"
            ? Effect.map(customers.find(project.id, id), Option.match({
              onNone: () => ({ refused: "is not a customer of this project" }),
              onSome: (customer) => ({ name: customer.name })
            }))
            : Effect.map(messaging.findNumberOf(project.id, id), (config) =>
              Option.isNone(config) || config.value.deleted_at !== null
                ? { refused: "is not a phone_number_id of this project" }
                : { name: config.value.display_name }),
        created: (input, fieldError) => {
          const checkUserField = userField(fieldError)
          return Effect.all({
            assigned_user_id: checkUserField("assigned_user_id", input.assigned_user_id ?? null),
            assigned_user_name: checkUserField("assigned_user_name", input.assigned_user_name ?? null)
          })
        },
        updated: (current, input, fieldError) => {
          const checkUserField = userField(fieldError)
          return Effect.all({
            assigned_user_id: input.assigned_user_id !== undefined
              ? checkUserField("assigned_user_id", input.assigned_user_id)
              : Effect.succeed(current.assigned_user_id),
            assigned_user_name: input.assigned_user_name !== undefined
              ? checkUserField("assigned_user_name", input.assigned_user_name)
              : Effect.succeed(current.assigned_user_name)
          })
        }
      })
      return InboxEmbeds.of(service)
    })
  )
}

/** An assigned user's field: trimmed, at most `USER_FIELD_MAX` characters, empty as null. */
const userField = (fieldError: (field: string, message: string) => Unprocessable) =>
(field: string, value: string | null) => {
  const trimmed = value?.trim() ?? ""
  if (trimmed.length > USER_FIELD_MAX) return Effect.fail(fieldError(field, `must be at most ${USER_FIELD_MAX} characters`))
  return Effect.succeed(trimmed === "" ? null : trimmed)
}
