/** The network's paging of lists: `limit`, opaque `after`/`before` cursors, `next`/`previous` addresses. */
import { type SimError, simError } from "../../network/ErrorCodes.ts"

const encodeCursor = (index: number) => Buffer.from(`i:${index}`).toString("base64")
const decodeCursor = (cursor: string): number | undefined => {
  const match = /^i:(\d+)$/.exec(Buffer.from(cursor, "base64").toString("utf8"))
  return match === null ? undefined : Number(match[1])
}

/** Where a list lives, and the caller's token: the network's `next`/`previous` addresses carry it in their query. */
export interface ListAddress {
  readonly url: string
  readonly accessToken: string | undefined
}

/**
 * One page of `items` in the network's paging shape: `limit` (default
 * `defaultLimit`), `after`/`before` cursors, `next`/`previous` addresses.
 */
export const page = <A>(
  items: ReadonlyArray<A>,
  query: Readonly<Record<string, string>>,
  self: ListAddress,
  defaultLimit: number
): { readonly data: ReadonlyArray<A>; readonly paging?: Record<string, unknown> } | SimError => {
  const limit = query["limit"] === undefined ? defaultLimit : Number(query["limit"])
  if (!Number.isInteger(limit) || limit < 1) return simError(100, "Param limit must be a positive integer")
  let start = 0
  let end: number
  if (query["after"] !== undefined) {
    const index = decodeCursor(query["after"])
    if (index === undefined) return simError(100, "Param after is not a valid cursor")
    start = index + 1
    end = Math.min(items.length, start + limit)
  } else if (query["before"] !== undefined) {
    const index = decodeCursor(query["before"])
    if (index === undefined) return simError(100, "Param before is not a valid cursor")
    end = Math.min(items.length, index)
    start = Math.max(0, end - limit)
  } else {
    end = Math.min(items.length, limit)
  }
  const data = items.slice(start, end)
  if (data.length === 0) return { data }
  const link = (cursor: Record<string, string>) => {
    const params = new URLSearchParams({ ...query, limit: String(limit) })
    params.delete("after")
    params.delete("before")
    for (const [key, value] of Object.entries(cursor)) params.set(key, value)
    if (self.accessToken !== undefined) params.set("access_token", self.accessToken)
    return `${self.url}?${params.toString()}`
  }
  return {
    data,
    paging: {
      cursors: { before: encodeCursor(start), after: encodeCursor(end - 1) },
      ...(end < items.length ? { next: link({ after: encodeCursor(end - 1) }) } : {}),
      ...(start > 0 ? { previous: link({ before: encodeCursor(start) }) } : {})
    }
  }
}
