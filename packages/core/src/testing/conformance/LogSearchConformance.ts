/** The behaviour every `LogSearch` adapter owes (decisions 4.7: words, window, filters, problems, keyset pages, erasure, retention), written once. */
import { assert, layer } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import { type LogEntryInput, logEntry } from "../../logs/LogEntry.ts"
import { LOG_SOURCES, type LogEntryRecord, type LogQuery, LogSearch, logWords } from "../../logs/LogSearch.ts"
import { at, uniqueId } from "./fixtures.ts"

const minute = 60_000

const entry = (projectId: string, ms: number, overrides: Partial<LogEntryInput> = {}): LogEntryRecord =>
  logEntry({
    id: uniqueId("log"),
    project_id: projectId,
    source: "external_api_log",
    occurred_at: at(ms),
    ingested_at: at(ms + 5),
    problem: false,
    message: "GET /platform/v1/workflows 200",
    ...overrides
  })

const query = (projectId: string, overrides: Partial<LogQuery> = {}): LogQuery => ({
  projectId,
  sources: LOG_SOURCES,
  since: at(-60 * minute),
  until: at(60 * minute),
  words: [],
  filters: [],
  problemsOnly: false,
  limit: 100,
  after: null,
  ...overrides
})

const ids = (entries: ReadonlyArray<LogEntryRecord>) => entries.map((e) => e.id)

