/**
 * The proxy's reads of the network's objects by id, and of a business
 * account's numbers and subscription (decisions 4.10), as a Cloud API SDK
 * asks for them: `GET /<id>` answers a number's fields, a template, media (with
 * the service's `download_url`) or any other object of the project's
 * business accounts, each as the network answers it; `GET /<waba_id>/phone_numbers`
 * the account's numbers the project holds; `GET /<waba_id>/subscribed_apps` the
 * subscription Parley keeps.
 */
import { Effect, Option, Schema } from "effect"
import { MessageConfigsRepo } from "./numbers/MessageConfigsRepo.ts"
import { MessagingNetwork, type NetworkAccess } from "../network/MessagingNetwork.ts"
import { Messaging } from "./Messaging.ts"
import { MediaInfo, NetworkPaging } from "../network/NetworkObjects.ts"
import type { MessageConfigRecord } from "./numbers/MessageConfig.ts"
import { makeProxyAccounts } from "./ProxyAccounts.ts"
import type { ProxyMedia } from "./ProxyMedia.ts"
import { answered, forwarded, json, networkStyleError, parseJson, type ProxyAnswer, refuse, unknownObject } from "./ProxyAnswers.ts"

export interface ProxyObjects {
  /**
   * `GET /<id>` without `phone_number_id`: a number of the project (its fields, `fields` as asked), else whatever
   * object of the project's business accounts has the id (a template, a form, ...), as the network answers it;
   * media answers as `GET /<media_id>` does (`ProxyMedia.mediaUrl`, `download_url` under `downloadBase`). Another
   * project's number, or an id no account of the project knows, answers 404 code 100.
   */
  readonly readObject: (
    projectId: string,
    id: string,
    query: URLSearchParams,
    downloadBase: string,
    version?: string | undefined
  ) => Effect.Effect<ProxyAnswer>
  /**
   * `GET /<waba_id>/phone_numbers`: the network's list with the numbers the project holds on the account (the
   * proxy serves only those); `paging.next`/`previous` point at `location`, the list's own proxy address.
   */
  readonly accountNumbers: (
    projectId: string,
    businessAccountId: string,
    query: URLSearchParams,
    location: URL,
    version?: string | undefined
  ) => Effect.Effect<ProxyAnswer>
  /**
   * `/<waba_id>/subscribed_apps`: `GET` forwarded. The subscription is how Parley receives the account's
   * webhooks, so changing it (`POST`, `DELETE`) answers 403 code 200: a number webhook of kind `upstream` relays them.
   */
  readonly subscribedApps: (
    projectId: string,
    businessAccountId: string,
    method: string,
    version?: string | undefined
  ) => Effect.Effect<ProxyAnswer>
}

/** A listed number: only its id is read, the rest goes back as the network sent it. */
const ListedNumber = Schema.Struct({ id: Schema.String })
const isListedNumber = Schema.is(ListedNumber)
const NumberList = Schema.Struct({ data: Schema.Array(Schema.Unknown), paging: Schema.optionalKey(NetworkPaging) })
const decodeNumberList = Schema.decodeUnknownOption(NumberList)
const isMediaInfo = Schema.is(MediaInfo)

/** The network's query, less a token of the caller's (the stored token is the credential). */
const withoutToken = (query: URLSearchParams) => {
  const params = new URLSearchParams(query)
  params.delete("access_token")
  return params
}

/** `location` with the cursor that continues the list (the network's own address would carry its token). */
const pageAddress = (location: URL, cursor: "after" | "before", value: string) => {
  const url = new URL(location)
  url.searchParams.delete("after")
  url.searchParams.delete("before")
  url.searchParams.set(cursor, value)
  return url.toString()
}

export const makeProxyObjects = (media: ProxyMedia) => Effect.gen(function*() {
  const messaging = yield* Messaging
  const configs = yield* MessageConfigsRepo
  const network = yield* MessagingNetwork
  const accounts = yield* makeProxyAccounts

  const ownAccount = (projectId: string, businessAccountId: string) =>
    accounts.accountConfig(projectId, businessAccountId).pipe(
      Effect.flatMap(Option.match({ onNone: () => refuse(unknownObject(businessAccountId)), onSome: Effect.succeed }))
    )

  const access = (config: MessageConfigRecord, version: string | undefined): NetworkAccess => ({
    accessToken: config.access_token,
    version
  })

  const readObject: ProxyObjects["readObject"] = (projectId, id, query, downloadBase, version) =>
    answered(Effect.gen(function*() {
      const request = { method: "GET" as const, path: id, query: withoutToken(query) }
      const own = yield* messaging.numberOf(projectId, id)
      if (Option.isSome(own)) return yield* forwarded(network.forward(access(own.value, version), request))
      // A number Parley holds for another project is not this one's, whichever account it is on.
      if (Option.isSome(yield* configs.findByPhoneNumberId(id))) return yield* refuse(unknownObject(id))
      const found = yield* accounts.findAcross(projectId, (config) => network.forward(access(config, version), request))
      if (Option.isNone(found)) return yield* refuse(unknownObject(id))
      const { outcome } = found.value
      // Media: the media read's answer (with the service's download link), as with `phone_number_id`.
      if (outcome._tag === "Success" && isMediaInfo(parseJson(outcome.success.body))) {
        return yield* media.mediaUrl(projectId, id, undefined, downloadBase, version)
      }
      return yield* forwarded(outcome._tag === "Success" ? Effect.succeed(outcome.success) : Effect.fail(outcome.failure))
    }))

  const accountNumbers: ProxyObjects["accountNumbers"] = (projectId, businessAccountId, query, location, version) =>
    answered(Effect.gen(function*() {
      const config = yield* ownAccount(projectId, businessAccountId)
      const answer = yield* forwarded(network.forward(access(config, version), {
        method: "GET",
        path: `${businessAccountId}/phone_numbers`,
        query: withoutToken(query)
      }))
      const list = answer.status === 200 ? decodeNumberList(parseJson(answer.body)) : Option.none()
      if (Option.isNone(list)) return answer
      const held = new Set(
        (yield* configs.listByBusinessAccount(businessAccountId))
          .filter((c) => c.project_id === projectId && c.deleted_at === null)
          .map((c) => c.phone_number_id)
      )
      const { data, paging } = list.value
      const after = paging?.cursors?.after
      const before = paging?.cursors?.before
      return json(200, {
        data: data.filter((n) => isListedNumber(n) && held.has(n.id)),
        ...(paging !== undefined
          ? {
            paging: {
              ...(paging.cursors !== undefined ? { cursors: paging.cursors } : {}),
              ...(paging.next !== undefined && after !== undefined ? { next: pageAddress(location, "after", after) } : {}),
              ...(paging.previous !== undefined && before !== undefined
                ? { previous: pageAddress(location, "before", before) }
                : {})
            }
          }
          : {})
      })
    }))

  const subscribedApps: ProxyObjects["subscribedApps"] = (projectId, businessAccountId, method, version) =>
    answered(Effect.gen(function*() {
      const config = yield* ownAccount(projectId, businessAccountId)
      if (method === "GET") return yield* forwarded(network.listSubscribedApps(access(config, version), businessAccountId))
      const reason = "Parley receives this business account's webhooks through its subscription; register a number " +
        "webhook of kind upstream to receive the network's payloads"
      return yield* refuse(networkStyleError(403, 200, `(#200) ${reason}`, { details: reason }))
    }))

  return { readObject, accountNumbers, subscribedApps } satisfies ProxyObjects
})
