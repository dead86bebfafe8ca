/**
 * The messaging ports on PostgreSQL (migration 0004), one adapter file each:
 * `MessageConfigsRepo`, `ContactsRepo` and `ConversationsRepo`,
 * `MessagesRepo`, `MediaRepo`, `UpstreamInboxRepo`; and here `MessagingLocks`
 * as transaction-scoped advisory locks.
 */
import { MessagingLocks } from "@parley/core"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { layerContactsRepo, layerConversationsRepo } from "./ConversationsRepo.ts"
import { layerMediaRepo } from "./MediaRepo.ts"
import { layerMessageConfigsRepo } from "./MessageConfigsRepo.ts"
import { layerMessagesRepo } from "./MessagesRepo.ts"
import { deferred } from "./Transactor.ts"
import { layerUpstreamInboxRepo } from "./UpstreamInboxRepo.ts"

/** Advisory locks held until the transaction ends (`pg_advisory_xact_lock`), keyed by a 64-bit hash of the key. */
export const layerMessagingLocks = Layer.effect(
  MessagingLocks,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const later = deferred(sql)
    const lockAll = Effect.fnUntraced(function*(keys: ReadonlyArray<string>) {
      if (keys.length === 0) return
      // One statement, in ascending hash order: two holders of overlapping sets never wait on each other in a cycle.
      yield* later(sql`
        SELECT pg_advisory_xact_lock(h)
        FROM (SELECT DISTINCT hashtextextended(k, 0) AS h FROM unnest(${keys}::text[]) AS k ORDER BY h) AS s`)
    }, Effect.orDie)
    return MessagingLocks.of({
      lock: (key: string) => lockAll([key]),
      lockAll
    })
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
