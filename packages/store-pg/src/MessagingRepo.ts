/**
 * The messaging ports on PostgreSQL (migration 0004), one adapter file each:
 * `MessageConfigsRepo`, `ContactsRepo` and `ConversationsRepo`,
 * `MessagesRepo`, `MediaRepo`, `UpstreamInboxRepo`; and here `MessagingLocks`
 * as transaction-scoped advisory locks.
 */
import { MessagingLocks } from "@parley/core"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { advisoryLocks } from "./AdvisoryLocks.ts"
import { layerContactsRepo, layerConversationsRepo } from "./ConversationsRepo.ts"
import { layerMediaRepo } from "./MediaRepo.ts"
import { layerMessageConfigsRepo } from "./MessageConfigsRepo.ts"
import { layerMessagesRepo } from "./MessagesRepo.ts"
import { layerUpstreamInboxRepo } from "./UpstreamInboxRepo.ts"

/** Advisory locks held until the transaction ends (`AdvisoryLocks.ts`). */
export const layerMessagingLocks = Layer.effect(
  MessagingLocks,
  Effect.gen(function*() {
    const lockAll = advisoryLocks(yield* SqlClient.SqlClient)
    return MessagingLocks.of({ lock: (key: string) => lockAll([key]), lockAll })
  })
)

/** Every messaging port on PostgreSQL. */
export const layerMessagingStorage = Layer.mergeAll(
  layerMessageConfigsRepo,
  layerContactsRepo,
  layerConversationsRepo,
  layerMessagesRepo,
  layerMediaRepo,
  layerUpstreamInboxRepo,
  layerMessagingLocks
)
