/** Row shapes as the PostgreSQL client returns them, and the mapping back to records. */
import { type PgClient, PgTypes } from "@effect/sql-pg"
import {
  Deferred,
  Effect,
  Exit,
  Option,
  Queue,
  Result,
  Schedule,
  Schema,
  SchemaIssue,
  SchemaParser,
  SchemaTransformation,
  Stream
} from "effect"
import type { SqlError } from "effect/sql/SqlError"
import type { SqlClient, Statement } from "effect/sql"
import { Duplicate, type ListSlice, type ListWindow, StorageError } from "@parley/core"

/** timestamptz comes back as a Date; records carry the ISO form they went in with. */
export const iso = (date: Date): string => date.toISOString()
export const isoOrNull = (date: Date | null): string | null => (date === null ? null : date.toISOString())

/** A timestamptz column (a Date from the client) as the ISO text records carry. */
export const IsoFromDate = Schema.Date.pipe(
  Schema.decodeTo(Schema.String, SchemaTransformation.transform({ decode: (d: Date) => d.toISOString(), encode: (s: string) => new Date(s) }))
)

const formatIssue = SchemaIssue.makeFormatterStandardSchemaV1({
  // The rule broken, never the value: a row may hold what must not reach a log.
  leafHook: (issue) => issue._tag === "InvalidType" ? `expected ${issue.ast._tag}` : issue._tag
})

/** The first thing wrong with a row, as facts: which query, which field (the row's index left out), why. */
const undecodable = (query: string, issue: SchemaIssue.Issue) => {
  const first = formatIssue(issue).issues[0]
  return new StorageError({
    query,
    field: (first?.path ?? []).slice(1).map(String).join("."),
    reason: first?.message ?? "does not decode"
  })
}

/**
 * A nullable column: `Schema.NullOr` with null tried first. Tried second, a null first fails the other member and
 * that failure's issue is built: 3.6 KB and 3 µs for a null timestamptz (`NullOr(IsoFromDate)`), where null first
 * costs 0.4 KB; a conversation row with three null timestamps decoded in 10.8 KB, now 4.9 KB.
 */
export const Nullable = <S extends Schema.Top>(schema: S) => Schema.Union([Schema.Null, schema])

/** A timestamptz inside JSON built by the server (`json_build_object`): its text, in the ISO form records carry. */
export const IsoFromText = Schema.String.pipe(
  Schema.decodeTo(Schema.String, SchemaTransformation.transform({ decode: (s) => new Date(s).toISOString(), encode: (s) => s }))
)

/**
 * Decodes the rows of `query` into records with the row Schema, compiled once here (reads run per request and
 * per step). A row that does not decode means the table and the code disagree (a migration not run, a column
 * changed): a `StorageError` defect naming the query and the field, never a silent cast.
 */
