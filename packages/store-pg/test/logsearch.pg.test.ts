import { LOG_SOURCES, logEntry, LogSearch, logWords } from "@parley/core"
import { logSearchConformance } from "@parley/core/testing/conformance"
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { layerStorage } from "../src/Storage.ts"
import { layerTestDatabase } from "./pg.ts"

const storage = layerStorage.pipe(Layer.provideMerge(layerTestDatabase))

logSearchConformance("log search (postgres)", storage)

layer(storage, { excludeTestServices: true })("log search (postgres), entries written before a UUID was one word", (it) => {
  it.effect("finds and erases them by the whole UUID, and makes an entry's vector of its words", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const logs = yield* LogSearch
      const contact = "0193a5b2-7c1d-7abc-8def-0123456789ab"
      const now = new Date().toISOString()
      // As this adapter wrote it before: the UUID's five parts in the words and the vector.
      const words = `message to 0193a5b2 7c1d 7abc 8def 0123456789ab`
      yield* sql`
        INSERT INTO log_entries (id, project_id, source, occurred_at, ingested_at, level, problem, message, attributes, search_text, search)
        VALUES ('old', 'prj_old', 'flow_event', ${now}, ${now}, 'info', false, ${`message to ${contact}`}, '{}', ${words}, ${words}::tsvector)`
      const query = (text: string) =>
        Effect.map(
          logs.search({
            projectId: "prj_old",
            sources: LOG_SOURCES,
            since: new Date(Date.now() - 60_000).toISOString(),
            until: new Date(Date.now() + 60_000).toISOString(),
            words: logWords(text),
            filters: [],
            problemsOnly: false,
            limit: 10,
            after: null
          }),
          (page) => page.entries.map((e) => e.id)
        )
      assert.deepStrictEqual(yield* query(contact.toUpperCase()), ["old"])
      assert.deepStrictEqual(yield* query(`${contact} message`), ["old"])
      assert.deepStrictEqual(yield* query("0193a5b2-7c1d-7abc-8def-0123456789ac"), [])
      assert.strictEqual(yield* logs.eraseMentions("prj_old", [contact]), 1)
      assert.deepStrictEqual(yield* query("message"), [])

      // A new entry's vector is its words, the UUID one of them, each once.
      yield* logs.append([logEntry({
        id: "new",
        project_id: "prj_new",
        source: "flow_event",
        occurred_at: now,
        ingested_at: now,
        problem: false,
        message: `message to ${contact} and ${contact}`
      })])
      const rows = yield* sql<{ readonly search: string }>`SELECT search::text AS search FROM log_entries WHERE id = 'new'`
      assert.deepStrictEqual(rows.map((r) => r.search), [`'0193a5b27c1d7abc8def0123456789ab' 'and' 'message' 'to'`])
    }))
})
