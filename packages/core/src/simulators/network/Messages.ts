/**
 * How the simulated network reads a send envelope: the checks it makes and the
 * code each failure answers with. Structure problems (not an object, no
 * `messaging_product`) answer 100; a missing required member 131008; a member
 * with a value the network does not accept 131009; template problems their
 * 132xxx codes.
 */
import { Option, Predicate, Schema } from "effect"
import { MessagingProduct } from "../../network/NetworkObjects.ts"
import { type SimError, simError } from "../../network/ErrorCodes.ts"
import { OptionalString } from "../../shared/Json.ts"
import { isSimError } from "./Access.ts"
import {
  isUserId,
  type Json,
  type MediaRecord,
  normalizePhone,
  type NumberRecord,
  type SimState,
  type TemplateRecord
} from "./Model.ts"

export const messageTypes = [
  "text",
  "template",
  "interactive",
  "reaction",
  "image",
  "audio",
  "video",
  "document",
  "sticker",
  "location",
  "contacts"
] as const

const mediaTypes = new Set(["image", "audio", "video", "document", "sticker"])

const interactiveTypes = new Set([
  "button",
  "list",
  "cta_url",
  "flow",
  "product",
  "product_list",
  "catalog_message",
  "location_request_message",
  "address_message",
  "request_contact_info",
  "carousel",
  "call_permission_request"
])

export interface Recipient {
  /** `to` or `recipient` as given (the answer echoes it as `input`). */
  readonly input: string
  /** Digits of `to`; undefined when the envelope addresses a business-scoped id. */
  readonly waId: string | undefined
  /** The business-scoped id of `recipient` when `to` is absent. */
  readonly userId: string | undefined
}

export type Envelope =
  | { readonly _tag: "MarkRead"; readonly messageId: string; readonly typing: boolean }
  | {
    readonly _tag: "Message"
    readonly type: string
    readonly recipient: Recipient
    readonly template: TemplateRecord | undefined
    readonly bizOpaqueCallbackData: string | undefined
  }

const missing = (path: string) => simError(131008, `The parameter ${path} is required.`)
const invalid = (path: string, why: string) => simError(131009, `Param ${path} ${why}`)

const mediaUsable = (state: SimState, number: NumberRecord, id: string, now: number): MediaRecord | undefined => {
  const media = state.media.get(id)
  return media !== undefined && !media.deleted && media.expiresAt > now &&
      media.businessAccountId === number.businessAccountId
    ? media
    : undefined
}

const checkUrl = (value: string): boolean => URL.canParse(value) && /^https?:/i.test(value)

const checkText = (body: Json): SimError | undefined => {
  const text = body["text"]
  if (!Predicate.isObject(text)) return missing("text")
  const content = text["body"]
  if (content === undefined) return missing("text['body']")
  if (typeof content !== "string" || content.trim().length === 0) return invalid("text['body']", "must be a non-empty string")
  if (content.length > 4096) return invalid("text['body']", "must be at most 4096 characters long")
  if (text["preview_url"] !== undefined && typeof text["preview_url"] !== "boolean") {
    return invalid("text['preview_url']", "must be a boolean")
  }
  return undefined
}

// What the checks read of the request's objects: a field of another type reads as absent, as the network's does.
const mediaRef = Schema.decodeUnknownSync(Schema.Struct({ id: OptionalString, link: OptionalString }))
const parameterFields = Schema.decodeUnknownSync(Schema.Struct({ type: OptionalString, parameter_name: OptionalString }))
/** A button's `reply`, and a list's row: both need an id and a title. */
const Choice = Schema.decodeUnknownOption(Schema.Struct({ id: Schema.String, title: Schema.String }))

const checkMedia = (state: SimState, number: NumberRecord, type: string, body: Json, now: number): SimError | undefined => {
  const media = body[type]
  if (!Predicate.isObject(media)) return missing(type)
  const { id, link } = mediaRef(media)
  if (id === undefined && link === undefined) return missing(`${type}['id'] or ${type}['link']`)
  if (id !== undefined && mediaUsable(state, number, id, now) === undefined) {
    return invalid(`${type}['id']`, `is not a valid media id: ${id}`)
  }
  if (id === undefined && link !== undefined && !checkUrl(link)) return invalid(`${type}['link']`, "must be an http(s) URL")
  const caption = media["caption"]
  if (caption !== undefined) {
    if (type === "audio" || type === "sticker") return invalid(`${type}['caption']`, `is not supported on ${type}`)
    if (typeof caption !== "string" || caption.length > 1024) {
      return invalid(`${type}['caption']`, "must be a string of at most 1024 characters")
    }
  }
  return undefined
}

