/**
 * Shaping of execution step-event payloads before they are stored (decisions
 * 6.8): secrets masked, strings cut to 4 KB, one payload at most 64 KB. Pure;
 * the journal calls `shapePayload` on every payload it writes.
 */
import { Predicate } from "effect"

export const STRING_MAX_BYTES = 4 * 1024
export const PAYLOAD_MAX_BYTES = 64 * 1024
export const SECRET_MASK = "[secret]"

/** UTF-8 length of a string, without encoding it (a lone surrogate counts as U+FFFD, 3 bytes). */
export const utf8Length = (s: string): number => {
  let n = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x80) n += 1
    else if (c < 0x800) n += 2
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4
      i++
    } else n += 3
  }
  return n
}

/** The longest prefix of `s` whose UTF-8 form fits in `maxBytes`, never splitting a code point. */
export const cutUtf8 = (s: string, maxBytes: number): string => {
  if (s.length * 3 <= maxBytes) return s // no UTF-16 unit takes more than 3 bytes
  let n = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    const pair = c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00
    const size = c < 0x80 ? 1 : c < 0x800 ? 2 : pair ? 4 : 3
    if (n + size > maxBytes) return s.slice(0, i)
    n += size
    if (pair) i++
  }
  return s
}

/** What stands in for a member removed to fit the payload limit; `bytes` is its UTF-8 JSON size. */
export interface Truncated {
  readonly truncated: true
  readonly bytes: number
}

const truncated = (bytes: number): Truncated => ({ truncated: true, bytes })
const truncatedBytes = (bytes: number): number => utf8Length(JSON.stringify(truncated(bytes)))

// ---------------------------------------------------------------------------
// Normalising: JSON semantics, masking and cutting in one walk, with sizes.
// ---------------------------------------------------------------------------

interface Sized {
  readonly value: unknown
  /** UTF-8 bytes of `JSON.stringify(value)`. */
  readonly bytes: number
  /** Present for objects and arrays. */
  readonly members?: ReadonlyArray<Member>
  readonly isArray: boolean
}

interface Member {
  readonly key: string
  /** Bytes the member costs besides its value: `"key":` in objects, nothing in arrays. */
  readonly overhead: number
  readonly node: Sized
}

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/**
 * One pass over all secrets at once, longest first, so that a secret inside
 * another is not half-masked and `[secret]` itself is never masked again.
 */
const masker = (secretValues: ReadonlyArray<string>): (s: string) => string => {
  const secrets = [...new Set(secretValues)].filter((s) => s !== "").sort((a, b) => b.length - a.length)
  if (secrets.length === 0) return (s) => s
  const pattern = new RegExp(secrets.map(escapeRegExp).join("|"), "g")
  return (s) => s.replace(pattern, SECRET_MASK)
}

const leaf = (value: unknown): Sized => ({ value, bytes: utf8Length(JSON.stringify(value)), isArray: false })

// What JSON.stringify leaves out of objects (and writes as null in arrays).
const isOmitted = (value: unknown): boolean =>
  value === undefined || Predicate.isFunction(value) || Predicate.isSymbol(value)

const container = (members: ReadonlyArray<Member>, isArray: boolean): Sized => {
  let bytes = 2 + Math.max(0, members.length - 1)
  for (const m of members) bytes += m.overhead + m.node.bytes
  return { value: build(members, isArray), bytes, members, isArray }
}

const build = (members: ReadonlyArray<Member>, isArray: boolean, replaced?: ReadonlyMap<number, unknown>): unknown =>
  isArray
    ? members.map((m, i) => replaced?.has(i) ? replaced.get(i) : m.node.value)
    // fromEntries defines own properties, so a `__proto__` key stays a key.
    : Object.fromEntries(members.map((m, i) => [m.key, replaced?.has(i) ? replaced.get(i) : m.node.value]))

const normalize = (value: unknown, mask: (s: string) => string): Sized => {
  if (Predicate.isString(value)) return leaf(cutUtf8(mask(value), STRING_MAX_BYTES))
  if (Predicate.isNumber(value)) return leaf(Number.isFinite(value) ? value : null)
  if (Predicate.isBoolean(value) || value === null) return leaf(value)
  if (Predicate.isBigInt(value)) return leaf(String(value))
  if (Predicate.isDate(value)) return leaf(Number.isNaN(value.getTime()) ? null : value.toISOString())
  if (Array.isArray(value)) {
    return container(
      value.map((item, i) => ({
        key: String(i),
        overhead: 0,
        node: isOmitted(item) ? leaf(null) : normalize(item, mask)
      })),
      true
    )
  }
  if (Predicate.isObject(value)) {
    const members: Array<Member> = []
    for (const [rawKey, item] of Object.entries(value)) {
      if (isOmitted(item)) continue
      const key = mask(rawKey)
      members.push({ key, overhead: utf8Length(JSON.stringify(key)) + 1, node: normalize(item, mask) })
    }
    return container(members, false)
  }
  return leaf(null)
}

