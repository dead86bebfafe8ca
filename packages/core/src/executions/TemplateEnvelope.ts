/**
 * The `template` message object of a `send_template` node (decisions
 * 2.3.3): the mirrored template and the node's already interpolated
 * `parameters`, in any of the spec's forms, turned into the network's
 * `components`.
 *
 * Rules decided here, where the spec is silent:
 * - An array whose items are all objects is the network's `components` form
 *   and is sent as given (the network checks it); any other array is the
 *   positional form. Values that are not strings (numbers, booleans) are
 *   sent as their text; null and missing values count as given-but-empty.
 * - Object form: keys that are all digits are positional (`"1"`, `"2"`,
 *   ...), any other non-reserved key is a named variable. Mixing the two is a
 *   mismatch.
 * - The positional array form on a NAMED template fills the names in the
 *   order the body first uses them.
 * - Every variable the template has must be given and nothing else:
 *   body variables, one `header_text` for a text header with a variable,
 *   `header_media_url` for a media header (`header_filename` only with a
 *   document), one `button_url_<index>` per URL button whose url ends in a
 *   variable. Anything missing or extra fails with `Template parameter
 *   mismatch` and says what.
 * - Authentication templates: `code` fills the body's one variable and the
 *   OTP button (`sub_type` `otp`, as the spec's send table says); a single
 *   positional value is taken as the code too.
 */
import { Predicate } from "effect"
import type { TemplateRecord } from "../messaging/templates/Template.ts"
import { renderText } from "./Interpolation.ts"

type Json = Record<string, unknown>

const placeholderPattern = /\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g

/** Distinct placeholder names of a template text, in order of first use. */
export const templateVariables = (text: string): Array<string> => [...new Set([...text.matchAll(placeholderPattern)].map((m) => m[1]!))]

const componentOf = (t: TemplateRecord, type: string): Json | undefined =>
  t.components.find((c) => String(c.type).toUpperCase() === type) as Json | undefined

const RESERVED = /^(header_text|header_media_url|header_filename|button_url_\d+|code)$/
const MEDIA_FORMATS = new Set(["IMAGE", "VIDEO", "DOCUMENT"])

export class TemplateMismatch {
  readonly _tag = "TemplateMismatch"
  readonly message: string
  constructor(message: string) {
    this.message = message
  }
}

const mismatch = (why: string) => new TemplateMismatch(`Template parameter mismatch: ${why}`)

const textParameter = (value: unknown, name?: string): Json => ({
  type: "text",
  ...(name !== undefined ? { parameter_name: name } : {}),
  text: renderText(value)
})

/** What a template asks of its parameters, read from its record once (a broadcast fills it per recipient). */
interface TemplateShape {
  readonly auth: boolean
  readonly named: boolean
  /** The body's variables, in order of first use. */
  readonly bodyNames: ReadonlyArray<string>
  /** The header's format (upper case), if it has a header. */
  readonly headerFormat: string | undefined
  /** A text header's variables. */
  readonly headerNames: ReadonlyArray<string>
  /** The OTP button's index, or -1. */
  readonly otpIndex: number
  /** Indexes of the URL buttons whose url ends in a variable. */
  readonly urlButtons: ReadonlyArray<number>
}

const shapes = new WeakMap<TemplateRecord, TemplateShape>()

const shapeOf = (t: TemplateRecord): TemplateShape => {
  const known = shapes.get(t)
  if (known !== undefined) return known
  const header = componentOf(t, "HEADER")
  const headerFormat = header === undefined ? undefined : String(header.format ?? "TEXT").toUpperCase()
  const buttons = componentOf(t, "BUTTONS")?.buttons
  const urlButtons: Array<number> = []
  if (Array.isArray(buttons)) {
    for (const [index, b] of buttons.entries()) {
      if (Predicate.isObject(b) && String(b.type).toUpperCase() === "URL" && templateVariables(String(b.url ?? "")).length > 0) urlButtons.push(index)
    }
  }
  const shape: TemplateShape = {
    auth: t.category === "AUTHENTICATION",
    named: t.parameter_format === "NAMED",
    bodyNames: templateVariables(String(componentOf(t, "BODY")?.text ?? "")),
    headerFormat,
    headerNames: headerFormat === "TEXT" ? templateVariables(String(header!.text ?? "")) : [],
    otpIndex: Array.isArray(buttons) ? buttons.findIndex((b) => Predicate.isObject(b) && String(b.type).toUpperCase() === "OTP") : -1,
    urlButtons
  }
  shapes.set(t, shape)
  return shape
}

