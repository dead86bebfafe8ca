/**
 * How the memory stores keep values the way PostgreSQL gives them back
 * (timestamps normalised, JSON copied, ids in byte order), shared by every
 * memory repository so they all fail and sort like the Postgres adapters.
 */
import type { CursorKey, ListSlice, ListWindow } from "../shared/Pagination.ts"

/** A violated constraint the Postgres adapter reports as a defect. */
export const violation = (message: string): never => {
  throw new Error(`MemoryStore: ${message}`)
}

/** Instant of an ISO timestamp; an unparsable one is a defect, as a failed timestamptz cast is. */
export const instant = (iso: string): number => {
  const ms = Date.parse(iso)
  return Number.isNaN(ms) ? violation(`invalid timestamp ${JSON.stringify(iso)}`) : ms
}

/** As a timestamptz column gives it back. */
export const timestamp = (iso: string): string => new Date(instant(iso)).toISOString()
export const nullableTimestamp = (iso: string | null): string | null => iso === null ? null : timestamp(iso)

/** As a jsonb column gives it back: a copy, without undefined members. */
export const json = <A>(value: A): A => JSON.parse(JSON.stringify(value)) as A

/** Byte order, as the `COLLATE "C"` columns sort. */
export const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"))

/** Order of list positions: time first, then id. */
export const compareKeys = (a: CursorKey, b: CursorKey) => instant(a.sortKey) - instant(b.sortKey) || byteOrder(a.id, b.id)

const keyOf = (row: { readonly created_at: string; readonly id: string }): CursorKey => ({ sortKey: row.created_at, id: row.id })

/** The window over rows sorted newest first by (created_at, id) (see `ListWindow`). */
export const sliceWindow = <A extends { readonly created_at: string; readonly id: string }>(
  newestFirst: ReadonlyArray<A>,
  window: ListWindow
): ListSlice<A> => sliceWindowBy(newestFirst, window, (row, key) => compareKeys(keyOf(row), key))

/**
 * The window over rows sorted newest first by any order; `compare(row, key)`
 * places a row against a cursor key in that order (negative: older).
 */
export const sliceWindowBy = <A>(
  newestFirst: ReadonlyArray<A>,
  window: ListWindow,
  compare: (row: A, key: CursorKey) => number
): ListSlice<A> => {
  if (window.mode === "page") {
    const start = (window.page - 1) * window.perPage
    const items = newestFirst.slice(start, start + window.perPage)
    return { items, hasMore: start + items.length < newestFirst.length, total: newestFirst.length }
  }
  const { after, before, limit } = window
  const inRange = newestFirst.filter((row) =>
    (after === undefined || compare(row, after) < 0) &&
    (before === undefined || compare(row, before) > 0)
  )
  // Travelling towards newer items, the ones nearest the `before` key come first.
  const travel = before !== undefined ? [...inRange].reverse() : inRange
  const page = travel.slice(0, limit)
  return {
    items: before !== undefined ? page.reverse() : page,
    hasMore: travel.length > limit,
    total: 0
  }
}
