/**
 * Rows are decoded, not cast: a row the code cannot read (a value written by hand, a migration not run) fails
 * as a `StorageError` that names the query and the field, never as a record with a wrong field in it, and
 * never with the row's value in the message.
 */
import { assert, layer } from "@effect/vitest"
import { MessagesRepo, StorageError, WorkflowsRepo } from "@parley/core"
import { Cause, Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { PREPARED_VALUES_ROWS } from "../src/Rows.ts"
import { layerStorage } from "../src/Storage.ts"
import { layerTestDatabase } from "./pg.ts"

const NOW = "2026-01-01T00:00:00.000Z"

/** A workflow row written behind the repository's back, with `status` and `definition` as given. */
const givenWorkflowRow = (id: string, status: string, definition: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`
      INSERT INTO projects (id, name, disabled, created_at, updated_at) VALUES ('p-rows', 'Rows', false, ${NOW}, ${NOW})
      ON CONFLICT (id) DO NOTHING`
    yield* sql`
      INSERT INTO workflows (id, project_id, name, slug, description, status, lock_version, message_debounce_seconds,
        agent_default_tools_version, inbound_message_read_mode, created_at, updated_at, execution_count,
        last_executed_at, created_by, definition)
      VALUES (${id}, 'p-rows', ${id}, ${id}, NULL, ${status}, 1, NULL, NULL, 'disabled', ${NOW}, ${NOW}, 0, NULL,
        '{"id":"k","name":"Key"}', ${definition}::jsonb)`
  }).pipe(Effect.orDie)

const storageErrorOf = <A, E>(exit: Exit.Exit<A, E>): StorageError => {
  assert.isTrue(Exit.isFailure(exit))
  const defect = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
  assert.instanceOf(defect, StorageError)
  return defect as StorageError
}

layer(layerStorage.pipe(Layer.provideMerge(layerTestDatabase)), { excludeTestServices: true })("rows (postgres)", (it) => {
  it.effect("a row with a value the record does not allow is a StorageError naming the table and the field", () =>
    Effect.gen(function*() {
      yield* givenWorkflowRow("w-status", "retired-by-hand", `{"nodes":[],"edges":[]}`)
      const repo = yield* WorkflowsRepo
      const error = storageErrorOf(yield* Effect.exit(repo.findById("p-rows", "w-status")))
      assert.strictEqual(error.query, "workflows")
      assert.strictEqual(error.field, "status")
      assert.notInclude(error.reason, "retired-by-hand")
      assert.include(error.message, "workflows")
      assert.include(error.message, "status")
    }))

  it.effect("a jsonb column of the wrong shape names its field too, and a list fails the same way", () =>
    Effect.gen(function*() {
      yield* givenWorkflowRow("w-definition", "draft", `[1, 2]`)
      const repo = yield* WorkflowsRepo
      const found = storageErrorOf(yield* Effect.exit(repo.findById("p-rows", "w-definition")))
      assert.strictEqual(found.query, "workflows")
      assert.strictEqual(found.field, "definition")
      const listed = storageErrorOf(
        yield* Effect.exit(repo.list("p-rows", {}, { mode: "page", page: 1, perPage: 50 }))
      )
      assert.strictEqual(listed.query, "workflows")
    }))

  it.effect("a keyed VALUES list of many rows is not left prepared: each row count would stay in the connection's cache", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* MessagesRepo
      const updates = (n: number) =>
        Array.from({ length: n }, (_, i) => ({ project_id: "p-rows", id: `m-${i}`, status: "sent" as const, statuses: [], updated_at: NOW }))
      // One connection throughout: the statements a connection holds prepared are its own.
      const prepared = yield* sql.withTransaction(Effect.gen(function*() {
        yield* repo.setStatuses(updates(PREPARED_VALUES_ROWS))
        yield* repo.setStatuses(updates(PREPARED_VALUES_ROWS + 1))
        yield* repo.setStatuses(updates(500))
        const rows = yield* sql`
          SELECT statement FROM pg_prepared_statements
          WHERE statement LIKE '%UPDATE msg_messages AS m SET status%' AND statement NOT LIKE '%pg_prepared_statements%'`
        return rows.map((row) => String(row.statement))
      }))
      // The small count stays prepared (it recurs); the larger ones ran, but left nothing behind.
      assert.deepStrictEqual(prepared.map((statement) => statement.match(/::timestamptz\)/g)?.length), [PREPARED_VALUES_ROWS])
    }))
})
