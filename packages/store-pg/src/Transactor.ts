/**
 * `Transactor` on PostgreSQL: one SQL transaction on a connection of its own
 * pool; nested calls are savepoints. Statements whose answer nobody waits for
 * (`BEGIN`, locks, writes without a result: see `deferred`) go out with the
 * next statement the transaction waits for, in one write: a transaction costs
 * the round trips of its reads, plus the commit.
 */
import { PgClient, type PgConnection, PgPool } from "@effect/sql-pg"
import { Transactor } from "@parley/core"
import { Context, Effect, Exit, Fiber, Layer, Option, Redacted, Semaphore, Stream } from "effect"
import { SqlClient, type SqlConnection } from "effect/sql"
import { isSqlError, SqlError, UnknownError } from "effect/sql/SqlError"

type Level = SqlClient.TransactionConnection.Service
type Rows = <A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>

/** Connections of the transactions' pool (opened lazily), beside the `PgClient`'s own for single statements. */
export const TRANSACTION_CONNECTIONS = 16

/**
 * One transaction's connection. The session is multiplexed (statements are
 * queued on the wire, not one at a time) and checked out by this transaction
 * alone, so its statements still run in the order they were issued.
 */
class PipelinedConnection implements SqlConnection.Connection {
  /** Deferred statements not yet settled, oldest first. */
  pending: Array<Fiber.Fiber<unknown, unknown>> = []
  readonly session: PgConnection.PgConnection
  constructor(session: PgConnection.PgConnection) {
    this.session = session
  }

  /**
   * `statement`, then the deferred statements issued before it: the server
   * answers in order, so they have finished by then. Theirs is the first
   * failure (after one, PostgreSQL refuses the rest of the transaction).
   */
  settle<A>(statement: Effect.Effect<A, SqlError>): Effect.Effect<A, SqlError> {
    return Effect.suspend(() => {
      const earlier = this.pending
      if (earlier.length === 0) return statement
      this.pending = []
      return Effect.flatMap(
        Effect.exit(statement),
        (exit) => Effect.andThen(Fiber.joinAll(earlier) as Effect.Effect<unknown, SqlError>, exit)
      )
    })
  }

  execute(sql: string, params: ReadonlyArray<unknown>, transformRows: Rows | undefined) {
    return this.rows(sql, params, true, transformRows)
  }
  executeUnprepared(sql: string, params: ReadonlyArray<unknown>, transformRows: Rows | undefined) {
    return this.rows(sql, params, false, transformRows)
  }
  executeRaw(sql: string, params: ReadonlyArray<unknown>) {
    return this.settle(this.session.query(sql, params))
  }
  executeValues(sql: string, params: ReadonlyArray<unknown>) {
    return this.settle(this.session.queryValues(sql, params))
  }
  executeValuesUnprepared(sql: string, params: ReadonlyArray<unknown>) {
    return this.settle(this.session.queryValues(sql, params, false))
  }
  executeStream(sql: string, params: ReadonlyArray<unknown>, transformRows: Rows | undefined) {
    const stream = Stream.unwrap(Effect.as(this.settle(Effect.void), this.session.stream(sql, params)))
    return transformRows === undefined ? stream : Stream.mapArray(stream, (rows) => transformRows(rows) as typeof rows)
  }
  private rows(sql: string, params: ReadonlyArray<unknown>, prepare: boolean, transformRows: Rows | undefined) {
    const rows = Effect.map(this.session.query(sql, params, prepare), (result) => result.rows)
    return this.settle(transformRows === undefined ? rows : Effect.map(rows, transformRows))
  }
}

/**
 * Runs `statement` without waiting for its answer when the fiber is in a
 * transaction of this module: it goes out with the transaction's next
 * statement, and its failure fails that one (or the commit). Elsewhere it
 * simply runs. Only for statements whose answer is not needed and whose
 * effects only later statements observe: writes, and locks (a lock is held
 * before the next statement runs).
 */
export const deferred = (sql: SqlClient.SqlClient) => <E>(statement: Effect.Effect<unknown, E>): Effect.Effect<void, E> =>
  Effect.flatMap(Effect.serviceOption(sql.transactionService), (level) => {
    const conn = Option.isSome(level) ? level.value[0] : undefined
    return conn instanceof PipelinedConnection ? enqueue(conn, statement) : Effect.asVoid(statement)
  })

/**
 * Runs `statement` as `deferred` does, keeping its answer: the effect it answers awaits it. In a transaction of this
 * module the statement goes out with the transaction's next one (its COMMIT at the latest), so a caller that awaits
 * the answer once the transaction is done pays no round trip for it; its failure fails that statement (or the
 * commit), as a deferred one's does. Elsewhere it runs now. Only for statements whose answer decides nothing the
 * transaction does after them.
 */
export const ahead = (sql: SqlClient.SqlClient) => <A, E>(statement: Effect.Effect<A, E>): Effect.Effect<Effect.Effect<A, E>> =>
  Effect.flatMap(Effect.serviceOption(sql.transactionService), (level) => {
    const conn = Option.isSome(level) ? level.value[0] : undefined
    if (!(conn instanceof PipelinedConnection)) return Effect.exit(statement)
    return Effect.map(Effect.forkDetach(statement, { startImmediately: true }), (fiber) => {
      conn.pending.push(fiber)
      return Fiber.join(fiber)
    })
  })

/**
 * Started now, so it is queued on the connection before anything the caller issues next. Detached: it belongs to the
 * transaction, not to the fiber that issued it (a branch of a concurrent `Effect.all` ends before its statement is
 * answered; the transaction's next statement or its end settles it).
 */
