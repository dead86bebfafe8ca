/**
 * The messaging proxy (decisions 4.10, 7.3, 7.4, 7.5): the network's API,
 * `{proxy_url}[/vNN.N]/...`, for the project's numbers and business accounts.
 * Each route is one method; the number must belong to the caller's project
 * (404 in the network's error shape, code 100).
 *
 * A send (`POST /<phone_number_id>/messages`) is the proxy's bytes through
 * `Outbound.send`, which records, orders and sends it; the outcome becomes the
 * network's answer (or error object) unchanged: status, content type and
 * bytes. A mark-read envelope (`status: "read"`) goes to the network's mark
 * read and marks the thread's inbound messages read. Reads, media, the
 * pass-through routes and the objects read by id live in `ProxyReads`,
 * `ProxyMedia`, `ProxyPassThrough` and `ProxyObjects`.
 *
 * Every outcome is an answer (`ProxyAnswer`): the service never fails, so a
 * route only writes what it gets.
 */
import { Context, Effect, Layer, Option, Predicate } from "effect"
import { MessagingNetwork, type NetworkAccess, rawAnswer } from "../network/MessagingNetwork.ts"
import { Messaging } from "./Messaging.ts"
import type { MessageConfigRecord } from "./numbers/MessageConfig.ts"
import { Outbound, type OutboundOutcome } from "./Outbound.ts"
import {
  accountMismatch,
  type Json,
  orUnreachable,
  outsideWindow,
  parseJson,
  type ProxyAnswer,
  unknownObject,
  withheldAnswer
} from "./ProxyAnswers.ts"
import { envelopeTexts } from "./Recording.ts"
import { makeProxyMedia, type ProxyMedia } from "./ProxyMedia.ts"
import { makeProxyObjects, type ProxyObjects } from "./ProxyObjects.ts"
import { makeProxyPassThrough, type ProxyPassThrough } from "./ProxyPassThrough.ts"
import { makeProxyReads, type ProxyReads } from "./ProxyReads.ts"

/** A send's outcome as the proxy answers it. */
const answerOf = (outcome: OutboundOutcome): Effect.Effect<ProxyAnswer> => {
  switch (outcome._tag) {
    case "Accepted":
      return Effect.succeed(outcome.answer)
    case "Refused":
      return Effect.succeed({ status: outcome.status, contentType: outcome.contentType, body: outcome.body })
    case "OutsideWindow":
      return Effect.succeed(outsideWindow())
    case "AccountMismatch":
      return Effect.succeed(accountMismatch(outcome.mediaId))
    case "Withheld":
      return Effect.succeed(withheldAnswer(outcome.withheld))
    case "Unavailable":
      return orUnreachable(rawAnswer(Effect.fail(outcome.failure)))
  }
}

export class MessagingProxy extends Context.Service<MessagingProxy, ProxyReads & ProxyMedia & ProxyPassThrough & ProxyObjects & {
  /** The project's live number with that network id, if any. */
  readonly number: (projectId: string, phoneNumberId: string) => Effect.Effect<Option.Option<MessageConfigRecord>>
  /** `POST /<phone_number_id>/messages` with the body as received and the version segment as given. */
  readonly send: (
    projectId: string,
    phoneNumberId: string,
    body: Uint8Array,
    version?: string | undefined
  ) => Effect.Effect<ProxyAnswer>
}>()("@parley/core/messaging/MessagingProxy") {
  static readonly layer = Layer.effect(
    MessagingProxy,
    Effect.gen(function*() {
      const messaging = yield* Messaging
      const network = yield* MessagingNetwork
      const outbound = yield* Outbound
      const number = messaging.numberOf

      const markRead = Effect.fn("MessagingProxy.markRead")(function*(
        config: MessageConfigRecord,
        access: NetworkAccess,
        envelope: Json,
        body: Uint8Array
      ) {
        const messageId = envelopeTexts(envelope).message_id
        // Without a message id the network refuses it in its own words.
        if (messageId === undefined) return yield* rawAnswer(network.send(access, config.phone_number_id, body))
        const typing = Predicate.isObject(envelope["typing_indicator"]) && envelope["typing_indicator"]["type"] === "text"
        return yield* rawAnswer(messaging.markRead(config, access, { messageId, typingIndicator: typing }))
      })

      const send = Effect.fn("MessagingProxy.send")(function*(
        projectId: string,
        phoneNumberId: string,
        body: Uint8Array,
        version?: string | undefined
      ) {
        const config = yield* number(projectId, phoneNumberId)
        if (Option.isNone(config)) return unknownObject(phoneNumberId)
        const access: NetworkAccess = { accessToken: config.value.access_token, version }
        const envelope = parseJson(body)
        // Not an envelope Parley can read: forwarded anyway, the network answers it.
        if (!Predicate.isObject(envelope)) return yield* orUnreachable(rawAnswer(network.send(access, phoneNumberId, body)))
        if (envelopeTexts(envelope).status === "read") return yield* orUnreachable(markRead(config.value, access, envelope, body))
        return yield* answerOf(yield* outbound.send(config.value, envelope, { origin: "api", body, version }))
      })

      const media = yield* makeProxyMedia
      return MessagingProxy.of({
        number,
        send,
        ...yield* makeProxyReads,
        ...media,
        ...yield* makeProxyPassThrough,
        ...yield* makeProxyObjects(media)
      })
    })
  )
}
