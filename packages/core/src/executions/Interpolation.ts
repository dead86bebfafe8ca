/**
 * Interpolation of workflow node fields against an execution's context
 * (decisions 2.4): `${ENV:NAME}` project secrets and `{{namespace.path}}`
 * runtime placeholders, plus the value rules that go with them (set_variable
 * conversion 2.3.13, variable names and the context size limit 2.4.5).
 *
 * Pure: no I/O, no clock. Failures are Effect errors so the engine `yield*`s
 * them into a step failure.
 *
 * Rules decided here, where the spec is silent:
 * - One tokenising pass does both substitutions. ENV placeholders and runtime
 *   placeholders are recognised in the template only; what either produces is
 *   never scanned again. So a secret containing `{{vars.x}}` stays literal, and
 *   a variable holding `${ENV:KEY}` never reveals the secret (user input can
 *   not reach the secret store). A placeholder whose braces contain an ENV
 *   reference (`{{vars.${ENV:K}}}`) is not a placeholder: it renders literally
 *   with the secret substituted.
 * - ENV syntax is `${ENV:NAME}` with NAME in `[A-Za-z0-9_]+`, no spaces. A name
 *   the project does not have fails with `Unknown environment variable NAME`;
 *   text that does not have that shape is left as is.
 * - A runtime placeholder is `{{ path }}` (spaces or newlines around the path
 *   allowed). The path's first segment is an identifier
 *   (`[A-Za-z_][A-Za-z0-9_]*`), later segments `[A-Za-z0-9_-]+` separated by
 *   single dots. First segment `vars`, `system`, `context` or `metadata` names
 *   the namespace; anything else is a bare variable (`{{x}}` is `{{vars.x}}`,
 *   `{{foo.bar}}` is `{{vars.foo.bar}}`). A variable named like a namespace is
 *   reached through `vars.` (`{{vars.context}}`).
 * - Anything else between braces (`{{}}`, `{{ }}`, `{{1}}` as in network
 *   templates, `{{a..b}}`, `{{a b}}`) and an unterminated `{{` stay as written.
 * - `\{{` renders `{{` and what follows is plain text (`\{{vars.x}}` gives
 *   `{{vars.x}}`). There is no escape for the backslash itself and none for
 *   `${ENV:`.
 * - Arrays are indexed by canonical numeric segments (`items.0`, not
 *   `items.00`); objects by own keys only (`constructor` is missing); strings
 *   are not indexed.
 * - In text: missing and null render as "", strings as themselves, numbers
 *   and booleans as their JSON text, objects and arrays as compact JSON. Null
 *   renders empty because a message reading "Hello null" is never meant.
 * - A JSON string that is exactly one runtime placeholder, ignoring
 *   surrounding whitespace, takes the raw value (missing gives null).
 */
import { Data, Effect, Option, Predicate, Result } from "effect"
import { parseJson } from "../shared/Json.ts"
import { ReservedVariableNames, VariableNamePattern } from "../workflows/NodeConfigs.ts"
import { utf8Length } from "./StepLog.ts"

export interface ExecutionContext {
  readonly vars: Record<string, unknown>
  readonly system: Record<string, unknown>
  readonly context: Record<string, unknown>
  readonly metadata: Record<string, unknown>
}

/** Project secrets by name, for `${ENV:NAME}` (10.5.4). */
export type Secrets = ReadonlyMap<string, string>

export class UnknownEnvironmentVariable extends Data.TaggedError("UnknownEnvironmentVariable")<{
  readonly name: string
  readonly message: string
}> {}

export class ValueConversionFailed extends Data.TaggedError("ValueConversionFailed")<{
  readonly valueType: string
  readonly message: string
}> {}

const NAMESPACES: ReadonlySet<string> = new Set(["vars", "system", "context", "metadata"])

// ---------------------------------------------------------------------------
// Tokens: the one place that decides what a template means.
// ---------------------------------------------------------------------------

type Token =
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "Env"; readonly name: string }
  /** `path` starts with its namespace (`x` is already `vars.x`). */
  | { readonly _tag: "Path"; readonly path: ReadonlyArray<string> }

