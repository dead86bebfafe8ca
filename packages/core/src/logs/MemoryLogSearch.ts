/** `LogSearch` in memory: entries in the shared `MemoryStore`, searched by a scan with the port's word rules. */
import { Effect, Layer } from "effect"
import { type LogEntryRecord, type LogFilter, type LogQuery, LogSearch, mentionOf } from "./LogSearch.ts"
import { MemoryStore, memoryTable } from "../ports/MemoryStore.ts"

const Entries = memoryTable<LogEntryRecord>("log_entries")

const newestFirst = (a: LogEntryRecord, b: LogEntryRecord) =>
  a.occurred_at === b.occurred_at ? (a.id < b.id ? 1 : a.id > b.id ? -1 : 0) : a.occurred_at < b.occurred_at ? 1 : -1

const holds = (entry: LogEntryRecord, filter: LogFilter): boolean => {
  switch (filter.key) {
    case "endpoint_contains":
      return entry.endpoint !== null && entry.endpoint.toLowerCase().includes(filter.value.toLowerCase())
    case "response_status":
      return entry.response_status !== null && String(entry.response_status) === filter.value
    default:
      return entry[filter.key] === filter.value
  }
}

const matches = (entry: LogEntryRecord, query: LogQuery): boolean => {
  if (entry.project_id !== query.projectId || !query.sources.includes(entry.source)) return false
  if (entry.occurred_at < query.since || entry.occurred_at > query.until) return false
  if (query.problemsOnly && !entry.problem) return false
  if (!query.filters.every((f) => holds(entry, f))) return false
  if (query.after !== null) {
    const { occurred_at, id } = query.after
    if (entry.occurred_at > occurred_at || (entry.occurred_at === occurred_at && entry.id >= id)) return false
  }
  if (query.words.length === 0) return true
  const words = new Set(entry.search_text.split(" "))
  return query.words.every((w) => words.has(w))
}

const mentions = (entry: LogEntryRecord, terms: ReadonlyArray<string>): boolean => {
    const payload = entry.payload === null ? "" : JSON.stringify(entry.payload).toLowerCase()
  return terms.some((term) => {
    const mention = mentionOf(term)
    return (mention !== "" && entry.search_text.includes(mention)) || (term.trim() !== "" && payload.includes(term.toLowerCase()))
  })
}

export const layerMemoryLogSearch = Layer.effect(
  LogSearch,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    return LogSearch.of({
      append: Effect.fn("LogSearch.append")((entries: ReadonlyArray<LogEntryRecord>) =>
        store.run((db) => {
          for (const entry of entries) db.put(Entries, entry.id, entry)
        })
      ),
      search: Effect.fn("LogSearch.search")((query: LogQuery) =>
        store.run((db) => {
          const found = db.all(Entries).filter((e) => matches(e, query)).sort(newestFirst)
          return { entries: found.slice(0, query.limit), hasMore: found.length > query.limit }
        })
      ),
      eraseMentions: Effect.fn("LogSearch.eraseMentions")((projectId: string, terms: ReadonlyArray<string>) =>
        store.run((db) => {
          let erased = 0
          for (const entry of db.all(Entries)) {
            if (entry.project_id === projectId && mentions(entry, terms) && db.remove(Entries, entry.id)) erased++
          }
          return erased
        })
      ),
      prune: Effect.fn("LogSearch.prune")((before: string, limit: number) =>
        store.run((db) => {
          const old = db.all(Entries).filter((e) => e.occurred_at < before).slice(0, limit)
          for (const entry of old) db.remove(Entries, entry.id)
          return old.length
        })
      )
    })
  })
)