export const logSearchConformance = <E>(name: string, storage: Layer.Layer<LogSearch, E>): void =>
  layer(storage, { excludeTestServices: true })(name, (it) => {
    it.effect("reads back what was appended, newest first, and only the project's own", () =>
      Effect.gen(function*() {
        const logs = yield* LogSearch
        const project = uniqueId("prj")
        const older = entry(project, 0, {
          source: "webhook_delivery",
          problem: true,
          level: "warning",
          status: "failed",
          webhook_id: "wh_1",
          webhook_url: "https://example.com/hook",
          response_status: 500,
          response_time_ms: 12,
          error_message: "HTTP 500",
          attributes: { attempt: 2, max_attempts: 3 },
          payload: { nested: { list: [1, "two"] }, flag: true }
        })
        const newer = entry(project, minute)
        yield* logs.append([older, newer, entry(uniqueId("prj"), minute)])
        const page = yield* logs.search(query(project))
        assert.deepStrictEqual(page, { entries: [newer, older], hasMore: false })
      }))

    it.effect("stores text PostgreSQL could not hold as the replacement character", () =>
      Effect.gen(function*() {
        const logs = yield* LogSearch
        const project = uniqueId("prj")
        const odd = entry(project, 0, { message: "nul\u0000here", endpoint: "/a\uD800", payload: { ["k\u0000"]: ["\uDC00x"] } })
        yield* logs.append([odd])
        const [found] = (yield* logs.search(query(project))).entries
        assert.strictEqual(found?.message, "nul\uFFFDhere")
        assert.strictEqual(found?.endpoint, "/a\uFFFD")
        assert.deepStrictEqual(found?.payload, { ["k\uFFFD"]: ["\uFFFDx"] })
      }))

    it.effect("finds entries holding every word of the query as whole words", () =>
      Effect.gen(function*() {
        const logs = yield* LogSearch
        const project = uniqueId("prj")
        const order = entry(project, 0, { message: "Order shipped", payload: { to: "+1 555-0100", note: "Café Überall" } })
        const refund = entry(project, 1, { message: "Refund issued for order" })
        yield* logs.append([order, refund])
        const found = (text: string) => Effect.map(logs.search(query(project, { words: logWords(text) })), (p) => ids(p.entries))
        assert.deepStrictEqual(yield* found("ORDER"), [refund.id, order.id])
        assert.deepStrictEqual(yield* found("order shipped"), [order.id])
        assert.deepStrictEqual(yield* found("555 0100"), [order.id])
        assert.deepStrictEqual(yield* found("überall"), [order.id])
        // Whole words only: a prefix or a part of a word finds nothing.
        assert.deepStrictEqual(yield* found("ship"), [])
        assert.deepStrictEqual(yield* found("order missing"), [])
      }))

    it.effect("finds an entry by the values of its attributes and payload, not their keys, and a UUID whole", () =>
      Effect.gen(function*() {
        const logs = yield* LogSearch
        const project = uniqueId("prj")
        const contact = "0193A5B2-7C1D-7ABC-8DEF-0123456789AB"
        const failed = entry(project, 0, {
          source: "flow_event",
          message: "step_failed at send_1",
          flow_execution_id: "01a22334-5a48-7002-aa7c-e695d2f57eae",
          error_message: "Recipient phone number not on WhatsApp",
          attributes: { seq: 12, direction: "forward" },
          payload: { to: "+1 (555) 010-0199", contact_id: contact, message_id: "wamid.HBgLMTU1NTAx", text: "Your order shipped" }
        })
        const other = entry(project, 1, { message: `GET /platform/v1/contacts/${contact.toLowerCase()}x 200` })
        yield* logs.append([failed, other])
        const found = (text: string) => Effect.map(logs.search(query(project, { words: logWords(text) })), (p) => ids(p.entries))
        // Every value a user looks for: ids (any case), a phone number, a message's id and text, the error.
        assert.deepStrictEqual(yield* found(contact), [failed.id])
        assert.deepStrictEqual(yield* found(`contact ${contact.toLowerCase()}`), [])
        assert.deepStrictEqual(yield* found("01a22334-5a48-7002-aa7c-e695d2f57eae"), [failed.id])
        assert.deepStrictEqual(yield* found("555 010 0199"), [failed.id])
        assert.deepStrictEqual(yield* found("wamid.HBgLMTU1NTAx"), [failed.id])
        assert.deepStrictEqual(yield* found("order shipped"), [failed.id])
        assert.deepStrictEqual(yield* found("not on whatsapp"), [failed.id])
        assert.deepStrictEqual(yield* found("forward 12"), [failed.id])
        // Keys are no words; a UUID is one word, so a part of it finds nothing (as a part of any other word).
        assert.deepStrictEqual(yield* found("direction"), [])
        assert.deepStrictEqual(yield* found("message_id"), [])
        assert.deepStrictEqual(yield* found("e695d2f57eae"), [])
        // A UUID followed by more letters or digits is not one: its parts are words.
        assert.deepStrictEqual(yield* found("0123456789abx"), [other.id])
      }))

    it.effect("finds a word of any length, one too long for a PostgreSQL lexeme too, as a whole word", () =>
      Effect.gen(function*() {
        const logs = yield* LogSearch
        const project = uniqueId("prj")
        const hex = "ab12".repeat(750)
        const kanji = "日".repeat(700)
        const long = entry(project, 0, { message: `token ${hex} twice ${hex}`, payload: { name: kanji } })
        const other = entry(project, 1, { message: `token ${hex}0` })
        yield* logs.append([long, other])
        const found = (text: string) => Effect.map(logs.search(query(project, { words: logWords(text) })), (p) => ids(p.entries))
        assert.deepStrictEqual(yield* found(`${hex} token`), [long.id])
        assert.deepStrictEqual(yield* found(kanji), [long.id])
        assert.deepStrictEqual(yield* found(`${hex}0`), [other.id])
        assert.deepStrictEqual(yield* found(hex.slice(4)), [])
        assert.deepStrictEqual(yield* found("token"), [other.id, long.id])
      }))

    it.effect("keeps to the sources and the window, both bounds included", () =>
      Effect.gen(function*() {
        const logs = yield* LogSearch
        const project = uniqueId("prj")
        const api = entry(project, 0)
        const step = entry(project, minute, { source: "flow_event" })
        const upstream = entry(project, 2 * minute, { source: "msg_webhook_event" })
        yield* logs.append([api, step, upstream])
        const found = (overrides: Partial<LogQuery>) => Effect.map(logs.search(query(project, overrides)), (p) => ids(p.entries))
        assert.deepStrictEqual(yield* found({ sources: ["flow_event", "external_api_log"] }), [step.id, api.id])
        assert.deepStrictEqual(yield* found({ since: at(0), until: at(minute) }), [step.id, api.id])
        assert.deepStrictEqual(yield* found({ since: at(1), until: at(2 * minute) }), [upstream.id, step.id])
      }))

    it.effect("applies every filter of the catalogue, all of them at once", () =>
      Effect.gen(function*() {
        const logs = yield* LogSearch
        const project = uniqueId("prj")
        const a = entry(project, 0, { http_method: "GET", endpoint: "/platform/v1/Workflows/abc", response_status: 404, api_key_id: "key_1" })
        const b = entry(project, 1, { http_method: "POST", endpoint: "/platform/v1/events", response_status: 201, api_key_id: "key_1" })
        const c = entry(project, 2, {
          source: "flow_event",
          flow_execution_id: "exe_1",
          flow_id: "wf_1",
          step_identifier: "ask",
          event_type: "step_failed",
          resource_id: "exe_1",
          phone_number_id: "pn_1",
          status: "failed"
        })
        const d = entry(project, 3, { source: "webhook_delivery", webhook_id: "wh_1", status: "delivered" })
        yield* logs.append([a, b, c, d])
        const found = (filters: LogQuery["filters"]) => Effect.map(logs.search(query(project, { filters })), (p) => ids(p.entries))
        assert.deepStrictEqual(yield* found([{ key: "endpoint_contains", value: "WORKFLOWS" }]), [a.id])
        assert.deepStrictEqual(yield* found([{ key: "endpoint_contains", value: "/platform/v1/" }]), [b.id, a.id])
        assert.deepStrictEqual(yield* found([{ key: "response_status", value: "201" }]), [b.id])
        assert.deepStrictEqual(yield* found([{ key: "http_method", value: "GET" }]), [a.id])
        assert.deepStrictEqual(yield* found([{ key: "api_key_id", value: "key_1" }, { key: "http_method", value: "POST" }]), [b.id])
        for (const key of ["flow_execution_id", "resource_id"] as const) assert.deepStrictEqual(yield* found([{ key, value: "exe_1" }]), [c.id])
        assert.deepStrictEqual(yield* found([{ key: "flow_id", value: "wf_1" }, { key: "step_identifier", value: "ask" }]), [c.id])
        assert.deepStrictEqual(yield* found([{ key: "event_type", value: "step_failed" }, { key: "phone_number_id", value: "pn_1" }]), [c.id])
        assert.deepStrictEqual(yield* found([{ key: "status", value: "delivered" }]), [d.id])
        assert.deepStrictEqual(yield* found([{ key: "webhook_id", value: "wh_1" }]), [d.id])
        // Exact: another case or a part of the value is another value.
        assert.deepStrictEqual(yield* found([{ key: "webhook_id", value: "WH_1" }]), [])
        assert.deepStrictEqual(yield* found([{ key: "flow_execution_id", value: "exe" }]), [])
      }))

    it.effect("finds only problems when asked", () =>
      Effect.gen(function*() {
        const logs = yield* LogSearch
        const project = uniqueId("prj")
        const failed = entry(project, 0, { problem: true })
        yield* logs.append([failed, entry(project, 1)])
        const page = yield* logs.search(query(project, { problemsOnly: true }))
        assert.deepStrictEqual(ids(page.entries), [failed.id])
      }))

    it.effect("pages newest first by (occurred_at, id) without losing or repeating an entry", () =>
      Effect.gen(function*() {
        const logs = yield* LogSearch
        const project = uniqueId("prj")
        // Three share an instant: the id orders them.
        const entries = [entry(project, 0), entry(project, minute), entry(project, minute), entry(project, minute), entry(project, 2 * minute)]
        yield* logs.append(entries)
        const expected = [...entries].sort((x, y) => x.occurred_at === y.occurred_at ? (x.id < y.id ? 1 : -1) : x.occurred_at < y.occurred_at ? 1 : -1)
        const seen: Array<string> = []
        let after: LogQuery["after"] = null
        const more: Array<boolean> = []
        for (;;) {
          const page: { readonly entries: ReadonlyArray<LogEntryRecord>; readonly hasMore: boolean } = yield* logs.search(query(project, { limit: 2, after }))
          seen.push(...ids(page.entries))
          more.push(page.hasMore)
          if (!page.hasMore) break
          const last = page.entries[page.entries.length - 1]!
          after = { occurred_at: last.occurred_at, id: last.id }
        }
        assert.deepStrictEqual(seen, ids(expected))
        assert.deepStrictEqual(more, [true, true, false])
      }))

    it.effect("erases the project's entries mentioning a term, in their words or their payload", () =>
      Effect.gen(function*() {
        const logs = yield* LogSearch
        const project = uniqueId("prj")
        const inWords = entry(project, 0, { message: "Message to +1 (555) 010-0199" })
        const inNumber = entry(project, 1, { source: "msg_webhook_event", phone_number_id: "15550100199" })
        const inPayload = entry(project, 2, { source: "flow_event", payload: { contact: { wa_id: "15550100199" } } })
        const unrelated = entry(project, 3, { message: "Message to 15550100200" })
        const otherProject = entry(uniqueId("prj"), 4, { phone_number_id: "15550100199" })
        yield* logs.append([inWords, inNumber, inPayload, unrelated, otherProject])
        assert.strictEqual(yield* logs.eraseMentions(project, ["15550100199", "555 010 0199", ""]), 3)
        assert.deepStrictEqual(ids((yield* logs.search(query(project))).entries), [unrelated.id])
        assert.deepStrictEqual(ids((yield* logs.search(query(otherProject.project_id))).entries), [otherProject.id])
        assert.strictEqual(yield* logs.eraseMentions(project, []), 0)
      }))

    it.effect("prunes entries older than a time, at most a batch at once", () =>
      Effect.gen(function*() {
        const logs = yield* LogSearch
        const project = uniqueId("prj")
        // Far in the past, so entries of other tests (a shared store) are never older.
        const old = [entry(project, -400 * 24 * 60 * minute), entry(project, -399 * 24 * 60 * minute), entry(project, -398 * 24 * 60 * minute)]
        const kept = entry(project, 0)
        yield* logs.append([...old, kept])
        const before = at(-397 * 24 * 60 * minute)
        assert.strictEqual(yield* logs.prune(before, 2), 2)
        assert.strictEqual(yield* logs.prune(before, 2), 1)
        assert.strictEqual(yield* logs.prune(before, 2), 0)
        const left = yield* logs.search(query(project, { since: at(-500 * 24 * 60 * minute) }))
        assert.deepStrictEqual(ids(left.entries), [kept.id])
      }))
  })
