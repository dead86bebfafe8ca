/** `Transactor` on PostgreSQL: one SQL transaction; nested calls are savepoints. */
import { Transactor } from "@parley/core"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { isSqlError } from "effect/sql/SqlError"

export const layerTransactor = Layer.effect(
  Transactor,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return Transactor.of({
      withTransaction: <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        // BEGIN/COMMIT failing is an outage, not something the caller's error type speaks of.
        sql.withTransaction(effect).pipe(
          Effect.catchIf(isSqlError, Effect.die),
          Effect.withSpan("Transactor.withTransaction")
        ) as Effect.Effect<A, E, R>
    })
  })
)
