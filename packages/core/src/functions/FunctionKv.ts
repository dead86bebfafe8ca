/**
 * The store behind a function's `env.KV`: string values under string keys,
 * one namespace per function id, with optional expiry. Runtimes call it on the
 * function's behalf after checking the limits below; the memory adapter is in
 * `@parley/core/testing`, a Postgres one belongs in `@parley/store-pg`, and
 * both run `functionKvConformance`.
 */
import { Context, Effect, Option, Schema } from "effect"

export const KvLimits = {
  /** UTF-8 bytes of a key. */
  maxKeyBytes: 512,
  /** UTF-8 bytes of a value. */
  maxValueBytes: 1024 * 1024,
  /** Keys in one `list` page (also the default page size). */
  maxListLimit: 1000
} as const

export interface KvPutOptions {
  /** Seconds from now after which the entry reads as absent. */
  readonly expirationTtl?: number | undefined
}

export interface KvListOptions {
  readonly prefix?: string | undefined
  /** 1 to `KvLimits.maxListLimit`; default the maximum. */
  readonly limit?: number | undefined
  /** The `cursor` of the previous page. */
  readonly cursor?: string | undefined
}

export interface KvKey {
  readonly name: string
  /** Epoch seconds at which the entry expires, when it has an expiry. */
  readonly expiration?: number | undefined
}

export interface KvListPage {
  /** Live keys in ascending order of name. */
  readonly keys: ReadonlyArray<KvKey>
  /** Present when more keys follow: pass it to the next `list`. */
  readonly cursor: string | undefined
}

export class FunctionKvError extends Schema.TaggedError<FunctionKvError>()("FunctionKvError", {
  message: Schema.String
}) {}

export class FunctionKv extends Context.Service<FunctionKv, {
  readonly get: (functionId: string, key: string) => Effect.Effect<Option.Option<string>, FunctionKvError>
  /** Creates or overwrites the entry (and its expiry). */
  readonly put: (
    functionId: string,
    key: string,
    value: string,
    options?: KvPutOptions
  ) => Effect.Effect<void, FunctionKvError>
  /** Deleting an absent key succeeds. */
  readonly delete: (functionId: string, key: string) => Effect.Effect<void, FunctionKvError>
  readonly list: (functionId: string, options?: KvListOptions) => Effect.Effect<KvListPage, FunctionKvError>
  /** Drops every entry of the function (when the function is deleted). */
  readonly clear: (functionId: string) => Effect.Effect<void, FunctionKvError>
  /** Removes up to `limit` expired entries of any function (maintenance); answers how many went. */
  readonly purgeExpired: (limit: number) => Effect.Effect<number, FunctionKvError>
}>()("@parley/core/functions/FunctionKv") {}

const utf8 = new TextEncoder()

/** Why the key is refused, or undefined when it is acceptable. */
export const kvKeyProblem = (key: unknown): string | undefined => {
  if (typeof key !== "string" || key.length === 0) return "KV keys must be non-empty strings"
  if (utf8.encode(key).byteLength > KvLimits.maxKeyBytes) return `KV keys are limited to ${KvLimits.maxKeyBytes} bytes`
  return undefined
}

/** Why the value is refused, or undefined when it is acceptable. */
export const kvValueProblem = (value: unknown): string | undefined => {
  if (typeof value !== "string") return "KV values must be strings"
  if (value.length > KvLimits.maxValueBytes / 3 && utf8.encode(value).byteLength > KvLimits.maxValueBytes) {
    return `KV values are limited to ${KvLimits.maxValueBytes} bytes`
  }
  return undefined
}

/** One `env.KV` call as the guest support sends it to the host (see `guestSupportSource`). */
export const KvOperation = Schema.Union([
  Schema.Struct({ op: Schema.Literal("get"), key: Schema.String }),
  Schema.Struct({
    op: Schema.Literal("put"),
    key: Schema.String,
    value: Schema.String,
    expirationTtl: Schema.optionalKey(Schema.Finite)
  }),
  Schema.Struct({ op: Schema.Literal("delete"), key: Schema.String }),
  Schema.Struct({
    op: Schema.Literal("list"),
    prefix: Schema.String,
    limit: Schema.Int,
    cursor: Schema.optionalKey(Schema.String)
  })
])
export type KvOperation = typeof KvOperation.Type

const decodeKvOperation = Schema.decodeUnknownEffect(KvOperation)

/**
 * Runs one guest `env.KV` call for the function against `FunctionKv`, after
 * checking it again on the host (the guest's checks are a courtesy: code can
 * reach its binding directly). Answers JSON: the value or null for `get`,
 * `{ keys, cursor }` for `list`, null otherwise.
 */
export const serveKvOperation = (functionId: string, input: unknown) =>
  Effect.gen(function*() {
    const kv = yield* FunctionKv
    const operation = yield* decodeKvOperation(input).pipe(
      Effect.mapError(() => new FunctionKvError({ message: "Malformed KV operation" }))
    )
    const problem = operation.op === "list"
      ? undefined
      : kvKeyProblem(operation.key) ?? (operation.op === "put" ? kvValueProblem(operation.value) : undefined)
    if (problem !== undefined) return yield* new FunctionKvError({ message: problem })
    switch (operation.op) {
      case "get":
        return Option.getOrNull(yield* kv.get(functionId, operation.key))
      case "put": {
        const ttl = operation.expirationTtl
        if (ttl !== undefined && !(ttl > 0)) {
          return yield* new FunctionKvError({ message: "expirationTtl must be a positive number of seconds" })
        }
        yield* kv.put(functionId, operation.key, operation.value, ttl === undefined ? {} : { expirationTtl: ttl })
        return null
      }
      case "delete":
        yield* kv.delete(functionId, operation.key)
        return null
      case "list": {
        if (operation.limit < 1 || operation.limit > KvLimits.maxListLimit) {
          return yield* new FunctionKvError({ message: `limit must be from 1 to ${KvLimits.maxListLimit}` })
        }
        const page = yield* kv.list(functionId, {
          prefix: operation.prefix,
          limit: operation.limit,
          cursor: operation.cursor
        })
        return { keys: page.keys, cursor: page.cursor ?? null }
      }
    }
  })