export function decodeRows<S extends Schema.Decoder<unknown>>(
  query: string,
  schema: S
): (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<S["Type"]>>
/** Unnamed: the failure names the field only (prefer naming the query). */
export function decodeRows<S extends Schema.Decoder<unknown>>(
  schema: S
): (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<S["Type"]>>
export function decodeRows<S extends Schema.Decoder<unknown>>(queryOrSchema: string | S, maybeSchema?: S) {
  const query = typeof queryOrSchema === "string" ? queryOrSchema : "row"
  const schema = (typeof queryOrSchema === "string" ? maybeSchema : queryOrSchema) as S
  const decode = SchemaParser.decodeUnknownResult(Schema.Array(schema))
  return (rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<S["Type"]>> => {
    const result = decode(rows)
    return Result.isSuccess(result) ? Effect.succeed(result.success) : Effect.die(undecodable(query, result.failure))
  }
}

/** Like `decodeRows`, for a query answering one row or none. */
export const decodeFirst = <S extends Schema.Decoder<unknown>>(query: string, schema: S) => {
  const decode = decodeRows(query, schema)
  return (rows: ReadonlyArray<unknown>): Effect.Effect<Option.Option<S["Type"]>> =>
    Effect.map(decode(rows.slice(0, 1)), (records) => Option.fromNullishOr(records[0]))
}

/** A bigint column as the client hands it over (a JS `bigint`), as the number records carry. */
const NumberFromBigInt = Schema.BigInt.pipe(
  Schema.decodeTo(Schema.Number, SchemaTransformation.transform({ decode: (b: bigint) => Number(b), encode: (n) => BigInt(n) }))
)

/** A count or a bigint column: a number (`::int`), a `bigint`, or the text of one. */
export const Count = Schema.Union([Schema.Number, NumberFromBigInt, Schema.NumberFromString])

/** One `count(*)` row. */
export const CountRow = Schema.Struct({ total: Count })

/** Decodes one `count(*) AS total` row. */
export const decodeCount = decodeRows("count", CountRow)

/**
 * A jsonb column the adapter wrote from the record's own field: checked to be JSON of the kind it holds (an
 * object or an array), and typed as that field. Its inside is the domain's, validated where the domain builds it;
 * decoding it again on every read would cost each step its time for nothing (a key-by-key check of an execution's
 * objects was a sixth of the row's decode).
 */
const JsonColumn = <A>(kind: "object" | "array") =>
  Schema.declare(
    kind === "array"
      ? (u: unknown): u is A => Array.isArray(u)
      : (u: unknown): u is A => typeof u === "object" && u !== null && !Array.isArray(u),
    { expected: `jsonb ${kind}` }
  )

/** A jsonb column holding a JSON object. */
export const JsonObject = <A extends object = Readonly<Record<string, unknown>>>() => JsonColumn<A>("object")

/** A jsonb column holding a JSON object of no particular shape. */
export const JsonRecord = JsonObject<Readonly<Record<string, unknown>>>()

/** A jsonb column holding a JSON array. */
export const JsonArray = <A extends ReadonlyArray<unknown>>() => JsonColumn<A>("array")

/** The record of the first row, if any. */
export const first = <R, A>(rows: ReadonlyArray<R>, f: (row: R) => A) => Option.map(Option.fromNullishOr(rows[0]), f)

/** jsonb parameters travel as text and are parsed by the server, so any JSON value fits. */
export const jsonb = (value: unknown): string => JSON.stringify(value)

/**
 * A unique index the domain can act on becomes `Duplicate`; any other SQL
 * failure is a bug or an outage, so a defect.
 */
export const mapUnique = (fields: Readonly<Record<string, string>>) => (error: SqlError) => {
  if (error.reason._tag === "UniqueViolation") {
    const field = fields[error.reason.constraint]
    if (field !== undefined) return Effect.fail(new Duplicate({ field }))
  }
  return Effect.die(error)
}

/**
 * One list window (decisions 1.3) over the rows of `table` matching `where`,
 * newest first by (`sortColumn`, id), in either paging mode. `columns` (a trusted list, `*` by default) lets a
 * summary leave its large columns unread; it must include `sortColumn` and `id`.
 */
export const listNewestFirst = <A>(
  sql: SqlClient.SqlClient,
  table: string,
  where: Statement.Fragment,
  window: ListWindow,
  toRecords: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<A>>,
  sortColumn = "created_at",
  columns = "*"
): Effect.Effect<ListSlice<A>, SqlError> =>
  Effect.gen(function*() {
    const sort = sql(sortColumn)
    const selected = sql.unsafe(columns)
    if (window.mode === "page") {
      const offset = (window.page - 1) * window.perPage
      const [{ total }] = yield* decodeCount(yield* sql`SELECT count(*)::int AS total FROM ${sql(table)} WHERE ${where}`)
      const items = yield* toRecords(
        yield* sql`
        SELECT ${selected} FROM ${sql(table)} WHERE ${where}
        ORDER BY ${sort} DESC, id DESC LIMIT ${window.perPage} OFFSET ${offset}`
      )
      return { items, hasMore: offset + items.length < total, total }
    }
    const { after, before, limit } = window
    const conditions = [
      where,
      ...(after !== undefined ? [sql`(${sort}, id) < (${after.sortKey}::timestamptz, ${after.id})`] : []),
      ...(before !== undefined ? [sql`(${sort}, id) > (${before.sortKey}::timestamptz, ${before.id})`] : [])
    ]
    // Travelling towards newer items, read upwards from the key and turn the page round.
    const order = before !== undefined ? sql`${sort} ASC, id ASC` : sql`${sort} DESC, id DESC`
    const rows = yield* sql`
      SELECT ${selected} FROM ${sql(table)} WHERE ${sql.and(conditions)} ORDER BY ${order} LIMIT ${limit + 1}`
    const page = [...yield* toRecords(rows.slice(0, limit))]
    return { items: before !== undefined ? page.reverse() : page, hasMore: rows.length > limit, total: 0 }
  })

/**
 * The NOTIFYs of `channel`, as signals for caches to start over. A LISTEN that
 * drops may have missed some: each (re)connection signals once.
 */
export const changeSignals = (pg: PgClient.PgClient, channel: string): Stream.Stream<void> =>
  Stream.unwrap(
    Effect.map(pg.listen(channel), (queue) => Stream.concat(Stream.succeed(undefined), Stream.fromQueue(queue)))
  ).pipe(
    Stream.as(undefined),
    Stream.retry(Schedule.spaced("1 second")),
    Stream.orDie
  )

/** Most calls one statement serves. */
const BATCH_MAX = 256
/** Statements of one kind running at once, each with whatever waited for it. */
const BATCH_WRITERS = 4

/**
 * One call as part of a statement for many (`many` answers in the order given). Calls made outside a
 * transaction wait for one of a few writers, which takes whatever is waiting: under load one round trip
 * serves many calls, alone a call goes at once. A call inside a transaction runs there, alone; one whose
 * `key` is already in the batch (a statement must not write a row twice) waits for the next one; a batch
 * that fails is run call by call, so a bad call fails alone. Needs a scope: the writers live in it.
 */
export const batched = Effect.fnUntraced(function*<A, B>(sql: SqlClient.SqlClient, options: {
  readonly key?: ((a: A) => string) | undefined
  readonly many: (as: ReadonlyArray<A>) => Effect.Effect<ReadonlyArray<B>, SqlError>
}) {
  const one = (a: A) => Effect.map(options.many([a]), (bs) => bs[0]!)
  const waiting = yield* Queue.unbounded<readonly [A, Deferred.Deferred<B, SqlError>]>()
  const write = Effect.gen(function*() {
    const taken = yield* Queue.takeBetween(waiting, 1, BATCH_MAX)
    const keys = new Set<string>()
    const batch: Array<readonly [A, Deferred.Deferred<B, SqlError>]> = []
    for (const call of taken) {
      const key = options.key?.(call[0])
      if (key === undefined) batch.push(call)
      else if (keys.has(key)) yield* Queue.offer(waiting, call)
      else {
        keys.add(key)
        batch.push(call)
      }
    }
    const exit = yield* Effect.exit(options.many(batch.map(([a]) => a)))
    if (Exit.isSuccess(exit)) {
      for (const [i, [, done]] of batch.entries()) yield* Deferred.succeed(done, exit.value[i]!)
    } else if (batch.length === 1) {
      yield* Deferred.failCause(batch[0]![1], exit.cause)
    } else {
      for (const [a, done] of batch) yield* Deferred.done(done, yield* Effect.exit(one(a)))
    }
  })
  for (let i = 0; i < BATCH_WRITERS; i++) yield* Effect.forkScoped(Effect.forever(write))
  return (a: A): Effect.Effect<B, SqlError> =>
    Effect.gen(function*() {
      if (Option.isSome(yield* Effect.serviceOption(sql.transactionService))) return yield* one(a)
      const done = yield* Deferred.make<B, SqlError>()
      yield* Queue.offer(waiting, [a, done])
      return yield* Deferred.await(done)
    })
})

/**
 * Keyed VALUES lists (below) of more rows than this run unprepared. A VALUES list is a new statement text for every
 * row count, and a prepared one stays in its connection's statement cache (100 statements on each of up to 56
 * connections: its text, its parameter types, and the backend's copy) until 100 newer ones push it out. A broadcast
 * meets most counts up to its batch size once, so the host's heap grew by those texts (~3 MB in 30,000 sends) for
 * statements it seldom ran again. The small counts recur (a lone send, a status POST's few reports): they stay
 * prepared. An unprepared statement costs the round trip a first prepared run costs (parse, bind, run).
 */
export const PREPARED_VALUES_ROWS = 8

/** `statement`, a keyed VALUES list of `rows` rows, unprepared past `PREPARED_VALUES_ROWS` rows. */
export const valuesStatement = <A>(statement: Statement.Statement<A>, rows: number): Effect.Effect<ReadonlyArray<A>, SqlError> =>
  rows > PREPARED_VALUES_ROWS ? statement.unprepared : statement

/** A column of `columnRows`: its name, its PostgreSQL type, and its value in a row. */
export type Column<A> = readonly [name: string, type: string, value: (row: A) => string | number | boolean | null]

/** The names of `columns`, in order: the column list of an INSERT fed by `columnRows`. */
export const columnNames = <A>(sql: SqlClient.SqlClient, columns: ReadonlyArray<Column<A>>) =>
  sql.unsafe(columns.map(([name]) => name).join(", "))

/**
 * Rows as one text[] parameter per column, read back as `r(name, ...)` (each cast by the server to its type),
 * with `r.ord` numbering them in the order given. A batched INSERT then has one statement text for one row or
 * many, so its prepared statement is reused, where a VALUES list is a new statement (parsed and planned again)
 * for every row count; and it binds one parameter per column, not one per value. Not for joins (keyed UPDATEs):
 * a cached plan takes these as 10 rows whatever their number, and picked a hash join over a scan of the whole
 * table while the table was young, which it kept as the table grew; VALUES tells the planner the true count.
 */
export const columnRows = <A>(sql: SqlClient.SqlClient, rows: ReadonlyArray<A>, columns: ReadonlyArray<Column<A>>) => {
  const arrays = columns.map(([, type, value]) => {
    const texts = rows.map((row) => {
      const v = value(row)
      return v === null || typeof v === "string" ? v : String(v)
    })
    // text[] is a built-in type the codec always knows: building the parameter cannot fail.
    return sql`${Result.getOrThrow(PgTypes.array(texts, PgTypes.OID.text))}::${sql.unsafe(type)}[]`
  })
  return sql`unnest(${sql.csv(arrays)}) WITH ORDINALITY AS r(${columnNames(sql, columns)}, ord)`
}

/** Rows as one jsonb parameter, read back by `AS r(column type, ...)`: one statement text for one row or many. */
export const jsonRows = (sql: SqlClient.SqlClient, rows: ReadonlyArray<object>) =>
  sql`jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)`
