/** `Transactor` on PostgreSQL: one SQL transaction; nested calls are savepoints. */
import { Transactor } from "@parley/core"
import { Effect, Layer, Option, Semaphore } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import { isSqlError } from "effect/sql/SqlError"

type Level = SqlClient.TransactionConnection.Service

/** Per open level, the permit its savepoints take: two fibers of one transaction must not interleave theirs. */
const savepointPermits = new WeakMap<Level, Semaphore.Semaphore>()

/**
 * `effect` in a transaction on `sql`, or in a savepoint of the one the fiber
 * is in. `SqlClient.withTransaction` does the same but provides its
 * connection with `Effect.provideContext`, which copies the fiber's whole
 * context (every service of the host) into new maps per transaction: ~45 KB
 * of the ~690 KB a proxied send allocated. Here the connection joins the
 * context as one more service.
 */
export const transaction = (sql: SqlClient.SqlClient) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
  Effect.uninterruptibleMask((restore) => {
    const control = (conn: Level[0], statement: string) => conn.executeUnprepared(statement, [], undefined)
    const within = (level: Level, commit: string, rollback: string): Effect.Effect<A, E | SqlError, R> => {
      savepointPermits.set(level, Semaphore.makeUnsafe(1))
      return restore(Effect.provideService(effect, sql.transactionService, level)).pipe(
        Effect.onError(() => Effect.orDie(control(level[0], rollback))),
        Effect.tap(() => control(level[0], commit))
      )
    }
    return Effect.flatMap(Effect.serviceOption(sql.transactionService), (outer): Effect.Effect<A, E | SqlError, R> => {
      if (Option.isNone(outer)) {
        return Effect.scoped(
          Effect.flatMap(restore(sql.reserve), (conn) => Effect.andThen(control(conn, "BEGIN"), within([conn, 0], "COMMIT", "ROLLBACK")))
        )
      }
      const [conn, depth] = outer.value
      const name = `parley_savepoint_${depth + 1}`
      // A level opened by `SqlClient.withTransaction` itself has no permit here: its savepoints are not ordered.
      const permit = savepointPermits.get(outer.value) ?? Semaphore.makeUnsafe(1)
      return permit.withPermit(
        Effect.andThen(control(conn, `SAVEPOINT ${name}`), within([conn, depth + 1], `RELEASE SAVEPOINT ${name}`, `ROLLBACK TO SAVEPOINT ${name}`))
      )
    })
  })

export const layerTransactor = Layer.effect(
  Transactor,
  Effect.gen(function*() {
    const inTransaction = transaction(yield* SqlClient.SqlClient)
    return Transactor.of({
      withTransaction: <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        // BEGIN/COMMIT failing is an outage, not something the caller's error type speaks of.
        inTransaction(effect).pipe(
          Effect.catchIf(isSqlError, Effect.die),
          Effect.withSpan("Transactor.withTransaction")
        ) as Effect.Effect<A, E, R>
    })
  })
)
