/**
 * A request body read as the network reads it: JSON, or form fields (multipart or URL-encoded) whose JSON-looking
 * values are parsed; anything else is not JSON (100).
 */
import { Option } from "effect"
import { parseJson as readJson } from "../../shared/Json.ts"
import type { Json } from "./Model.ts"
import { simError } from "../../network/ErrorCodes.ts"
import type { SimBody } from "./Protocol.ts"

const decoder = new TextDecoder()

/** A body read as the network reads it: JSON, or form fields (JSON-looking values parsed). */
export const readBody = (body: SimBody): { readonly value: unknown } | undefined => {
  if (body._tag === "None") return { value: undefined }
  // The HTTP face parses URL-encoded bodies into fields; bytes handed over in process get the same reading.
  if (body._tag === "Bytes" && /^application\/x-www-form-urlencoded/i.test(body.contentType)) {
    const fields: Record<string, string> = {}
    for (const [key, value] of new URLSearchParams(decoder.decode(body.bytes))) fields[key] ??= value
    return readBody({ _tag: "Form", fields, files: [] })
  }
  if (body._tag === "Form") {
    const value: Json = {}
    for (const [key, field] of Object.entries(body.fields)) {
      value[key] = /^\s*[[{]/.test(field) ? parseJson(field)?.value ?? field : field
    }
    return { value }
  }
  if (body.bytes.byteLength === 0) return { value: undefined }
  return parseJson(decoder.decode(body.bytes))
}

/** `{ value }` of a JSON text, undefined when it is not JSON. */
const parseJson = (text: string): { readonly value: unknown } | undefined =>
  Option.match(readJson(text), { onNone: () => undefined, onSome: (value) => ({ value }) })

export const notJson = () => simError(100, "The request body is not valid JSON")
