/**
 * Log search (decisions 4.7): checks the parameters of `GET`/`POST /log_search`, turns them into one `LogSearch`
 * query over the project's entries, and shapes the answer (window, events, cursor, highlight). A failing store
 * answers 200 with `search_failed`, never a 500: the log must not be why a dashboard breaks.
 */
import { Clock, Context, Effect, Layer, Predicate } from "effect"
import { LOG_FILTER_KEYS, LOG_SOURCES, LOG_TEXT_FIELDS, type LogEntryRecord, type LogFilter, type LogFilterKey, LogSearch, type LogSource, logWords } from "./LogSearch.ts"
import { type BadRequest, invalid, type Unprocessable, unprocessable } from "../shared/ApiError.ts"
import { decodeCursor, encodeCursor } from "../shared/Pagination.ts"
import { dateTimeRefusal, toIso } from "../shared/Time.ts"
import { DETAIL_FIELDS, FILTER_SUGGESTIONS, SOURCES } from "./Catalog.ts"
import { LogRecorder } from "./LogRecorder.ts"
import type { LogCatalogAnswer, LogEvent, LogSearchAnswer } from "./LogSearchApi.ts"

/** The parameters of either form: a query string's values are text, a body's typed. */
export interface LogSearchParams {
  readonly query?: string | null | undefined
  readonly source?: string | undefined
  readonly period?: string | undefined
  readonly around?: string | undefined
  readonly problems_only?: boolean | undefined
  readonly errors_only?: boolean | undefined
  readonly filters?: unknown
  readonly limit?: number | string | undefined
  readonly cursor?: string | undefined
  readonly highlight_event_id?: string | undefined
  readonly highlight_resource_id?: string | undefined
}

const HOUR_MS = 60 * 60 * 1000
const PERIODS: Readonly<Record<string, number>> = { "24h": 24 * HOUR_MS, "7d": 7 * 24 * HOUR_MS }
/** `period=context`: this long either side of `around`. */
export const CONTEXT_MS = 15 * 60 * 1000

const MALFORMED_FILTERS = "filters must be an object or a list of {key, value} pairs"

const sourceNames = new Map<string, ReadonlyArray<LogSource>>([
  ["all", LOG_SOURCES],
  ...SOURCES.flatMap((s) => [s.value, ...s.aliases].map((name) => [name, [s.value]] as const))
])

const refuse = (path: string, error: string) => Effect.fail(unprocessable(error, [{ path, message: error }]))

const isFilterKey = (key: string): key is LogFilterKey => (LOG_FILTER_KEYS as ReadonlyArray<string>).includes(key)

/** A filter's value as text: a string, a finite number or a boolean. */
const filterValue = (value: unknown): string | undefined =>
  Predicate.isString(value) ? value : (Predicate.isNumber(value) && Number.isFinite(value)) || Predicate.isBoolean(value) ? String(value) : undefined

const parseFilters = (raw: unknown): Effect.Effect<ReadonlyArray<LogFilter>, Unprocessable> =>
  Effect.gen(function*() {
    if (raw === undefined || raw === null) return []
    const pairs: Array<readonly [string, unknown]> = []
    if (Array.isArray(raw)) {
      for (const item of raw) {
        if (!Predicate.isObject(item) || !Predicate.isString(item["key"]) || !("value" in item)) return yield* refuse("filters", MALFORMED_FILTERS)
        pairs.push([item["key"], item["value"]])
      }
    } else if (Predicate.isObject(raw)) {
      pairs.push(...Object.entries(raw))
    } else {
      return yield* refuse("filters", MALFORMED_FILTERS)
    }
    const filters: Array<LogFilter> = []
    for (const [key, value] of pairs) {
      const text = filterValue(value)
      if (text === undefined) return yield* refuse("filters", MALFORMED_FILTERS)
      if (!isFilterKey(key)) {
        return yield* refuse(`filters.${key}`, `unknown filter key ${JSON.stringify(key)}: use one of ${LOG_FILTER_KEYS.join(", ")}`)
      }
      if (key === "response_status" && !/^\d{3}$/.test(text)) {
        return yield* refuse("filters.response_status", "filters.response_status must be an HTTP status (an integer 100-599)")
      }
      filters.push({ key, value: text })
    }
    return filters
  })

const parseLimit = (raw: number | string | undefined) => {
  if (raw === undefined) return Effect.succeed(20)
  const n = typeof raw === "number" ? raw : /^\s*\d+\s*$/.test(raw) ? Number(raw) : Number.NaN
  return Number.isInteger(n) && n >= 1 && n <= 100 ? Effect.succeed(n) : refuse("limit", "limit must be between 1 and 100")
}

const iso = (ms: number) => new Date(ms).toISOString()