const checkInteractive = (body: Json): SimError | undefined => {
  const interactive = body["interactive"]
  if (!Predicate.isObject(interactive)) return missing("interactive")
  const kind = interactive["type"]
  if (kind === undefined) return missing("interactive['type']")
  if (typeof kind !== "string" || !interactiveTypes.has(kind)) {
    return invalid("interactive['type']", `must be one of {${[...interactiveTypes].join(", ")}}`)
  }
  const bodyText = Predicate.isObject(interactive["body"]) ? interactive["body"]["text"] : undefined
  if (bodyText !== undefined && (typeof bodyText !== "string" || bodyText.length > 1024)) {
    return invalid("interactive['body']['text']", "must be a string of at most 1024 characters")
  }
  const action = interactive["action"]
  if (kind === "button" || kind === "list") {
    if (bodyText === undefined) return missing("interactive['body']['text']")
    if (!Predicate.isObject(action)) return missing("interactive['action']")
  }
  if (kind === "button" && Predicate.isObject(action)) {
    const buttons = action["buttons"]
    if (!Array.isArray(buttons) || buttons.length === 0) return missing("interactive['action']['buttons']")
    if (buttons.length > 3) return invalid("interactive['action']['buttons']", "must have at most 3 buttons")
    const ids = new Set<string>()
    for (const [i, button] of buttons.entries()) {
      const reply = Predicate.isObject(button) ? Choice(button["reply"]) : Option.none()
      if (Option.isNone(reply)) return missing(`interactive['action']['buttons'][${i}]['reply']`)
      const { id, title } = reply.value
      if (title.length === 0 || title.length > 20) {
        return invalid(`interactive['action']['buttons'][${i}]['reply']['title']`, "must be 1 to 20 characters long")
      }
      if (id.length === 0 || id.length > 256 || ids.has(id)) {
        return invalid(`interactive['action']['buttons'][${i}]['reply']['id']`, "must be unique and 1 to 256 characters long")
      }
      ids.add(id)
    }
  }
  if (kind === "list" && Predicate.isObject(action)) {
    const button = action["button"]
    if (typeof button !== "string") return missing("interactive['action']['button']")
    if (button.length === 0 || button.length > 20) {
      return invalid("interactive['action']['button']", "must be 1 to 20 characters long")
    }
    const sections = action["sections"]
    if (!Array.isArray(sections) || sections.length === 0) return missing("interactive['action']['sections']")
    if (sections.length > 10) return invalid("interactive['action']['sections']", "must have at most 10 sections")
    let rows = 0
    for (const [s, section] of sections.entries()) {
      const list = Predicate.isObject(section) ? section["rows"] : undefined
      if (!Array.isArray(list) || list.length === 0) return missing(`interactive['action']['sections'][${s}]['rows']`)
      for (const [r, row] of list.entries()) {
        rows++
        const choice = Choice(row)
        if (Option.isNone(choice)) return missing(`interactive['action']['sections'][${s}]['rows'][${r}]`)
        const { title } = choice.value
        if (title.length === 0 || title.length > 24) {
          return invalid(`interactive['action']['sections'][${s}]['rows'][${r}]['title']`, "must be 1 to 24 characters long")
        }
      }
    }
    if (rows > 10) return invalid("interactive['action']['sections']", "must have at most 10 rows in total")
  }
  if (kind !== "button" && kind !== "list" && kind !== "location_request_message" && !Predicate.isObject(action)) {
    return missing("interactive['action']")
  }
  return undefined
}

const checkReaction = (body: Json): SimError | undefined => {
  const reaction = body["reaction"]
  if (!Predicate.isObject(reaction)) return missing("reaction")
  if (typeof reaction["message_id"] !== "string") return missing("reaction['message_id']")
  if (typeof reaction["emoji"] !== "string") return missing("reaction['emoji']")
  return undefined
}

const checkLocation = (body: Json): SimError | undefined => {
  const location = body["location"]
  if (!Predicate.isObject(location)) return missing("location")
  const { latitude, longitude } = location
  if (latitude === undefined) return missing("location['latitude']")
  if (longitude === undefined) return missing("location['longitude']")
  if (typeof latitude !== "number" || latitude < -90 || latitude > 90) {
    return invalid("location['latitude']", "must be a number between -90 and 90")
  }
  if (typeof longitude !== "number" || longitude < -180 || longitude > 180) {
    return invalid("location['longitude']", "must be a number between -180 and 180")
  }
  return undefined
}

const checkContacts = (body: Json): SimError | undefined => {
  const contacts = body["contacts"]
  if (!Array.isArray(contacts) || contacts.length === 0) return missing("contacts")
  for (const [i, contact] of contacts.entries()) {
    const name = Predicate.isObject(contact) && Predicate.isObject(contact["name"]) ? contact["name"] : undefined
    if (name === undefined || typeof name["formatted_name"] !== "string") {
      return missing(`contacts[${i}]['name']['formatted_name']`)
    }
  }
  return undefined
}

