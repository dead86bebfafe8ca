/**
 * Both pagination styles of the API (spec "Pagination shapes", decisions 1.3),
 * implemented once: the query parameters, mode selection, opaque cursors, the
 * response shapes and the page-mode headers.
 *
 * Repositories receive a `ListWindow` and answer a `ListSlice`; the transport
 * turns a slice into the wire shape with `toListBody`.
 */
import { Effect, Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { BadRequest, unprocessable } from "./ApiError.ts"

/** Position of an item in a list ordered by (sort key, id), newest first; every cursor list sorts by a time. */
export interface CursorKey {
  /** An ISO 8601 date-time (creation or occurrence time). */
  readonly sortKey: string
  readonly id: string
}

export type ListWindow =
  | {
    readonly mode: "cursor"
    readonly limit: number
    /** Items strictly older than this key. */
    readonly after?: CursorKey | undefined
    /** Items strictly newer than this key. */
    readonly before?: CursorKey | undefined
  }
  | { readonly mode: "page"; readonly page: number; readonly perPage: number }

export interface ListSlice<A> {
  readonly items: ReadonlyArray<A>
  /** Cursor mode: more items exist in the direction of travel. */
  readonly hasMore: boolean
  /** Page mode: total number of matching items (capped estimates allowed). */
  readonly total: number
}

/**
 * A whole number within bounds, in the query string, as the document states it (`bounds`, a pattern). Decoding
 * takes any string: the handler parses it (`resolveWindow`), so every refusal names the bounds in the same words.
 */
export const wholeNumberQuery = (bounds: string, description: string) =>
  Schema.String.check(Schema.makeFilter(() => true, { toJsonSchema: () => ({ pattern: bounds }) })).annotate({ description })

/** 1-100, leading zeros allowed (as `resolveWindow` reads them). */
const ONE_TO_HUNDRED = "^0*(?:[1-9][0-9]?|100)$"

/** A date-time filter of a list, as the document states it; the handler parses it (`dateFilter`) so its error names it. */
export const DateTimeQuery = Schema.String.annotate({
  format: "date-time",
  description: "An ISO 8601 date-time with an offset, e.g. `2026-01-31T12:00:00Z`"
})

/** The paging query parameters, as strings (the numbers as digits): bounds are checked in `resolveWindow`. */
export const PagingQuery = {
  limit: Schema.optionalKey(wholeNumberQuery(ONE_TO_HUNDRED, "Items per page in cursor mode, 1-100 (default 20)")),
  before: Schema.optionalKey(Schema.String.annotate({ description: "Cursor: the page before this one (`paging.cursors.before`)" })),
  after: Schema.optionalKey(Schema.String.annotate({ description: "Cursor: the page after this one (`paging.cursors.after`)" })),
  // Up to 15 digits: a safe integer.
  page: Schema.optionalKey(wholeNumberQuery("^0*[1-9][0-9]{0,14}$", "Page number in page mode, from 1")),
  per_page: Schema.optionalKey(wholeNumberQuery(ONE_TO_HUNDRED, "Items per page in page mode, 1-100 (default 20)"))
} as const

export interface PagingParams {
  readonly limit?: string | undefined
  readonly before?: string | undefined
  readonly after?: string | undefined
  readonly page?: string | undefined
  readonly per_page?: string | undefined
}

export const encodeCursor = (key: CursorKey): string =>
  Buffer.from(JSON.stringify([key.sortKey, key.id]), "utf8").toString("base64")

export const decodeCursor = (cursor: string): Effect.Effect<CursorKey, BadRequest> =>
  Effect.suspend(() => {
    try {
      const decoded: unknown = JSON.parse(Buffer.from(cursor, "base64").toString("utf8"))
      if (
        Array.isArray(decoded) && decoded.length === 2 && typeof decoded[0] === "string" &&
        typeof decoded[1] === "string" && !Number.isNaN(Date.parse(decoded[0]))
      ) {
        return Effect.succeed({ sortKey: decoded[0], id: decoded[1] })
      }
    } catch {
      // fall through to the refusal below
    }
    return Effect.fail(new BadRequest({ error: "Invalid pagination cursor", code: "invalid_cursor" }))
  })

const parseBounded = (name: string, raw: string | undefined, fallback: number, min: number, max: number) => {
  if (raw === undefined) return Effect.succeed(fallback)
  const n = /^-?\d+$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    return Effect.fail(
      unprocessable(
        max === Number.MAX_SAFE_INTEGER ? `${name} must be an integer >= ${min}` : `${name} must be between ${min} and ${max}`,
        [{ path: name, message: "out of range" }]
      )
    )
  }
  return Effect.succeed(n)
}

/**
 * Picks the mode (cursor parameters win; `defaultMode` applies when none is
 * given) and checks the bounds: `limit`/`per_page` 1-100, `page` >= 1.
 */
export const resolveWindow = (
  params: PagingParams,
  defaultMode: "cursor" | "page" = "cursor"
) =>
  Effect.gen(function*() {
    const cursorMode = params.limit !== undefined || params.before !== undefined || params.after !== undefined
    const pageMode = params.page !== undefined || params.per_page !== undefined
    if (cursorMode || (!pageMode && defaultMode === "cursor")) {
      const limit = yield* parseBounded("limit", params.limit, 20, 1, 100)
      const after = params.after !== undefined ? yield* decodeCursor(params.after) : undefined
      const before = params.before !== undefined ? yield* decodeCursor(params.before) : undefined
      return { mode: "cursor", limit, after, before } satisfies ListWindow as ListWindow
    }
    return yield* resolvePageWindow(params)
  })