// Where something may start: an escape, an ENV reference, a placeholder.
const CANDIDATE = /\\\{\{|\$\{ENV:|\{\{/g
const ENV_AT = /\$\{ENV:([A-Za-z0-9_]+)\}/y
const PLACEHOLDER_AT = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*)\s*\}\}/y

const namespaced = (segments: ReadonlyArray<string>): ReadonlyArray<string> =>
  NAMESPACES.has(segments[0]!) ? segments : ["vars", ...segments]

/**
 * Templates are a workflow's config texts, read at every step that runs them (twice: rendered, then searched for
 * the secrets to mask): each is tokenized once. At most `TOKENIZED_MAX` remembered, none longer than
 * `TOKENIZED_CHARS` (a few MB at worst).
 */
const TOKENIZED_MAX = 2_000
const TOKENIZED_CHARS = 2_048
const tokenized = new Map<string, ReadonlyArray<Token>>()

const tokenize = (template: string): ReadonlyArray<Token> => {
  const known = tokenized.get(template)
  if (known !== undefined) return known
  const tokens = tokenizeOnce(template)
  if (template.length > TOKENIZED_CHARS) return tokens
  if (tokenized.size >= TOKENIZED_MAX) tokenized.clear()
  tokenized.set(template, tokens)
  return tokens
}

const tokenizeOnce = (template: string): ReadonlyArray<Token> => {
  const tokens: Array<Token> = []
  let text = ""
  let from = 0 // start of the plain text not yet copied into `text`
  const candidates = new RegExp(CANDIDATE.source, "g")
  let m: RegExpExecArray | null
  while ((m = candidates.exec(template)) !== null) {
    const at = m.index
    text += template.slice(from, at)
    if (m[0] === "\\{{") {
      text += "{{"
      from = at + 3
    } else {
      const sticky = m[0] === "{{" ? PLACEHOLDER_AT : ENV_AT
      sticky.lastIndex = at
      const hit = sticky.exec(template)
      if (hit === null) {
        // Not ours: keep the first character and look again one further on,
        // so `{{{vars.x}}}` still finds `{{vars.x}}`.
        text += template[at]
        from = at + 1
      } else {
        if (text !== "") tokens.push({ _tag: "Text", text })
        text = ""
        tokens.push(
          m[0] === "{{"
            ? { _tag: "Path", path: namespaced(hit[1]!.split(".")) }
            : { _tag: "Env", name: hit[1]! }
        )
        from = at + hit[0].length
      }
    }
    candidates.lastIndex = from
  }
  text += template.slice(from)
  if (text !== "") tokens.push({ _tag: "Text", text })
  return tokens
}

// ---------------------------------------------------------------------------
// Resolution and rendering
// ---------------------------------------------------------------------------

const CANONICAL_INDEX = /^(?:0|[1-9][0-9]*)$/

const step = (value: unknown, segment: string): unknown => {
  if (Array.isArray(value)) return CANONICAL_INDEX.test(segment) ? value[Number(segment)] : undefined
  if (Predicate.isObject(value) && Object.hasOwn(value, segment)) return value[segment]
  return undefined
}

const resolveSegments = (ctx: ExecutionContext, path: ReadonlyArray<string>): unknown => {
  let value: unknown = ctx
  for (const segment of path) {
    value = step(value, segment)
    if (value === undefined) return undefined
  }
  return value
}

const PATH = /^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*$/

/**
 * The value at a dotted path (`vars.items.0.name`; a bare `x` is `vars.x`;
 * `vars` alone is the whole namespace), or undefined when missing or when the
 * path is not a placeholder path.
 */
export const resolvePath = (ctx: ExecutionContext, path: string): unknown | undefined =>
  PATH.test(path) ? resolveSegments(ctx, namespaced(path.split("."))) : undefined

/** How a value reads inside longer text. */
export const renderText = (value: unknown): string => {
  if (value === undefined || value === null) return ""
  if (Predicate.isString(value)) return value
  if (Predicate.isNumber(value) || Predicate.isBoolean(value) || Predicate.isBigInt(value)) return String(value)
  if (Predicate.isObjectOrArray(value)) return JSON.stringify(value)
  return ""
}

const unknownEnv = (name: string) =>
  new UnknownEnvironmentVariable({ name, message: `Unknown environment variable ${name}` })

const renderTokens = (
  tokens: ReadonlyArray<Token>,
  ctx: ExecutionContext,
  secrets: Secrets
): Result.Result<string, UnknownEnvironmentVariable> => {
  let out = ""
  for (const token of tokens) {
    switch (token._tag) {
      case "Text":
        out += token.text
        break
      case "Env": {
        const secret = secrets.get(token.name)
        if (secret === undefined) return Result.fail(unknownEnv(token.name))
        out += secret
        break
      }
      case "Path":
        out += renderText(resolveSegments(ctx, token.path))
        break
    }
  }
  return Result.succeed(out)
}

/** The one runtime placeholder a string is made of, ignoring surrounding whitespace. */
const soleRuntimePlaceholder = (s: string): ReadonlyArray<string> | undefined => {
  const tokens = tokenize(s.trim())
  return tokens.length === 1 && tokens[0]!._tag === "Path" ? tokens[0]!.path : undefined
}

const interpolateResult = (
  value: unknown,
  ctx: ExecutionContext,
  secrets: Secrets
): Result.Result<unknown, UnknownEnvironmentVariable> => {
  if (Predicate.isString(value)) {
    const sole = soleRuntimePlaceholder(value)
    if (sole !== undefined) return Result.succeed(resolveSegments(ctx, sole) ?? null)
    return renderTokens(tokenize(value), ctx, secrets)
  }
  if (Array.isArray(value)) {
    const out: Array<unknown> = []
    for (const item of value) {
      const r = interpolateResult(item, ctx, secrets)
      if (Result.isFailure(r)) return r
      out.push(r.success)
    }
    return Result.succeed(out)
  }
  if (Predicate.isObject(value)) {
    const entries: Array<[string, unknown]> = []
    for (const [key, item] of Object.entries(value)) {
      const r = interpolateResult(item, ctx, secrets)
      if (Result.isFailure(r)) return r
      entries.push([key, r.success])
    }
    // fromEntries defines own properties, so a `__proto__` key stays a key.
    return Result.succeed(Object.fromEntries(entries))
  }
  return Result.succeed(value)
}

/**
 * Text interpolation (see the module notes for every rule): ENV secrets and
 * runtime placeholders in one pass, results never re-scanned; missing and null
 * render as "", objects and arrays as compact JSON.
 */
export const interpolateText = (
  template: string,
  ctx: ExecutionContext,
  secrets: Secrets
): Effect.Effect<string, UnknownEnvironmentVariable> => Effect.fromResult(renderTokens(tokenize(template), ctx, secrets))

/**
 * JSON value interpolation (webhook bodies, event properties, `json`
 * set_variable): recursive over arrays and object values (keys are kept as
 * written). A string that is exactly one runtime placeholder, after trimming
 * whitespace, becomes the raw value (missing gives null); other strings go
 * through `interpolateText`; other values are kept.
 */
export const interpolateValue = (
  value: unknown,
  ctx: ExecutionContext,
  secrets: Secrets
): Effect.Effect<unknown, UnknownEnvironmentVariable> => Effect.fromResult(interpolateResult(value, ctx, secrets))

const forEachString = (value: unknown, f: (s: string) => void): void => {
  if (Predicate.isString(value)) f(value)
  else if (Array.isArray(value)) for (const item of value) forEachString(item, f)
  else if (Predicate.isObject(value)) for (const item of Object.values(value)) forEachString(item, f)
}

/**
 * The secret values an interpolation of `template` inserts, so that logs can
 * mask them: distinct, in order of first reference, empty values left out
 * (masking "" would mask everything). Unknown names are skipped; they fail the
 * interpolation itself.
 */
export const secretsUsed = (template: unknown, secrets: Secrets): ReadonlyArray<string> => {
  if (secrets.size === 0) return []
  const used = new Set<string>()
  forEachString(template, (s) => {
    for (const token of tokenize(s)) {
      if (token._tag !== "Env") continue
      const secret = secrets.get(token.name)
      if (secret !== undefined && secret !== "") used.add(secret)
    }
  })
  return [...used]
}

/**
 * The runtime paths a value references, for variables discovery (2.4.6):
 * namespaced (`{{x}}` gives `vars.x`), distinct, in order of first reference.
 * A whole-namespace reference gives the namespace alone (`vars`).
 */
export const referencedPaths = (value: unknown): ReadonlyArray<string> => {
  const paths = new Set<string>()
  forEachString(value, (s) => {
    for (const token of tokenize(s)) {
      if (token._tag === "Path") paths.add(token.path.join("."))
    }
  })
  return [...paths]
}

// ---------------------------------------------------------------------------
// set_variable conversion (2.3.13)
// ---------------------------------------------------------------------------

const DECIMAL = /^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/

const preview = (value: unknown): string => {
  const text = Predicate.isString(value) ? JSON.stringify(value) : renderText(value) || String(value)
  return text.length > 100 ? `${text.slice(0, 100)}…` : text
}

const conversionFailed = (valueType: string, value: unknown, why?: string) =>
  Effect.fail(
    new ValueConversionFailed({
      valueType,
      message: `Cannot convert ${preview(value)} to ${valueType}${why === undefined ? "" : `: ${why}`}`
    })
  )

/**
 * The value set_variable stores, after interpolation:
 * - `string`: strings kept; numbers and booleans become their text; null,
 *   objects and arrays are kept as given (the default type must not turn a
 *   structured value into its JSON text).
 * - `number`: a decimal string (sign, fraction and exponent allowed, spaces
 *   around ignored) or a finite number; anything else fails.
 * - `boolean`: `true`/`false`/`1`/`0` as text (case-insensitive, spaces
 *   around ignored), a boolean, or the numbers 1 and 0; anything else fails.
 * - `json`: a string is parsed as JSON (failing when it is not); other values
 *   are kept.
 */
export const convertValue = (
  value: unknown,
  valueType: "string" | "number" | "boolean" | "json"
): Effect.Effect<unknown, ValueConversionFailed> => {
  switch (valueType) {
    case "string":
      return Effect.succeed(Predicate.isNumber(value) || Predicate.isBoolean(value) ? String(value) : value)
    case "number": {
      if (Predicate.isNumber(value)) {
        return Number.isFinite(value) ? Effect.succeed(value) : conversionFailed(valueType, value)
      }
      if (!Predicate.isString(value) || !DECIMAL.test(value.trim())) return conversionFailed(valueType, value)
      const n = Number(value.trim())
      return Number.isFinite(n) ? Effect.succeed(n) : conversionFailed(valueType, value, "out of range")
    }
    case "boolean": {
      if (Predicate.isBoolean(value)) return Effect.succeed(value)
      if (value === 1 || value === 0) return Effect.succeed(value === 1)
      if (Predicate.isString(value)) {
        const text = value.trim().toLowerCase()
        if (text === "true" || text === "1") return Effect.succeed(true)
        if (text === "false" || text === "0") return Effect.succeed(false)
      }
      return conversionFailed(valueType, value)
    }
    case "json": {
      if (!Predicate.isString(value)) return Effect.succeed(value)
      const parsed = parseJson(value)
      return Option.isSome(parsed) ? Effect.succeed(parsed.value) : conversionFailed(valueType, value, "not valid JSON")
    }
  }
}

// ---------------------------------------------------------------------------
// Names and size (2.4.5)
// ---------------------------------------------------------------------------

/** Variable names, `save_response_to`, `save_error_to`, `variable_name`. */
export const VARIABLE_NAME: RegExp = VariableNamePattern
export const VARIABLE_NAME_MAX_LENGTH = 64
export const RESERVED_VARIABLE_NAMES: ReadonlyArray<string> = ReservedVariableNames

export const isValidVariableName = (name: string): boolean =>
  name.length <= VARIABLE_NAME_MAX_LENGTH && VARIABLE_NAME.test(name) && !RESERVED_VARIABLE_NAMES.includes(name)

export const CONTEXT_MAX_BYTES = 256 * 1024

/** UTF-8 bytes of `JSON.stringify(ctx)`, the size checked against `CONTEXT_MAX_BYTES`. */
export const contextBytes = (ctx: ExecutionContext): number => utf8Length(JSON.stringify(ctx))

/**
 * Upper bounds of contexts' sizes: exact for a context measured, and for one `withMoreVars` derived from a bounded
 * one, that bound plus its new members' sizes (a replaced variable's old value still counted). Serialising the whole
 * context at every step cost a chain of `set_variable` ~3% of the host's CPU, growing with the context.
 */
const sizeBounds = new WeakMap<ExecutionContext, number>()

/** Whether `ctx` exceeds `CONTEXT_MAX_BYTES`: measured only when its bound does not already say it fits. */
export const contextTooLarge = (ctx: ExecutionContext): boolean => {
  const bound = sizeBounds.get(ctx)
  if (bound !== undefined && bound <= CONTEXT_MAX_BYTES) return false
  const bytes = contextBytes(ctx)
  sizeBounds.set(ctx, bytes)
  return bytes > CONTEXT_MAX_BYTES
}

/** `ctx` with `vars` set, its size bound carried over when `ctx` had one. */
export const withMoreVars = (ctx: ExecutionContext, vars: Readonly<Record<string, unknown>>): ExecutionContext => {
  const next: ExecutionContext = { ...ctx, vars: { ...ctx.vars, ...vars } }
  const bound = sizeBounds.get(ctx)
  if (bound !== undefined) {
    let added = 0
    for (const [name, value] of Object.entries(vars)) {
      const json = JSON.stringify(value)
      // `"name":value,` (a value JSON leaves out adds nothing).
      if (json !== undefined) added += utf8Length(JSON.stringify(name)) + utf8Length(json) + 2
    }
    sizeBounds.set(next, bound + added)
  }
  return next
}