// ---------------------------------------------------------------------------------------------
// Templates

const placeholderPattern = /\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g

/** Distinct placeholder names of a template text, in order of first use. */
export const placeholders = (text: string): Array<string> => [
  ...new Set([...text.matchAll(placeholderPattern)].map((match) => match[1]!))
]

const componentOf = (template: TemplateRecord, type: string) =>
  template.components.find((component) => String(component["type"]).toUpperCase() === type)

const sendComponents = (template: Json): Array<Json> =>
  Array.isArray(template["components"]) ? template["components"].filter(Predicate.isObject) : []

const parameterValue = (parameter: Json): string | SimError => {
  const type = parameterFields(parameter).type ?? "text"
  if (type === "text") {
    const text = parameter["text"]
    if (typeof text !== "string") return missing("parameter['text']")
    return text
  }
  if (type === "currency" || type === "date_time") {
    const value = parameter[type]
    if (!Predicate.isObject(value) || typeof value["fallback_value"] !== "string") {
      return missing(`parameter['${type}']['fallback_value']`)
    }
    return value["fallback_value"]
  }
  if (type === "payload") {
    return typeof parameter["payload"] === "string" ? parameter["payload"] : missing("parameter['payload']")
  }
  return invalid("parameter['type']", `${type} is not valid in a text position`)
}

/** Checks the parameters of one text component (body or text header); answers the hydrated text. */
const checkTextParameters = (
  template: TemplateRecord,
  label: string,
  text: string,
  component: Json | undefined
): string | SimError => {
  const names = placeholders(text)
  const parameters = component !== undefined && Array.isArray(component["parameters"])
    ? component["parameters"].filter(Predicate.isObject)
    : []
  if (parameters.length !== names.length) {
    return simError(
      132000,
      `${label}: number of localizable_params (${parameters.length}) does not match ` +
        `the expected number of params (${names.length})`
    )
  }
  const values = new Map<string, string>()
  for (const [i, parameter] of parameters.entries()) {
    const name = parameterFields(parameter).parameter_name
    if (template.parameterFormat === "NAMED") {
      if (name === undefined || !names.includes(name)) {
        return simError(132012, `${label}: parameter ${i} needs a parameter_name among {${names.join(", ")}}`)
      }
    } else if (name !== undefined) {
      return simError(132012, `${label}: the template uses positional parameters, parameter_name is not expected`)
    }
    const value = parameterValue(parameter)
    if (typeof value !== "string") return value
    values.set(template.parameterFormat === "NAMED" ? name! : names[i]!, value)
  }
  return text.replace(placeholderPattern, (_, name: string) => values.get(name) ?? "")
}

/** The template a send names, checked like the network checks it before accepting the send. */
const checkTemplate = (state: SimState, number: NumberRecord, body: Json): TemplateRecord | SimError => {
  const template = body["template"]
  if (!Predicate.isObject(template)) return missing("template")
  const name = template["name"]
  if (name === undefined) return missing("template['name']")
  if (typeof name !== "string") return invalid("template['name']", "must be a string")
  const language = Predicate.isObject(template["language"]) ? template["language"]["code"] : undefined
  if (language === undefined) return missing("template['language']['code']")
  if (typeof language !== "string") return invalid("template['language']['code']", "must be a string")
  const record = [...state.templates.values()].find((t) =>
    !t.deleted && t.businessAccountId === number.businessAccountId && t.name === name && t.language === language
  )
  if (record === undefined || record.status === "PENDING" || record.status === "REJECTED") {
    return simError(132001, `template name (${name}) does not exist in ${language}`)
  }
  if (record.status === "PAUSED") return simError(132015, `Template ${name} is paused due to low quality`)
  if (record.status === "DISABLED") return simError(132016, `Template ${name} has been disabled`)
  if (record.status !== "APPROVED") return simError(132001, `template name (${name}) is not available (${record.status})`)

  const components = sendComponents(template)
  const sent = (type: string) => components.find((c) => String(c["type"]).toLowerCase() === type)

  const bodyText = String(componentOf(record, "BODY")?.["text"] ?? "")
  const hydrated = checkTextParameters(record, "body", bodyText, sent("body"))
  if (typeof hydrated !== "string") return hydrated
  if (hydrated.length > 1024) return simError(132005, "Body text exceeds 1024 characters after parameter substitution")

  const header = componentOf(record, "HEADER")
  if (header !== undefined) {
    const format = String(header["format"] ?? "TEXT").toUpperCase()
    if (format === "TEXT") {
      const checked = checkTextParameters(record, "header", String(header["text"] ?? ""), sent("header"))
      if (typeof checked !== "string") return checked
    } else {
      const parameters = sent("header")?.["parameters"]
      const first = Array.isArray(parameters) ? parameters[0] : undefined
      if (first === undefined) return simError(132000, `header: a ${format.toLowerCase()} parameter is expected`)
      if (!Predicate.isObject(first) || String(first["type"]).toUpperCase() !== format) {
        return simError(132012, `header: the template expects a ${format.toLowerCase()} parameter`)
      }
    }
  }

  const buttons = componentOf(record, "BUTTONS")?.["buttons"]
  if (Array.isArray(buttons)) {
    for (const [index, button] of buttons.entries()) {
      if (!Predicate.isObject(button)) continue
      const type = String(button["type"]).toUpperCase()
      const needsParameter = type === "OTP" ||
        (type === "URL" && typeof button["url"] === "string" && placeholders(button["url"]).length > 0)
      if (!needsParameter) continue
      const component = components.find((c) =>
        String(c["type"]).toLowerCase() === "button" && String(c["index"] ?? "0") === String(index)
      )
      const parameters = component !== undefined && Array.isArray(component["parameters"]) ? component["parameters"] : []
      if (parameters.length !== 1) {
        return simError(132000, `button at index ${index}: expected 1 parameter, got ${parameters.length}`)
      }
    }
  }
  if (record.category === "AUTHENTICATION") {
    // The one-time code is the body's only parameter.
    const parameters = sent("body")?.["parameters"]
    const otp = Array.isArray(parameters) && Predicate.isObject(parameters[0]) ? parameters[0]["text"] : undefined
    if (typeof otp === "string" && otp.length > 15) return simError(132005, "The one-time code is longer than 15 characters")
  }
  return record
}