const toEvent = (e: LogEntryRecord, highlighted: boolean): LogEvent => {
  const fields = Object.fromEntries(LOG_TEXT_FIELDS.map((name) => [name, e[name]]))
  return {
    ...fields,
    id: e.id,
    source: e.source,
    timestamp: e.occurred_at,
    occurred_at: e.occurred_at,
    ingested_at: e.ingested_at,
    level: e.level,
    message: e.message,
    response_status: e.response_status,
    response_time_ms: e.response_time_ms,
    attributes: e.attributes,
    payload: e.payload,
    highlighted
  } as LogEvent
}

const catalogAnswer: LogCatalogAnswer = {
  available: true,
  catalog: { sources: SOURCES, filter_suggestions: FILTER_SUGGESTIONS, detail_fields: DETAIL_FIELDS }
}

export class Logs extends Context.Service<Logs, {
  readonly search: (projectId: string, params: LogSearchParams) => Effect.Effect<LogSearchAnswer, Unprocessable | BadRequest>
  readonly catalog: Effect.Effect<LogCatalogAnswer>
}>()("@parley/core/logs/Logs") {
  static readonly layer = Layer.effect(
    Logs,
    Effect.gen(function*() {
      const store = yield* LogSearch
      const recorder = yield* LogRecorder

      const search = Effect.fn("Logs.search")(function*(projectId: string, params: LogSearchParams) {
        const source = params.source === undefined || params.source.trim() === "" ? "all" : params.source.trim().toLowerCase()
        const sources = sourceNames.get(source)
        if (sources === undefined) {
          return yield* refuse("source", `source must be one of all, ${LOG_SOURCES.join(", ")} (or an alias from the catalog)`)
        }
        // Absent means the default; a blank value is a mistake the caller should hear about, not a silent 24h.
        const period = params.period === undefined ? "24h" : params.period.trim()
        let since: number
        let until: number
        if (period === "context") {
          // A rule across two parameters (no one parameter is wrong): said without a field's details.
          if (params.around === undefined || params.around.trim() === "") return yield* Effect.fail(invalid("around", "is required with period context"))
          const aroundIso = toIso(params.around)
          const around = aroundIso === undefined ? NaN : Date.parse(aroundIso)
          // The window's both ends must be instants the store holds, not only `around`.
          if (Number.isNaN(around) || toIso(iso(around - CONTEXT_MS)) === undefined || toIso(iso(around + CONTEXT_MS)) === undefined) {
            return yield* refuse("around", dateTimeRefusal("around", params.around) ?? "around must be between 0001-01-01T00:15:00Z and 9999-12-31T23:45:00Z")
          }
          since = around - CONTEXT_MS
          until = around + CONTEXT_MS
        } else {
          const span = Object.hasOwn(PERIODS, period) ? PERIODS[period] : undefined
          if (span === undefined) return yield* refuse("period", "period must be one of 24h, 7d, context")
          until = yield* Clock.currentTimeMillis
          since = until - span
        }
        const filters = yield* parseFilters(params.filters)
        const limit = yield* parseLimit(params.limit)
        const after = params.cursor === undefined ? null : yield* decodeCursor(params.cursor)
        const window = { since: iso(since), until: iso(until) }
        const base = { available: true, source, window }
        // This process's own entries are written before it reads (a stalled store delays the answer by a second at most).
        yield* recorder.flush.pipe(Effect.timeoutOption("1 second"))
        const page = yield* store.search({
          projectId,
          sources,
          since: window.since,
          until: window.until,
          words: logWords(params.query ?? ""),
          filters,
          problemsOnly: params.problems_only ?? params.errors_only ?? false,
          limit,
          after: after === null ? null : { occurred_at: after.sortKey, id: after.id }
        }).pipe(Effect.exit)
        if (page._tag === "Failure") {
          yield* Effect.logError("Log search failed", page.cause).pipe(Effect.annotateLogs({ project_id: projectId }))
          return {
            ...base,
            events: [],
            pagination: { has_more: false, next_cursor: null },
            error: "search backend error",
            code: "search_failed"
          } satisfies LogSearchAnswer
        }
        const { entries, hasMore } = page.value
        const marked = entries.find((e) => e.id === params.highlight_event_id) ??
          entries.find((e) => params.highlight_resource_id !== undefined && e.resource_id === params.highlight_resource_id)
        const last = entries[entries.length - 1]
        return {
          ...base,
          events: entries.map((e) => toEvent(e, e === marked)),
          pagination: {
            has_more: hasMore,
            next_cursor: hasMore && last !== undefined ? encodeCursor({ sortKey: last.occurred_at, id: last.id }) : null
          }
        } satisfies LogSearchAnswer
      })

      return Logs.of({ search, catalog: Effect.succeed(catalogAnswer) })
    })
  )
}