/** The `components` to send, or why the parameters do not fit the template. */
export const templateComponents = (t: TemplateRecord, parameters: unknown): ReadonlyArray<Json> | TemplateMismatch => {
  if (Array.isArray(parameters) && parameters.length > 0 && parameters.every(Predicate.isObject)) return parameters as ReadonlyArray<Json>
  const given: Json = parameters === undefined || parameters === null
    ? {}
    : Array.isArray(parameters)
    ? Object.fromEntries(parameters.map((v, i) => [String(i + 1), v]))
    : Predicate.isObject(parameters)
    ? parameters as Json
    : { "1": parameters }
  const { auth, bodyNames, headerFormat: format, headerNames, named, otpIndex, urlButtons } = shapeOf(t)
  const variableKeys = Object.keys(given).filter((k) => !RESERVED.test(k))
  const positional = variableKeys.filter((k) => /^\d+$/.test(k))
  if (positional.length > 0 && positional.length !== variableKeys.length) return mismatch("positional and named variables are mixed")
  const components: Array<Json> = []

  // Header
  if (format === "TEXT") {
    if (headerNames.length > 0) {
      if (!("header_text" in given)) return mismatch("the header needs header_text")
      components.push({ type: "header", parameters: [textParameter(given.header_text, named ? headerNames[0] : undefined)] })
    } else if ("header_text" in given) return mismatch("the header has no variable, header_text was given")
  } else if ("header_text" in given) return mismatch("the template has no text header, header_text was given")
  if (format !== undefined && MEDIA_FORMATS.has(format)) {
    if (!("header_media_url" in given)) return mismatch(`the ${format.toLowerCase()} header needs header_media_url`)
    const type = format.toLowerCase()
    const filename = given.header_filename
    if (filename !== undefined && format !== "DOCUMENT") return mismatch("header_filename is for document headers")
    components.push({
      type: "header",
      parameters: [{ type, [type]: { link: renderText(given.header_media_url), ...(filename !== undefined ? { filename: renderText(filename) } : {}) } }]
    })
  } else {
    if ("header_media_url" in given) return mismatch("the template has no media header, header_media_url was given")
    if ("header_filename" in given) return mismatch("the template has no document header, header_filename was given")
  }
  if (format === "LOCATION") return mismatch("a location header needs the components form of parameters")

  // Body
  if (auth) {
    const code = "code" in given ? given.code : positional.length === 1 ? given[positional[0]!] : undefined
    if (code === undefined) return mismatch("the authentication template needs code")
    if (variableKeys.length > ("code" in given ? 0 : 1)) return mismatch("an authentication template takes only code")
    components.push({ type: "body", parameters: [textParameter(code)] })
    if (otpIndex >= 0) components.push({ type: "button", sub_type: "otp", index: String(otpIndex), parameters: [textParameter(code)] })
    return components
  }
  if ("code" in given) return mismatch("code is for authentication templates")
  if (positional.length > 0) {
    if (positional.length !== bodyNames.length) {
      return mismatch(`the body has ${bodyNames.length} variable(s), ${positional.length} given`)
    }
    const values = [...positional].sort((a, b) => Number(a) - Number(b))
    if (!named && !values.every((k, i) => k === String(i + 1))) return mismatch("positional variables must be 1..n")
    if (!named && !bodyNames.every((n, i) => n === String(i + 1))) return mismatch("the template's variables are not 1..n")
    components.push({ type: "body", parameters: values.map((k, i) => textParameter(given[k], named ? bodyNames[i] : undefined)) })
  } else {
    if (variableKeys.length > 0 && !named) return mismatch("the template takes positional variables, named ones were given")
    const missing = bodyNames.filter((n) => !variableKeys.includes(n))
    const extra = variableKeys.filter((k) => !bodyNames.includes(k))
    if (missing.length > 0) return mismatch(`missing ${missing.join(", ")}`)
    if (extra.length > 0) return mismatch(`the template has no ${extra.join(", ")}`)
    if (bodyNames.length > 0) components.push({ type: "body", parameters: bodyNames.map((n) => textParameter(given[n], n)) })
  }

  // URL buttons with a variable suffix
  for (const index of urlButtons) {
    const key = `button_url_${index}`
    if (!(key in given)) return mismatch(`the URL button at index ${index} needs ${key}`)
    components.push({ type: "button", sub_type: "url", index: String(index), parameters: [textParameter(given[key])] })
  }
  for (const key of Object.keys(given)) {
    const m = /^button_url_(\d+)$/.exec(key)
    if (m !== null && !urlButtons.includes(Number(m[1]))) return mismatch(`the template has no URL button with a variable at index ${m[1]}`)
  }
  return components
}

/** The message object of the send. */
export const templateEnvelope = (t: TemplateRecord, components: ReadonlyArray<Json>): Json => ({
  type: "template",
  template: {
    name: t.name,
    language: { code: t.language },
    ...(components.length > 0 ? { components } : {})
  }
})