const enqueue = (conn: PipelinedConnection, statement: Effect.Effect<unknown, unknown>) =>
  Effect.map(Effect.forkDetach(statement, { startImmediately: true }), (fiber) => {
    conn.pending.push(fiber)
  })

/**
 * The store-pg transaction the fiber is in, for this package's modules that write without `SqlClient` (the job
 * queue's pg-boss inserts): its database's URL, and a statement queued in it as `deferred` queues one.
 */
export const CurrentPgTransaction = Context.Reference<
  { readonly url: string; readonly defer: (sql: string, params: ReadonlyArray<unknown>) => Effect.Effect<void> } | undefined
>("@parley/store-pg/CurrentPgTransaction", { defaultValue: () => undefined })

/** Per open level, the permit its savepoints take: two fibers of one transaction must not interleave theirs. */
const savepointPermits = new WeakMap<Level, Semaphore.Semaphore>()

const rolledBack = new SqlError({
  reason: new UnknownError({
    cause: new Error("COMMIT rolled back an aborted transaction"),
    message: "COMMIT rolled back an aborted transaction",
    operation: "commit"
  })
})

/** Opens transactions on PostgreSQL; store-pg's repositories and its `Transactor` share it. */
export class PgTransactions extends Context.Service<PgTransactions, {
  /**
   * `effect` in a transaction, or in a savepoint of the one the fiber is in.
   * The connection joins the context as one service (effect's
   * `SqlClient.withTransaction` copies the fiber's whole context per
   * transaction).
   */
  readonly transaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E | SqlError, R>
}>()("@parley/store-pg/PgTransactions") {
  static readonly layer = Layer.effect(
    PgTransactions,
    Effect.gen(function*() {
      const pg = yield* PgClient.PgClient
      const sql: SqlClient.SqlClient = pg
      const pool = yield* PgPool.make({
        ...pg.config,
        multiplex: true,
        // One transaction per session at a time: its statements are the only ones on the wire.
        multiplexConcurrency: 1,
        maxConnections: TRANSACTION_CONNECTIONS
      })
      const url = pg.config.url === undefined ? undefined : Redacted.value(pg.config.url)
      const control = (conn: SqlConnection.Connection, statement: string) => conn.executeRaw(statement, [])
      const commit = (conn: SqlConnection.Connection, statement: string) =>
        Effect.flatMap(
          control(conn, statement),
          (result) => (result as PgConnection.Result).command === "ROLLBACK" ? Effect.fail(rolledBack) : Effect.void
        )
      const transaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | SqlError, R> =>
        Effect.uninterruptibleMask((restore) => {
          const within = (level: Level, end: string, undo: string): Effect.Effect<A, E | SqlError, R> => {
            savepointPermits.set(level, Semaphore.makeUnsafe(1))
            const conn = level[0]
            // The commit is where a deferred statement's failure may show: then the level is undone too (a savepoint
            // left aborted would refuse everything its transaction does next). A savepoint with no deferred statement
            // left unanswered cannot fail at its release: that goes out with the transaction's next statement.
            const close = Effect.suspend(() =>
              level[1] > 0 && conn instanceof PipelinedConnection && conn.pending.length === 0
                ? enqueue(conn, control(conn, end))
                : commit(conn, end)
            )
            const current = conn instanceof PipelinedConnection && url !== undefined
              ? { url, defer: (text: string, params: ReadonlyArray<unknown>) => enqueue(conn, conn.executeRaw(text, params)) }
              : undefined
            return restore(Effect.provideService(Effect.provideService(effect, sql.transactionService, level), CurrentPgTransaction, current)).pipe(
              Effect.tap(() => close),
              Effect.onExit((exit) => {
                if (Exit.isSuccess(exit)) return Effect.void
                // What was deferred is answered before the rollback; a failure of it is already the exit's cause.
                if (conn instanceof PipelinedConnection) conn.pending = []
                return Effect.orDie(control(conn, undo))
              })
            )
          }
          return Effect.flatMap(Effect.serviceOption(sql.transactionService), (outer): Effect.Effect<A, E | SqlError, R> => {
            if (Option.isNone(outer)) {
              return Effect.scoped(Effect.flatMap(restore(pool.get), (session) => {
                const conn = new PipelinedConnection(session)
                return Effect.andThen(enqueue(conn, control(conn, "BEGIN")), within([conn, 0], "COMMIT", "ROLLBACK"))
              }))
            }
            const [conn, depth] = outer.value
            const name = `parley_savepoint_${depth + 1}`
            // A level opened by `SqlClient.withTransaction` itself has no permit here: its savepoints are not ordered.
            const permit = savepointPermits.get(outer.value) ?? Semaphore.makeUnsafe(1)
            return permit.withPermit(
              Effect.andThen(
                conn instanceof PipelinedConnection ? enqueue(conn, control(conn, `SAVEPOINT ${name}`)) : control(conn, `SAVEPOINT ${name}`),
                within([conn, depth + 1], `RELEASE SAVEPOINT ${name}`, `ROLLBACK TO SAVEPOINT ${name}`)
              )
            )
          })
        })
      return PgTransactions.of({ transaction })
    })
  )
}

export const layerTransactor = Layer.effect(
  Transactor,
  Effect.gen(function*() {
    const { transaction } = yield* PgTransactions
    return Transactor.of({
      withTransaction: <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        // BEGIN/COMMIT failing is an outage, not something the caller's error type speaks of.
        transaction(effect).pipe(
          Effect.catchIf(isSqlError, Effect.die),
          // No call-site stack trace: it is always this line, and capturing it cost ~1% of the host's CPU on a chain
          // of steps (three transactions per run).
          Effect.withSpan("Transactor.withTransaction", undefined, { captureStackTrace: false })
        ) as Effect.Effect<A, E, R>
    })
  })
)