// ---------------------------------------------------------------------------------------------
// Envelope

/** Reads a send body the way the network does; answers what to do or the error to answer. */
export const readEnvelope = (state: SimState, number: NumberRecord, body: unknown, now: number): Envelope | SimError => {
  if (!Predicate.isObject(body)) return simError(100, "The request body must be a JSON object")
  const product = body["messaging_product"]
  if (product === undefined) return simError(100, "The parameter messaging_product is required.")
  if (product !== MessagingProduct) return simError(100, `Param messaging_product must be ${MessagingProduct}`)

  if (body["status"] !== undefined) {
    if (body["status"] !== "read") return invalid("status", "must be read")
    const messageId = body["message_id"]
    if (messageId === undefined) return missing("message_id")
    if (typeof messageId !== "string") return invalid("message_id", "must be a string")
    const typing = body["typing_indicator"]
    if (typing !== undefined && (!Predicate.isObject(typing) || typing["type"] !== "text")) {
      return invalid("typing_indicator['type']", "must be text")
    }
    return { _tag: "MarkRead", messageId, typing: typing !== undefined }
  }

  const recipientType = body["recipient_type"]
  if (recipientType !== undefined && recipientType !== "individual") return invalid("recipient_type", "must be individual")

  let recipient: Recipient
  const to = body["to"]
  const userRecipient = body["recipient"]
  if (to !== undefined) {
    if (typeof to !== "string") return invalid("to", "must be a string")
    const waId = normalizePhone(to)
    if (waId === undefined) return invalid("to", "is not a valid phone number")
    recipient = { input: to, waId, userId: undefined }
  } else if (userRecipient !== undefined) {
    if (typeof userRecipient !== "string" || !isUserId(userRecipient)) {
      return invalid("recipient", "is not a valid business-scoped user id")
    }
    recipient = { input: userRecipient, waId: undefined, userId: userRecipient }
  } else {
    return missing("to")
  }

  const type = body["type"] ?? "text"
  if (typeof type !== "string" || !(messageTypes as ReadonlyArray<string>).includes(type)) {
    return invalid("type", `must be one of {${messageTypes.join(", ")}}`)
  }
  const context = body["context"]
  if (context !== undefined && (!Predicate.isObject(context) || typeof context["message_id"] !== "string")) {
    return invalid("context['message_id']", "must be a string")
  }
  const bizOpaque = body["biz_opaque_callback_data"]
  if (bizOpaque !== undefined && (typeof bizOpaque !== "string" || bizOpaque.length > 512)) {
    return invalid("biz_opaque_callback_data", "must be a string of at most 512 characters")
  }

  let problem: SimError | undefined
  let template: TemplateRecord | undefined
  if (type === "text") problem = checkText(body)
  else if (mediaTypes.has(type)) problem = checkMedia(state, number, type, body, now)
  else if (type === "interactive") problem = checkInteractive(body)
  else if (type === "reaction") problem = checkReaction(body)
  else if (type === "location") problem = checkLocation(body)
  else if (type === "contacts") problem = checkContacts(body)
  else {
    const checked = checkTemplate(state, number, body)
    if (isSimError(checked)) problem = checked
    else template = checked
  }
  if (problem !== undefined) return problem
  return { _tag: "Message", type, recipient, template, bizOpaqueCallbackData: bizOpaque as string | undefined }
}