// ---------------------------------------------------------------------------
// Fitting into the payload limit
// ---------------------------------------------------------------------------

/**
 * Makes `node` (an object or array) at least `excess` bytes smaller. Members
 * are taken largest first (earlier first among equals). A member that alone
 * holds the remaining excess and is itself an object or array is shrunk from
 * the inside by the same rule, so the cut lands as deep as possible; any
 * other member is replaced whole by its `Truncated` marker. When only members
 * no bigger than their marker remain, the node itself becomes a marker.
 */
const shrink = (node: Sized, excess: number): { readonly value: unknown; readonly bytes: number } => {
  const members = node.members!
  const order = members.map((_, i) => i).sort((a, b) => members[b]!.node.bytes - members[a]!.node.bytes)
  const replaced = new Map<number, unknown>()
  let left = excess
  for (const i of order) {
    if (left <= 0) break
    const member = members[i]!.node
    const saving = member.bytes - truncatedBytes(member.bytes)
    if (saving <= 0) break
    if (member.members !== undefined && saving >= left) {
      const inner = shrink(member, left)
      replaced.set(i, inner.value)
      left -= member.bytes - inner.bytes
    } else {
      replaced.set(i, truncated(member.bytes))
      left -= saving
    }
  }
  if (left > 0) return { value: truncated(node.bytes), bytes: truncatedBytes(node.bytes) }
  return { value: build(members, node.isArray, replaced), bytes: node.bytes - (excess - left) }
}

/**
 * A step-event payload as stored (6.8), as a new value:
 * 1. every occurrence of each secret value inside strings (object keys
 *    included) becomes `[secret]`, before anything is cut, so a cut never
 *    leaves part of a secret;
 * 2. every string is cut to 4 KB of UTF-8, never splitting a character;
 * 3. while the JSON is over 64 KB, the largest members give way: see
 *    `shrink` (the deepest member that alone accounts for the excess is
 *    replaced by `{"truncated": true, "bytes": N}`, N its UTF-8 JSON size;
 *    when none does, the largest ones are replaced one by one).
 * Values are read with JSON semantics: undefined members are dropped, dates
 * become ISO text, non-finite numbers null.
 */
export const shapePayload = (payload: unknown, secretValues: ReadonlyArray<string>): unknown => {
  // Most payloads (a step's duration, a node type, a variable set) are plain JSON far below every limit: with no
  // secret to mask they are stored as they are, without the copy and sizes of `normalize` (~2% of the host's CPU
  // per step of a chain).
  if (secretValues.length === 0 && plainWithin(payload, PAYLOAD_MAX_BYTES) >= 0) return payload
  const root = normalize(payload, masker(secretValues))
  if (root.bytes <= PAYLOAD_MAX_BYTES) return root.value
  if (root.members === undefined) return truncated(root.bytes) // unreachable: a cut string is far below the limit
  return shrink(root, root.bytes - PAYLOAD_MAX_BYTES).value
}

/** At most this many UTF-8 bytes of JSON per UTF-16 unit of a string (a control character is written `\u0000`). */
const JSON_BYTES_PER_UNIT = 6

/**
 * What is left of `budget` after `value`'s JSON at its largest, or -1 when `value` is not plain JSON that `normalize`
 * would keep as it is (a string it could cut, a member it would drop, a date, a non-finite number, a class instance)
 * or the budget runs out.
 */
const plainWithin = (value: unknown, budget: number): number => {
  if (budget < 0) return -1
  if (value === null || typeof value === "boolean") return budget - 5
  if (typeof value === "number") return Number.isFinite(value) ? budget - 24 : -1
  if (typeof value === "string") {
    return value.length * 3 <= STRING_MAX_BYTES ? budget - value.length * JSON_BYTES_PER_UNIT - 2 : -1
  }
  if (Array.isArray(value)) {
    let left = budget - 2
    for (const item of value) {
      if (item === undefined) return -1
      left = plainWithin(item, left - 1)
      if (left < 0) return -1
    }
    return left
  }
  if (typeof value === "object") {
    const prototype = Object.getPrototypeOf(value)
    if (prototype !== Object.prototype && prototype !== null) return -1
    let left = budget - 2
    for (const key in value) {
      if (!Object.hasOwn(value, key)) continue
      const item = (value as Record<string, unknown>)[key]
      if (item === undefined || key.length * 3 > STRING_MAX_BYTES) return -1
      left = plainWithin(item, left - key.length * JSON_BYTES_PER_UNIT - 4)
      if (left < 0) return -1
    }
    return left
  }
  return -1
}

/** `s` with every secret value masked (error messages, which are kept beside the log). */
export const maskSecrets = (s: string, secretValues: ReadonlyArray<string>): string =>
  secretValues.length === 0 ? s : masker(secretValues)(s)
