/**
 * What `Transactor.ts` adds to PostgreSQL transactions: statements nobody
 * waits for (`deferred`) go out with the next one, in order, and their
 * failures are reported as theirs.
 */
import { assert, layer } from "@effect/vitest"
import { Cause, Effect, Exit, Layer, Stream } from "effect"
import { SqlClient } from "effect/sql"
import { isSqlError } from "effect/sql/SqlError"
import { deferred, PgTransactions } from "../src/Transactor.ts"
import { layerTestDatabase } from "./pg.ts"

const setup = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE IF NOT EXISTS pipelined (id text PRIMARY KEY, n integer NOT NULL)`
  return { sql, later: deferred(sql), transaction: (yield* PgTransactions).transaction }
})

/** The SQLSTATE of the first SQL failure in `exit`. */
const sqlState = (exit: Exit.Exit<unknown, unknown>) => {
  if (Exit.isSuccess(exit)) return undefined
  const error = Cause.squash(exit.cause)
  if (!isSqlError(error)) return undefined
  const cause = (error.reason as { readonly cause?: { readonly code?: string } }).cause
  return cause?.code ?? String(error)
}

layer(PgTransactions.layer.pipe(Layer.provideMerge(layerTestDatabase)), { excludeTestServices: true })(
  "PgTransactions",
  (it) => {
    it.effect("runs deferred statements in the order they were issued, before the next statement", () =>
      Effect.gen(function*() {
        const { later, sql, transaction } = yield* setup
        const seen = yield* transaction(Effect.gen(function*() {
          yield* later(sql`INSERT INTO pipelined (id, n) VALUES ('order', 1)`)
          yield* later(sql`UPDATE pipelined SET n = n * 10 WHERE id = 'order'`)
          yield* later(sql`UPDATE pipelined SET n = n + 2 WHERE id = 'order'`)
          return yield* sql<{ readonly n: number }>`SELECT n FROM pipelined WHERE id = 'order'`
        }))
        assert.deepStrictEqual(seen.map((r) => r.n), [12])
      }))

    it.effect("reports the deferred statement's own failure, not the aborted transaction's, and keeps nothing", () =>
      Effect.gen(function*() {
        const { later, sql, transaction } = yield* setup
        yield* sql`INSERT INTO pipelined (id, n) VALUES ('taken', 0)`
        const atNext = yield* Effect.exit(transaction(Effect.gen(function*() {
          yield* later(sql`INSERT INTO pipelined (id, n) VALUES ('kept-not', 1)`)
          yield* later(sql`INSERT INTO pipelined (id, n) VALUES ('taken', 1)`)
          yield* sql`SELECT 1`
        })))
        assert.strictEqual(sqlState(atNext), "23505", "unique violation, reported by the next statement")
        const atCommit = yield* Effect.exit(transaction(later(sql`INSERT INTO pipelined (id, n) VALUES ('taken', 2)`)))
        assert.strictEqual(sqlState(atCommit), "23505", "unique violation, reported by the commit")
        const rows = yield* sql<{ readonly id: string; readonly n: number }>`
          SELECT id, n FROM pipelined WHERE id IN ('taken', 'kept-not') ORDER BY id`
        assert.deepStrictEqual(rows.map((r) => [r.id, r.n]), [["taken", 0]])
      }))

    it.effect("streams rows inside a transaction, after the deferred statements before it", () =>
      Effect.gen(function*() {
        const { later, sql, transaction } = yield* setup
        const streamed = yield* transaction(Effect.gen(function*() {
          yield* later(sql`INSERT INTO pipelined (id, n) VALUES ('streamed', 3)`)
          const rows = yield* Stream.runCollect(sql<{ readonly n: number }>`SELECT n FROM pipelined WHERE id = 'streamed'`.stream)
          yield* later(sql`UPDATE pipelined SET n = 4 WHERE id = 'streamed'`)
          return rows
        }))
        assert.deepStrictEqual(Array.from(streamed, (r) => r.n), [3])
        const after = yield* sql<{ readonly n: number }>`SELECT n FROM pipelined WHERE id = 'streamed'`
        assert.deepStrictEqual(after.map((r) => r.n), [4])
      }))

    it.effect("runs a deferred statement at once outside a transaction", () =>
      Effect.gen(function*() {
        const { later, sql } = yield* setup
        yield* later(sql`INSERT INTO pipelined (id, n) VALUES ('alone', 7)`)
        const rows = yield* sql<{ readonly n: number }>`SELECT n FROM pipelined WHERE id = 'alone'`
        assert.deepStrictEqual(rows.map((r) => r.n), [7])
        const refused = yield* Effect.exit(later(sql`INSERT INTO pipelined (id, n) VALUES ('alone', 8)`))
        assert.strictEqual(sqlState(refused), "23505")
      }))

    it.effect("fails a commit PostgreSQL turned into a rollback", () =>
      Effect.gen(function*() {
        const { sql, transaction } = yield* setup
        const exit = yield* Effect.exit(transaction(Effect.gen(function*() {
          yield* sql`INSERT INTO pipelined (id, n) VALUES ('swallowed', 1)`
          // A failure the caller chose to ignore still aborted the transaction.
          yield* Effect.ignore(sql`SELECT 1 / 0`)
        })))
        assert.isTrue(Exit.isFailure(exit))
        const rows = yield* sql`SELECT 1 FROM pipelined WHERE id = 'swallowed'`
        assert.strictEqual(rows.length, 0)
      }))
  }
)
