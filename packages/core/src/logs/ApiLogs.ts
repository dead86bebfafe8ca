/**
 * The older API log list (`GET /api_logs`, decisions 4.6): the project's API
 * requests as log search keeps them (source `external_api_log`, decisions
 * 4.7), one record per request, newest first, by cursor. Filters: `endpoint`
 * (part of the path, any case), `status_code` (exact), `errors_only` (status
 * 400 and above) and `period` (`24h` default, `7d`, `30d`; entries are kept as
 * log search keeps them, 14 days by default).
 */
import { Clock, Context, Effect, Layer, Predicate } from "effect"
import { type LogEntryRecord, type LogFilter, LogSearch } from "./LogSearch.ts"
import { type Unprocessable, unprocessable } from "../shared/ApiError.ts"
import type { CursorKey, ListSlice, ListWindow } from "../shared/Pagination.ts"
import { LogRecorder } from "./LogRecorder.ts"

export const API_LOG_PERIODS = ["24h", "7d", "30d"] as const
export type ApiLogPeriod = typeof API_LOG_PERIODS[number]

const DAY_MS = 24 * 60 * 60 * 1000
const PERIOD_MS: Readonly<Record<ApiLogPeriod, number>> = { "24h": DAY_MS, "7d": 7 * DAY_MS, "30d": 30 * DAY_MS }

export interface ApiLogFilter {
  readonly endpoint?: string | undefined
  /** An HTTP status, as given in the query string. */
  readonly status_code?: string | undefined
  readonly errors_only?: boolean | undefined
  readonly period?: ApiLogPeriod | undefined
}

/** One API request (decisions 4.6). */
export interface ApiLogRecord {
  readonly id: string
  readonly endpoint: string | null
  readonly http_method: string | null
  readonly response_status: number | null
  readonly response_time_ms: number | null
  readonly ip_address: string | null
  readonly error_message: string | null
  readonly created_at: string
  readonly api_key_id: string | null
  readonly api_key_name: string | null
}

export const apiLogCursorKeyOf = (r: ApiLogRecord): CursorKey => ({ sortKey: r.created_at, id: r.id })

const toApiLog = (e: LogEntryRecord): ApiLogRecord => {
  const ip = e.attributes["ip_address"]
  return {
    id: e.id,
    endpoint: e.endpoint,
    http_method: e.http_method,
    response_status: e.response_status,
    response_time_ms: e.response_time_ms,
    ip_address: Predicate.isString(ip) ? ip : null,
    error_message: e.error_message,
    created_at: e.occurred_at,
    api_key_id: e.api_key_id,
    api_key_name: e.api_key_name
  }
}

export class ApiLogs extends Context.Service<ApiLogs, {
  /**
   * Newest first. Cursor windows only (`limit`, `after`): log search pages one way, to older entries; `before` and
   * page mode answer 422. A `status_code` that is not an HTTP status answers 422.
   */
  readonly list: (projectId: string, filter: ApiLogFilter, window: ListWindow) => Effect.Effect<ListSlice<ApiLogRecord>, Unprocessable>
}>()("@parley/core/logs/ApiLogs") {
  static readonly layer = Layer.effect(
    ApiLogs,
    Effect.gen(function*() {
      const store = yield* LogSearch
      const recorder = yield* LogRecorder

      const list = Effect.fn("ApiLogs.list")(function*(projectId: string, filter: ApiLogFilter, window: ListWindow) {
        if (window.mode === "page") {
          return yield* unprocessable("api_logs pages by cursor: use limit and after", [{ path: "page", message: "not supported" }])
        }
        if (window.before !== undefined) {
          return yield* unprocessable("api_logs pages to older entries only: use after", [{ path: "before", message: "not supported" }])
        }
        const filters: Array<LogFilter> = []
        if (filter.status_code !== undefined) {
          if (!/^[1-5]\d\d$/.test(filter.status_code)) {
            return yield* unprocessable("status_code must be an HTTP status (an integer 100-599)", [{ path: "status_code", message: "is invalid" }])
          }
          filters.push({ key: "response_status", value: filter.status_code })
        }
        const endpoint = filter.endpoint?.trim() ?? ""
        if (endpoint !== "") filters.push({ key: "endpoint_contains", value: endpoint })
        const until = yield* Clock.currentTimeMillis
        const since = until - PERIOD_MS[filter.period ?? "24h"]
        // This process's own requests are written before it reads, as log search does.
        yield* recorder.flush.pipe(Effect.timeoutOption("1 second"))
        const page = yield* store.search({
          projectId,
          sources: ["external_api_log"],
          since: new Date(since).toISOString(),
          until: new Date(until).toISOString(),
          words: [],
          filters,
          problemsOnly: filter.errors_only ?? false,
          limit: window.limit,
          after: window.after === undefined ? null : { occurred_at: window.after.sortKey, id: window.after.id }
        })
        return { items: page.entries.map(toApiLog), hasMore: page.hasMore, total: page.entries.length } satisfies ListSlice<ApiLogRecord>
      })

      return ApiLogs.of({ list })
    })
  )
}
