/** Executions' `RouteLocks` on PostgreSQL: the pair's `routeLock` key as an advisory lock of the transaction. */
import { routeLock, RouteLocks } from "@parley/core"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { advisoryLocks } from "./AdvisoryLocks.ts"

export const layerRouteLocks = Layer.effect(
  RouteLocks,
  Effect.gen(function*() {
    const lockAll = advisoryLocks(yield* SqlClient.SqlClient)
    return RouteLocks.of({ lock: (msgConfigId, contactId) => lockAll([routeLock(msgConfigId, contactId)]) })
  })
)