/** Page mode only (lists of the older surface): `page` >= 1, `per_page` 1-100. */
export const resolvePageWindow = (params: Pick<PagingParams, "page" | "per_page">) =>
  Effect.gen(function*() {
    const page = yield* parseBounded("page", params.page, 1, 1, Number.MAX_SAFE_INTEGER)
    const perPage = yield* parseBounded("per_page", params.per_page, 20, 1, 100)
    return { mode: "page", page, perPage } as const
  })

export const PagingCursors = Schema.Struct({
  before: Schema.NullOr(Schema.String),
  after: Schema.NullOr(Schema.String)
})

export const Paging = Schema.Struct({
  cursors: PagingCursors,
  next: Schema.NullOr(Schema.String),
  previous: Schema.NullOr(Schema.String)
})

export const PageMeta = Schema.Struct({
  page: Schema.Int,
  per_page: Schema.Int,
  total_pages: Schema.Int,
  total_count: Schema.Int
})

const PageHeaders = {
  "x-total": Schema.optionalKey(Schema.String),
  "x-total-pages": Schema.optionalKey(Schema.String),
  "x-per-page": Schema.optionalKey(Schema.String),
  "x-page": Schema.optionalKey(Schema.String),
  link: Schema.optionalKey(Schema.String)
}

/** The response schema of a list in either style; page mode also sets the `X-Total`... headers. */
export const ListResponse = <S extends Schema.Top>(item: S) =>
  HttpApiSchema.WithHeaders(
    Schema.Union([
      Schema.Struct({ data: Schema.Array(item), paging: Paging }),
      Schema.Struct({ data: Schema.Array(item), meta: PageMeta })
    ]),
    PageHeaders
  )

/** The response schema of a list that only pages (older surface). */
export const PageResponse = <S extends Schema.Top>(item: S) =>
  HttpApiSchema.WithHeaders(Schema.Struct({ data: Schema.Array(item), meta: PageMeta }), PageHeaders)

/** Where the list lives, so `paging.next`/`previous` and `Link` can be complete URLs. */
export interface ListLocation {
  /** Absolute URL of the list without paging parameters, but with the caller's filters. */
  readonly url: URL
}

const withParams = (base: URL, params: Record<string, string>): string => {
  const url = new URL(base)
  for (const key of ["limit", "before", "after", "page", "per_page"]) url.searchParams.delete(key)
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v)
  return url.toString()
}

/**
 * Builds the wire body (and headers) of a list answer. `keyOf` gives each
 * item's position so cursors point at the first and last item shown.
 */
export const toListBody = <A, B>(
  window: ListWindow,
  slice: ListSlice<A>,
  keyOf: (a: A) => CursorKey,
  render: (a: A) => B,
  location: ListLocation
) => {
  const data = slice.items.map(render)
  if (window.mode === "cursor") {
    const first = slice.items[0]
    const last = slice.items[slice.items.length - 1]
    const before = first !== undefined ? encodeCursor(keyOf(first)) : null
    const after = last !== undefined ? encodeCursor(keyOf(last)) : null
    const limit = String(window.limit)
    // Travelling backwards (`before`), "more" means newer items exist; the older side is where we came from.
    const hasOlder = window.before !== undefined ? true : slice.hasMore
    const hasNewer = window.before !== undefined ? slice.hasMore : window.after !== undefined
    return HttpApiSchema.withHeaders({
      body: {
        data,
        paging: {
          cursors: { before, after },
          next: hasOlder && after !== null ? withParams(location.url, { limit, after }) : null,
          previous: hasNewer && before !== null ? withParams(location.url, { limit, before }) : null
        }
      },
      headers: {}
    })
  }
  return pageBody(window, slice.total, data, location)
}

/**
 * A `Link` header longer than this is left out: clients refuse answers whose headers pass 16 KB (Node's default),
 * and each of its URLs is the caller's own with other paging, which `meta` states too.
 */
const MAX_LINK_HEADER_LENGTH = 8 * 1024

export const pageBody = <B>(
  window: Extract<ListWindow, { mode: "page" }>,
  total: number,
  data: ReadonlyArray<B>,
  location: ListLocation
) => {
  const totalPages = Math.ceil(total / window.perPage)
  const perPage = String(window.perPage)
  const links: Array<string> = []
  const link = (rel: string, page: number) =>
    links.push(`<${withParams(location.url, { page: String(page), per_page: perPage })}>; rel="${rel}"`)
  link("first", 1)
  if (window.page > 1) link("prev", window.page - 1)
  if (window.page < totalPages) link("next", window.page + 1)
  link("last", Math.max(totalPages, 1))
  const linkHeader = links.join(", ")
  return HttpApiSchema.withHeaders({
    body: {
      data,
      meta: { page: window.page, per_page: window.perPage, total_pages: totalPages, total_count: total }
    },
    headers: {
      "x-total": String(total),
      "x-total-pages": String(totalPages),
      "x-per-page": perPage,
      "x-page": String(window.page),
      ...(linkHeader.length <= MAX_LINK_HEADER_LENGTH ? { link: linkHeader } : {})
    }
  })
}
