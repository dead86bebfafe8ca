/**
 * The proxy's `fields` selector (decisions 2.10, 4.10): a comma list of
 * top-level names plus at most one `ext(...)` group. `ext(a,b)` keeps those
 * extension keys, `ext(*)` or `ext(default)` (or a bare `ext`) keeps all,
 * `ext()` drops `ext`. Without `fields` everything is answered. Unknown names
 * inside `ext(...)` are refused (400, naming them); unknown top-level names
 * are ignored. `id` is always answered, as the network does.
 */

export interface FieldSelection {
  /** Top-level names to keep; undefined keeps every one. */
  readonly top: ReadonlySet<string> | undefined
  /** `ext` keys to keep; undefined keeps all, an empty set drops `ext`. */
  readonly ext: ReadonlySet<string> | undefined
}

export type FieldsParse =
  | { readonly _tag: "Ok"; readonly selection: FieldSelection }
  | { readonly _tag: "Invalid"; readonly error: string }

/** Names accepted inside `ext(...)` on messages (decisions 2.10), plus `phone_number_id` which every message carries. */
export const MESSAGE_EXT_FIELDS: ReadonlyArray<string> = [
  "direction",
  "status",
  "processing_status",
  "origin",
  "phone_number",
  "phone_number_id",
  "has_media",
  "media_data",
  "media_url",
  "msg_conversation_id",
  "contact_name",
  "message_type_data",
  "content",
  "transcript",
  "statuses",
  "flow_response",
  "flow_token",
  "flow_name",
  "order_text"
]

/** The eight keys of a conversation's `ext`. */
export const CONVERSATION_EXT_FIELDS: ReadonlyArray<string> = [
  "contact_name",
  "messages_count",
  "last_message_id",
  "last_message_type",
  "last_message_timestamp",
  "last_message_text",
  "last_inbound_at",
  "last_outbound_at"
]

/** Splits on commas outside parentheses. */
const splitTop = (input: string): Array<string> | undefined => {
  const parts: Array<string> = []
  let depth = 0
  let current = ""
  for (const ch of input) {
    if (ch === "(") depth++
    if (ch === ")") depth--
    if (depth < 0) return undefined
    if (ch === "," && depth === 0) {
      parts.push(current)
      current = ""
    } else current += ch
  }
  if (depth !== 0) return undefined
  parts.push(current)
  return parts.map((p) => p.trim()).filter((p) => p.length > 0)
}

export const parseFields = (raw: string | undefined | null, allowedExt: ReadonlyArray<string>): FieldsParse => {
  if (raw === undefined || raw === null) return { _tag: "Ok", selection: { top: undefined, ext: undefined } }
  const parts = splitTop(raw)
  if (parts === undefined) return { _tag: "Invalid", error: "fields has unbalanced parentheses" }
  const top = new Set<string>(["id"])
  let ext: Set<string> | undefined = new Set()
  let groups = 0
  for (const part of parts) {
    const group = /^ext\s*\((.*)\)$/s.exec(part)
    if (group === null && part !== "ext") {
      top.add(part)
      continue
    }
    if (++groups > 1) return { _tag: "Invalid", error: "fields accepts at most one ext(...) group" }
    const names = group === null ? ["*"] : group[1]!.split(",").map((n) => n.trim()).filter((n) => n.length > 0)
    if (names.includes("*") || names.includes("default")) {
      ext = undefined
      continue
    }
    const unknown = names.filter((n) => !allowedExt.includes(n))
    if (unknown.length > 0) return { _tag: "Invalid", error: `Unknown ext field(s): ${unknown.join(", ")}` }
    ext = new Set(names)
  }
  return { _tag: "Ok", selection: { top, ext } }
}

/** Applies a selection to a rendered object whose extension object sits under `ext`. */
export const selectFields = (value: Readonly<Record<string, unknown>>, selection: FieldSelection): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const [key, v] of Object.entries(value)) {
    if (key === "ext") continue
    if (selection.top === undefined || selection.top.has(key)) out[key] = v
  }
  const ext = value["ext"]
  if (typeof ext === "object" && ext !== null && !(selection.ext !== undefined && selection.ext.size === 0)) {
    out["ext"] = selection.ext === undefined
      ? ext
      : Object.fromEntries(Object.entries(ext).filter(([k]) => selection.ext!.has(k)))
  }
  return out
}
