/**
 * The proxy's pass-through routes (decisions 4.10): templates of the
 * project's business accounts, blocked users, usernames, interactive form
 * metadata, and any other request on a number's edges, forwarded with the
 * stored token; the network's answers come back byte for byte.
 */
import { Effect } from "effect"
import { MessageConfigsRepo } from "./numbers/MessageConfigsRepo.ts"
import { MessagingNetwork, type NetworkAccess } from "../network/MessagingNetwork.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import { createdCursorKeyOf } from "./Message.ts"
import { Messaging } from "./Messaging.ts"
import { pagedAt } from "./ProxyPaging.ts"
import { Templates } from "./templates/Templates.ts"
import type { MessageConfigRecord } from "./numbers/MessageConfig.ts"
import {
  answered,
  forwarded,
  invalidParameter,
  networkStyleError,
  ownNumberOf,
  type ProxyAnswer,
  refuse,
  unknownObject
} from "./ProxyAnswers.ts"

export interface ProxyPassThrough {
  /**
   * `GET /<waba_id>/message_templates` with the network's filters and paging; `paging.next`/`previous` point at
   * `location`, the list's own proxy address.
   */
  readonly listTemplates: (
    projectId: string,
    businessAccountId: string,
    query: URLSearchParams,
    location: URL,
    version?: string | undefined
  ) => Effect.Effect<ProxyAnswer>
  /** `GET /<waba_id>/message_templates/<template_id>`. */
  readonly getTemplate: (projectId: string, businessAccountId: string, templateId: string, version?: string | undefined) => Effect.Effect<ProxyAnswer>
  /** `POST /<waba_id>/message_templates`: create, or edit with `hsm_id`; the body forwarded byte for byte. */
  readonly saveTemplate: (
    projectId: string,
    businessAccountId: string,
    hsmId: string | undefined,
    body: Uint8Array,
    version?: string | undefined
  ) => Effect.Effect<ProxyAnswer>
  /** `DELETE /<waba_id>/message_templates?name=&hsm_id=` (at least one). */
  readonly deleteTemplate: (
    projectId: string,
    businessAccountId: string,
    target: { readonly name?: string | undefined; readonly hsmId?: string | undefined },
    version?: string | undefined
  ) => Effect.Effect<ProxyAnswer>
  /** `GET`, `POST`, `DELETE /<phone_number_id>/block_users`: paging query (pages linked at `location`) or the body, forwarded. */
  readonly blockUsers: (
    projectId: string,
    phoneNumberId: string,
    method: "GET" | "POST" | "DELETE",
    query: URLSearchParams,
    location: URL,
    body: Uint8Array,
    version?: string | undefined
  ) => Effect.Effect<ProxyAnswer>
  /** `GET`, `POST`, `DELETE /<phone_number_id>/username`, and `GET .../username_suggestions` (`method` `SUGGEST`). */
  readonly username: (
    projectId: string,
    phoneNumberId: string,
    method: "GET" | "POST" | "DELETE" | "SUGGEST",
    body: Uint8Array,
    version?: string | undefined
  ) => Effect.Effect<ProxyAnswer>
  /**
   * `POST /<flow_id>`: interactive form metadata. The flow must belong to one
   * of the project's business accounts: each is tried with its own token until
   * the network knows the flow; none does → 404 (code 100).
   */
  readonly flowMetadata: (projectId: string, flowId: string, body: Uint8Array, version?: string | undefined) => Effect.Effect<ProxyAnswer>
  /**
   * Any other request on the number's edges (`rest`: the segments after the number), forwarded unchanged with its
   * stored token; methods the network does not take answer its "unsupported request" error. A list's pages are
   * linked at `location`, the request's own proxy address.
   */
  readonly forward: (
    projectId: string,
    phoneNumberId: string,
    method: string,
    rest: ReadonlyArray<string>,
    query: URLSearchParams,
    location: URL,
    body: Uint8Array | undefined,
    contentType: string | undefined,
    version?: string | undefined
  ) => Effect.Effect<ProxyAnswer>
}

