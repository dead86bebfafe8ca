/**
 * The stored side of messaging (decisions 2.10, 3.5, 10.1 step 1), one
 * service assembled from its concerns: recording what the network reports
 * (`InboundRecording`), recording what Parley sends (`OutboundRecording`),
 * stored conversations and contacts (`StoredConversations`), conversations
 * opened before their first message (`ConversationOpening`), and the reads
 * of messages and numbers below.
 *
 * Ingestion calls `recordInbound` and `applyStatuses`; `Outbound` calls
 * `recordOutbound`, `assignNetworkId` and `failOutbound`; the proxy calls
 * `markInboundRead` and the reads; executions read contacts, conversations,
 * numbers and media here (never messaging's repositories).
 */
import { Context, Effect, Layer, Option } from "effect"
import { MediaRepo, MessagesRepo } from "./MessagingRepo.ts"
import { type NotFound, notFound } from "../shared/ApiError.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import { type ConversationOpening, makeConversationOpening } from "./ConversationOpening.ts"
import { type InboundRecording, makeInboundRecording } from "./InboundRecording.ts"
import type { MessageFilter, MessageRecord, StoredMedia } from "./Message.ts"
import { LiveNumbers } from "./numbers/LiveNumbers.ts"
import type { MessageConfigFilter, MessageConfigRecord } from "./numbers/MessageConfig.ts"
import { MessageConfigsRepo } from "./numbers/MessageConfigsRepo.ts"
import { makeOutboundRecording, type OutboundRecording } from "./OutboundRecording.ts"
import { makeReadMarks, type ReadMarks } from "./ReadMarks.ts"
import { makeRecording } from "./Recording.ts"
import { makeStoredConversations, type StoredConversations } from "./StoredConversations.ts"

export class Messaging extends Context.Service<Messaging, InboundRecording & ReadMarks & OutboundRecording & StoredConversations & ConversationOpening & {
  readonly listMessages: (projectId: string, filter: MessageFilter, window: ListWindow) => Effect.Effect<ListSlice<MessageRecord>>
  /** By Parley's id only, if the project has it. */
  readonly findMessage: (projectId: string, id: string) => Effect.Effect<Option.Option<MessageRecord>>
  /** By Parley's id or the network's. */
  readonly getMessage: (projectId: string, phoneNumberId: string, id: string) => Effect.Effect<MessageRecord, NotFound>
  /** The project's live config of a network phone number id, if any. */
  readonly numberOf: (projectId: string, phoneNumberId: string) => Effect.Effect<Option.Option<MessageConfigRecord>>
  /** `numberOf` read from the store, not remembered: a start acts on the number as it is now. */
  readonly findNumberOf: (projectId: string, phoneNumberId: string) => Effect.Effect<Option.Option<MessageConfigRecord>>
  /** The project's live config by its id, read from the store. */
  readonly findNumber: (projectId: string, msgConfigId: string) => Effect.Effect<Option.Option<MessageConfigRecord>>
  /** The project's live configs, newest first by (created_at, id). */
  readonly listNumbers: (projectId: string, filter: MessageConfigFilter, window: ListWindow) => Effect.Effect<ListSlice<MessageConfigRecord>>
  /** Every config of a network business account, of any project, disconnected ones too (they share its limits). */
  readonly numbersOfAccount: (businessAccountId: string) => Effect.Effect<ReadonlyArray<MessageConfigRecord>>
  /** A stored copy of a message's media, with its bytes. */
  readonly findMedia: (projectId: string, id: string) => Effect.Effect<Option.Option<StoredMedia>>
}>()("@parley/core/messaging/Messaging") {
  static readonly layer = Layer.effect(
    Messaging,
    Effect.gen(function*() {
      const liveNumbers = yield* LiveNumbers
      const messages = yield* MessagesRepo
      const configs = yield* MessageConfigsRepo
      const media = yield* MediaRepo
      const recording = yield* makeRecording

      const numberOf = (projectId: string, phoneNumberId: string) =>
        liveNumbers.byPhoneNumberId(phoneNumberId).pipe(
          Effect.map(Option.filter((config) => config.project_id === projectId && config.deleted_at === null))
        )

      const getMessage = Effect.fn("Messaging.getMessage")(function*(projectId: string, phoneNumberId: string, id: string) {
        const byNetwork = yield* messages.findByNetworkId(phoneNumberId, id)
        if (Option.isSome(byNetwork) && byNetwork.value.project_id === projectId) return byNetwork.value
        const byId = yield* messages.findById(projectId, id)
        if (Option.isSome(byId) && byId.value.phone_number_id === phoneNumberId) return byId.value
        return yield* notFound("Message", id)
      })

      const inbound = yield* makeInboundRecording(recording)
      return Messaging.of({
        ...inbound,
        ...yield* makeReadMarks(inbound.markRead),
        ...yield* makeOutboundRecording(recording),
        ...yield* makeStoredConversations(recording),
        ...yield* makeConversationOpening(recording),
        listMessages: (projectId, filter, window) => messages.list(projectId, filter, window),
        findMessage: messages.findById,
        getMessage,
        numberOf,
        findNumberOf: (projectId, phoneNumberId) =>
          Effect.map(configs.findByPhoneNumberId(phoneNumberId), Option.filter((config) => config.project_id === projectId)),
        findNumber: configs.findById,
        listNumbers: configs.list,
        numbersOfAccount: configs.listByBusinessAccount,
        findMedia: media.find
      })
    })
  )
}
