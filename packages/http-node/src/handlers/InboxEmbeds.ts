/** Inbox embeds (Platform API) and the embedded inbox's own API: decode (contract) → one service call → encode. */
import {
  CurrentEmbed,
  CurrentPrincipal,
  Inbox,
  InboxAuthentication,
  InboxEmbeds,
  ParleyApi,
  pageBody,
  resolvePageWindow,
  toInboxEmbed,
  unprocessable
} from "@parley/core"
import { Effect, Layer, Redacted } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { setProjectId } from "../RequestInfo.ts"
import { locationOf } from "./Lists.ts"

export const InboxEmbedsHandlers = HttpApiBuilder.group(
  ParleyApi,
  "inboxEmbeds",
  Effect.fn(function*(handlers) {
    const embeds = yield* InboxEmbeds
    return handlers
      .handle("list", ({ query, request }) =>
        Effect.gen(function*() {
          const window = yield* resolvePageWindow(query)
          const filter = {
            status: query.status,
            scope_type: query.scope_type,
            scope_id: query.scope_id,
            assigned_user_id: query.assigned_user_id
          }
          const slice = yield* embeds.list(yield* CurrentPrincipal, filter, window)
          return pageBody(window, slice.total, slice.items.map(toInboxEmbed), yield* locationOf(request))
        }))
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          const created = yield* embeds.create(yield* CurrentPrincipal, payload.inbox_embed)
          return { data: { ...toInboxEmbed(created.embed), token: created.token, embed_url: created.embed_url } }
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          return { data: toInboxEmbed(yield* embeds.get(yield* CurrentPrincipal, params.id)) }
        }))
      .handle("update", ({ params, payload }) =>
        Effect.gen(function*() {
          return { data: toInboxEmbed(yield* embeds.update(yield* CurrentPrincipal, params.id, payload.inbox_embed)) }
        }))
      .handle("revoke", ({ params }) =>
        Effect.gen(function*() {
          yield* embeds.revoke(yield* CurrentPrincipal, params.id)
        }))
  })
)

/** A query flag of the inbox address: `1` (or `true`) turns it on. */
const flag = (value: string | undefined) => value === "1" || value === "true"

export const InboxHandlers = HttpApiBuilder.group(
  ParleyApi,
  "inbox",
  Effect.fn(function*(handlers) {
    const inbox = yield* Inbox
    return handlers
      .handle("session", () =>
        Effect.gen(function*() {
          const session = yield* CurrentEmbed
          const { embed } = session
          const numbers = yield* inbox.numbers(session)
          return {
            data: {
              name: embed.name,
              scope_type: embed.scope_type,
              scope_name: embed.scope_name,
              language: embed.language,
              default_mode: embed.default_mode,
              sender_name: embed.assigned_user_id !== null ? (embed.assigned_user_name ?? embed.assigned_user_id) : embed.name,
              numbers: numbers.map((c) => ({
                msg_config_id: c.id,
                phone_number_id: c.phone_number_id,
                name: c.display_name,
                display_phone_number: c.display_phone_number
              }))
            }
          }
        }))
      .handle("conversations", ({ query }) =>
        Effect.gen(function*() {
          const limit = query.limit === undefined ? 50 : Number(query.limit)
          if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
            return yield* unprocessable("limit must be 1-100", [{ path: "limit", message: "must be 1-100" }])
          }
          const listed = yield* inbox.list(yield* CurrentEmbed, {
            status: query.status ?? "active",
            search: query.search,
            msg_config_id: query.msg_config_id === undefined || query.msg_config_id === "all" ? undefined : query.msg_config_id,
            unread: flag(query.unread),
            handoff: flag(query.handoff),
            limit
          })
          return { data: listed.items, has_more: listed.hasMore }
        }))
      .handle("thread", ({ params }) =>
        Effect.gen(function*() {
          return { data: yield* inbox.thread(yield* CurrentEmbed, params.id) }
        }))
      .handle("reply", ({ params, payload }) =>
        Effect.gen(function*() {
          return { data: yield* inbox.reply(yield* CurrentEmbed, params.id, payload) }
        }))
      .handle("read", ({ params }) =>
        Effect.gen(function*() {
          return { data: { marked: yield* inbox.markRead(yield* CurrentEmbed, params.id) } }
        }))
      .handle("end", ({ params }) =>
        Effect.gen(function*() {
          return { data: yield* inbox.end(yield* CurrentEmbed, params.id) }
        }))
      .handle("resumeHandoff", ({ params }) =>
        Effect.gen(function*() {
          return { data: yield* inbox.settleHandoff(yield* CurrentEmbed, params.id, "resume") }
        }))
      .handle("endHandoff", ({ params }) =>
        Effect.gen(function*() {
          return { data: yield* inbox.settleHandoff(yield* CurrentEmbed, params.id, "end") }
        }))
      .handle("templates", ({ params }) =>
        Effect.gen(function*() {
          return { data: yield* inbox.templates(yield* CurrentEmbed, params.id) }
        }))
  })
)

/** `X-Inbox-Token` → the embed (`InboxEmbeds.authenticate`); 401 otherwise. */
export const InboxAuthenticationLive = Layer.effect(
  InboxAuthentication,
  Effect.gen(function*() {
    const embeds = yield* InboxEmbeds
    return InboxAuthentication.of({
      token: (httpEffect, { credential }) =>
        Effect.gen(function*() {
          const session = yield* embeds.authenticate(Redacted.value(credential))
          setProjectId(yield* HttpServerRequest.HttpServerRequest, session.project.id)
          return yield* Effect.provideService(httpEffect, CurrentEmbed, session)
        })
    })
  })
)