export const makeProxyPassThrough = Effect.gen(function*() {
  const configs = yield* MessageConfigsRepo
  const network = yield* MessagingNetwork
  const ownNumber = ownNumberOf((yield* Messaging).numberOf)
  const templates = yield* Templates

  /** A change the network accepted shows in the template mirror at once (decisions 4.8.1). */
  const mirrored = (projectId: string, businessAccountId: string) => (answer: ProxyAnswer) =>
    answer.status >= 200 && answer.status < 300 ? Effect.as(templates.syncAccount(projectId, businessAccountId), answer) : Effect.succeed(answer)

  /** A business account of the project: the access token of one of its live numbers there. */
  const ownAccount = (projectId: string, businessAccountId: string) =>
    configs.listByBusinessAccount(businessAccountId).pipe(
      Effect.map((all) => all.find((c) => c.project_id === projectId && c.deleted_at === null)),
      Effect.flatMap((config) => config === undefined ? refuse(unknownObject(businessAccountId)) : Effect.succeed(config))
    )

  const listTemplates: ProxyPassThrough["listTemplates"] = (projectId, businessAccountId, query, location, version) =>
    answered(Effect.gen(function*() {
      const config = yield* ownAccount(projectId, businessAccountId)
      const q = (name: string) => query.get(name) ?? undefined
      return yield* forwarded(network.listTemplates({ accessToken: config.access_token, version }, businessAccountId, {
        name: q("name"),
        status: q("status"),
        category: q("category"),
        language: q("language"),
        limit: q("limit"),
        before: q("before"),
        after: q("after"),
        fields: q("fields")
      })).pipe(Effect.map(pagedAt(location)))
    }))

  const getTemplate = (projectId: string, businessAccountId: string, templateId: string, version?: string | undefined) =>
    answered(Effect.gen(function*() {
      const config = yield* ownAccount(projectId, businessAccountId)
      return yield* forwarded(network.getTemplate({ accessToken: config.access_token, version }, templateId))
    }))

  const saveTemplate = (
    projectId: string,
    businessAccountId: string,
    hsmId: string | undefined,
    body: Uint8Array,
    version?: string | undefined
  ) =>
    answered(Effect.gen(function*() {
      const config = yield* ownAccount(projectId, businessAccountId)
      const access: NetworkAccess = { accessToken: config.access_token, version }
      return hsmId === undefined
        ? yield* forwarded(network.createTemplate(access, businessAccountId, body))
        : yield* forwarded(network.editTemplate(access, hsmId, body))
    }).pipe(Effect.tap(mirrored(projectId, businessAccountId))))

  const deleteTemplate = (
    projectId: string,
    businessAccountId: string,
    target: { readonly name?: string | undefined; readonly hsmId?: string | undefined },
    version?: string | undefined
  ) =>
    answered(Effect.gen(function*() {
      const config = yield* ownAccount(projectId, businessAccountId)
      if (target.name === undefined && target.hsmId === undefined) {
        return yield* refuse(invalidParameter(400, "The parameter name or hsm_id is required."))
      }
      return yield* forwarded(network.deleteTemplate({ accessToken: config.access_token, version }, businessAccountId, target))
    }).pipe(Effect.tap(mirrored(projectId, businessAccountId))))

  const blockUsers: ProxyPassThrough["blockUsers"] = (projectId, phoneNumberId, method, query, location, body, version) =>
    answered(Effect.gen(function*() {
      const config = yield* ownNumber(projectId, phoneNumberId)
      const access: NetworkAccess = { accessToken: config.access_token, version }
      if (method === "GET") {
        return yield* forwarded(network.listBlockedUsers(access, phoneNumberId, {
          limit: query.get("limit") ?? undefined,
          before: query.get("before") ?? undefined,
          after: query.get("after") ?? undefined
        })).pipe(Effect.map(pagedAt(location)))
      }
      return yield* forwarded(
        method === "POST" ? network.blockUsers(access, phoneNumberId, body) : network.unblockUsers(access, phoneNumberId, body)
      )
    }))

  const username = (
    projectId: string,
    phoneNumberId: string,
    method: "GET" | "POST" | "DELETE" | "SUGGEST",
    body: Uint8Array,
    version?: string | undefined
  ) =>
    answered(Effect.gen(function*() {
      const config = yield* ownNumber(projectId, phoneNumberId)
      const access: NetworkAccess = { accessToken: config.access_token, version }
      switch (method) {
        case "GET":
          return yield* forwarded(network.getUsername(access, phoneNumberId))
        case "POST":
          return yield* forwarded(network.setUsername(access, phoneNumberId, body))
        case "DELETE":
          return yield* forwarded(network.deleteUsername(access, phoneNumberId))
        case "SUGGEST":
          return yield* forwarded(network.usernameSuggestions(access, phoneNumberId))
      }
    }))

  const flowMetadata = (projectId: string, flowId: string, body: Uint8Array, version?: string | undefined) =>
    answered(Effect.gen(function*() {
      const accounts = new Map<string, MessageConfigRecord>()
      let window: ListWindow = { mode: "cursor", limit: 100 }
      while (true) {
        const page: ListSlice<MessageConfigRecord> = yield* configs.list(projectId, {}, window)
        for (const c of page.items) if (!accounts.has(c.business_account_id)) accounts.set(c.business_account_id, c)
        const last = page.items[page.items.length - 1]
        if (!page.hasMore || last === undefined) break
        window = { mode: "cursor", limit: 100, after: createdCursorKeyOf(last) }
      }
      for (const config of accounts.values()) {
        const outcome = yield* Effect.result(network.updateFlowMetadata({ accessToken: config.access_token, version }, flowId, body))
        // "Unknown object" (100, subcode 33) means another account's flow: try the next one.
        if (outcome._tag === "Failure" && outcome.failure._tag === "NetworkRefused" && outcome.failure.code === 100 &&
          outcome.failure.error.error_subcode === 33) continue
        return yield* forwarded(outcome._tag === "Success" ? Effect.succeed(outcome.success) : Effect.fail(outcome.failure))
      }
      return unknownObject(flowId)
    }))
  const forward: ProxyPassThrough["forward"] = (
    projectId,
    phoneNumberId,
    method,
    rest,
    query,
    location,
    body,
    contentType,
    version
  ) =>
    answered(Effect.gen(function*() {
      const config = yield* ownNumber(projectId, phoneNumberId)
      const path = [phoneNumberId, ...rest].join("/")
      // Dot segments would leave the number's edges once the network's URL is resolved.
      if (
        (method !== "GET" && method !== "POST" && method !== "DELETE") ||
        path.split("/").some((s) => s === "." || s === "..")
      ) {
        const reason = `Unsupported ${method.toLowerCase()} request. Object with ID '${phoneNumberId}' does not exist, ` +
          "cannot be loaded due to missing permissions, or does not support this operation"
        return networkStyleError(400, 100, `(#100) ${reason}`, { subcode: 33, details: reason })
      }
      // The number's stored token is the credential: a token in the query would override it.
      const params = new URLSearchParams(query)
      params.delete("access_token")
      return yield* forwarded(network.forward(
        { accessToken: config.access_token, version },
        { method, path, query: params, body, contentType }
      )).pipe(Effect.map(pagedAt(location)))
    }))


  return {
    listTemplates,
    getTemplate,
    saveTemplate,
    deleteTemplate,
    blockUsers,
    username,
    flowMetadata,
    forward
  } satisfies ProxyPassThrough
})
