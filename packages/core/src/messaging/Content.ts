/**
 * The text rendition of a message (`ext.content`, decisions 2.10) and the
 * type-specific extras kept beside it (`ext.message_type_data`, form replies,
 * order text), for every message type the network delivers and every
 * envelope Parley sends; the reply facts of interactive replies.
 */
import { Predicate, Schema } from "effect"
import { MEDIA_TYPES } from "./Message.ts"

type Json = Record<string, unknown>

/** The kept copy of a message's media, as the rendition names it. */
export interface RenditionMedia {
  readonly filename: string
  readonly content_type: string
  readonly byte_size: number
  readonly url: string
}

export interface Rendition {
  readonly content: string | null
  readonly message_type_data: Json | null
  /** `flow_response`, `flow_token`, `flow_name`, `order_text` when they apply. */
  readonly ext_data: Json
}

const label = (type: string) => `${type.charAt(0).toUpperCase()}${type.slice(1)}`

const kilobytes = (bytes: number) => Math.max(1, Math.round(bytes / 1024))

/** `<Type> attached (<file name>) [Size: <n> KB, Type: <mime>] URL: <media_url>`. */
export const mediaLine = (type: string, media: RenditionMedia) =>
  `${label(type)} attached (${media.filename}) [Size: ${kilobytes(media.byte_size)} KB, Type: ${media.content_type}] URL: ${media.url}`

const lines = (...parts: ReadonlyArray<string | undefined | null>) => {
  const kept = parts.filter((p): p is string => typeof p === "string" && p.length > 0)
  return kept.length === 0 ? null : kept.join("\n")
}

const orderText = (order: Json): string => {
  const items = Array.isArray(order["product_items"]) ? order["product_items"].filter(Predicate.isObject) : []
  const described = items.map((item) => {
    const quantity = typeof item["quantity"] === "number" ? item["quantity"] : 1
    const price = typeof item["item_price"] === "number" ? ` @ ${item["item_price"]}` : ""
    const currency = Predicate.isString(item["currency"]) ? item["currency"] : ""
    return `${quantity} x ${(Predicate.isString(item["product_retailer_id"]) ? item["product_retailer_id"] : "item")}${price}${currency !== "" ? ` ${currency}` : ""}`
  })
  return lines(`Order (${items.length} item${items.length === 1 ? "" : "s"})`, ...described, Predicate.isString(order["text"]) ? order["text"] : undefined)!
}

const contactsText = (contacts: ReadonlyArray<unknown>): string =>
  contacts.filter(Predicate.isObject).map((c) => {
    const name = Predicate.isObject(c["name"]) ? (Predicate.isString(c["name"]["formatted_name"]) ? c["name"]["formatted_name"] : undefined) ?? (Predicate.isString(c["name"]["first_name"]) ? c["name"]["first_name"] : undefined) : undefined
    const phones = Array.isArray(c["phones"])
      ? c["phones"].filter(Predicate.isObject).map((p) => (Predicate.isString(p["phone"]) ? p["phone"] : undefined) ?? (Predicate.isString(p["wa_id"]) ? p["wa_id"] : undefined)).filter((p) => p !== undefined)
      : []
    return `Contact: ${[name, ...phones].filter((p) => p !== undefined).join(" ")}`.trim()
  }).join("\n")

/**
 * The rendition of an inbound message object (`{ type, <type>: {...}, ... }`)
 * as the network delivered it; `media` is Parley's copy of its file, if kept.
 */
export const renderInbound = (message: Json, media: RenditionMedia | null): Rendition => {
  const type = Predicate.isString(message["type"]) ? message["type"] : "unknown"
  const content = message[type]
  const body = Predicate.isObject(content) ? content : {}
  if (MEDIA_TYPES.includes(type)) {
    const caption = Predicate.isString(body["caption"]) ? body["caption"] : undefined
    const filename = Predicate.isString(body["filename"]) ? body["filename"] : undefined
    return {
      content: lines(caption, media !== null ? mediaLine(type, media) : `${label(type)} attached${filename !== undefined ? ` (${filename})` : ""}`),
      message_type_data: {
        ...(caption !== undefined ? { caption } : {}),
        ...(filename !== undefined ? { filename } : {}),
        ...(Predicate.isString(body["mime_type"]) ? { mime_type: body["mime_type"] } : {}),
        ...(typeof body["voice"] === "boolean" ? { voice: body["voice"] } : {}),
        ...(typeof body["animated"] === "boolean" ? { animated: body["animated"] } : {})
      },
      ext_data: {}
    }
  }
  switch (type) {
    case "text":
      return { content: Predicate.isString(body["body"]) ? body["body"] : null, message_type_data: null, ext_data: {} }
    case "interactive": {
      const kind = Predicate.isString(body["type"]) ? body["type"] : ""
      const reply = Predicate.isObject(body[kind]) ? body[kind] : {}
      if (kind === "nfm_reply") {
        const raw = Predicate.isString(reply["response_json"]) ? reply["response_json"] : undefined
        let response: unknown = null
        try {
          response = raw === undefined ? null : JSON.parse(raw)
        } catch {
          response = raw ?? null
        }
        const token = Predicate.isObject(response) ? (Predicate.isString(response["flow_token"]) ? response["flow_token"] : undefined) : undefined
        return {
          content: Predicate.isString(reply["body"]) ? reply["body"] : "Form submitted",
          message_type_data: { type: kind },
          ext_data: {
            flow_response: response,
            ...(token !== undefined ? { flow_token: token } : {}),
            ...(Predicate.isString(reply["name"]) ? { flow_name: reply["name"] } : {})
          }
        }
      }
      return {
        content: Predicate.isString(reply["title"]) ? reply["title"] : null,
        message_type_data: {
          type: kind,
          ...(Predicate.isString(reply["id"]) ? { id: reply["id"] } : {}),
          ...(Predicate.isString(reply["title"]) ? { title: reply["title"] } : {}),
          ...(Predicate.isString(reply["description"]) ? { description: reply["description"] } : {})
        },
        ext_data: {}
      }
    }
    case "button":
      return {
        content: Predicate.isString(body["text"]) ? body["text"] : null,
        message_type_data: Predicate.isString(body["payload"]) ? { payload: body["payload"] } : null,
        ext_data: {}
      }
    case "reaction": {
      const emoji = Predicate.isString(body["emoji"]) ? body["emoji"] : undefined
      return {
        content: emoji !== undefined && emoji !== "" ? `Reacted ${emoji}` : "Reaction removed",
        message_type_data: { message_id: body["message_id"] ?? null, emoji: emoji ?? null },
        ext_data: {}
      }
    }
    case "location": {
      const place = [(Predicate.isString(body["name"]) ? body["name"] : undefined), (Predicate.isString(body["address"]) ? body["address"] : undefined)].filter((p) => p !== undefined).join(", ")
      return {
        content: `Location: ${place !== "" ? `${place} ` : ""}(${String(body["latitude"])}, ${String(body["longitude"])})`,
        message_type_data: { ...body },
        ext_data: {}
      }
    }
    case "contacts":
      return {
        content: Array.isArray(content) ? contactsText(content) : null,
        message_type_data: null,
        ext_data: {}
      }
    case "order": {
      const text = orderText(body)
      return {
        content: text,
        message_type_data: Predicate.isString(body["catalog_id"]) ? { catalog_id: body["catalog_id"] } : null,
        ext_data: { order_text: text }
      }
    }
    case "system":
      return {
        content: Predicate.isString(body["body"]) ? body["body"] : null,
        message_type_data: Predicate.isString(body["type"]) ? { type: body["type"] } : null,
        ext_data: {}
      }
    default: {
      // `unsupported` and types the network adds later: the error title says what it was.
      const errors = Array.isArray(message["errors"]) ? message["errors"].filter(Predicate.isObject) : []
      const title = errors.length > 0 ? (Predicate.isString(errors[0]!["title"]) ? errors[0]!["title"] : undefined) : undefined
      return { content: title ?? `Unsupported message (${type})`, message_type_data: null, ext_data: {} }
    }
  }
}

/** The rendition of an envelope Parley sends (the proxy's outbound record). */
export const renderOutbound = (envelope: Json): Rendition => {
  const type = Predicate.isString(envelope["type"]) ? envelope["type"] : "text"
  const body = Predicate.isObject(envelope[type]) ? envelope[type] : {}
  if (MEDIA_TYPES.includes(type)) {
    const caption = Predicate.isString(body["caption"]) ? body["caption"] : undefined
    const filename = Predicate.isString(body["filename"]) ? body["filename"] : undefined
    return {
      content: lines(caption, `${label(type)} attached${filename !== undefined ? ` (${filename})` : ""}`),
      message_type_data: caption !== undefined ? { caption } : null,
      ext_data: {}
    }
  }
  switch (type) {
    case "text":
      return { content: Predicate.isString(body["body"]) ? body["body"] : null, message_type_data: null, ext_data: {} }
    case "template": {
      const language = Predicate.isObject(body["language"]) ? (Predicate.isString(body["language"]["code"]) ? body["language"]["code"] : undefined) : undefined
      return {
        content: `Template: ${(Predicate.isString(body["name"]) ? body["name"] : "")}`.trim(),
        message_type_data: { name: body["name"] ?? null, language: language ?? null },
        ext_data: {}
      }
    }
    case "interactive": {
      const text = Predicate.isObject(body["body"]) ? (Predicate.isString(body["body"]["text"]) ? body["body"]["text"] : undefined) : undefined
      return { content: text ?? null, message_type_data: { type: body["type"] ?? null }, ext_data: {} }
    }
    case "reaction": {
      const emoji = Predicate.isString(body["emoji"]) ? body["emoji"] : undefined
      return {
        content: emoji !== undefined && emoji !== "" ? `Reacted ${emoji}` : "Reaction removed",
        message_type_data: { message_id: body["message_id"] ?? null, emoji: emoji ?? null },
        ext_data: {}
      }
    }
    default:
      return renderInbound(envelope, null)
  }
}

const ReplyOption = Schema.Struct({ id: Schema.String, title: Schema.String })
const InteractiveReply = Schema.Struct({
  interactive: Schema.Struct({
    type: Schema.Literals(["button_reply", "list_reply", "nfm_reply"]),
    button_reply: Schema.optionalKey(ReplyOption),
    list_reply: Schema.optionalKey(ReplyOption),
    nfm_reply: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown))
  })
})
const decodeInteractiveReply = Schema.decodeUnknownOption(InteractiveReply)

/** What a contact's interactive reply chose (decisions 10.5.5 `msg_context.messages`); nulls for any other message. */
export interface ReplyFacts {
  readonly reply_option_id: string | null
  readonly reply_option_title: string | null
  readonly interactive_type: "button_reply" | "list_reply" | "nfm_reply" | null
  readonly interactive_data: Readonly<Record<string, unknown>> | null
}

/** The reply facts of a stored message's network fields (`fields.interactive`). */
export const replyFacts = (fields: Readonly<Record<string, unknown>>): ReplyFacts => {
  const reply = decodeInteractiveReply(fields)
  if (reply._tag === "None") return { reply_option_id: null, reply_option_title: null, interactive_type: null, interactive_data: null }
  const interactive = reply.value.interactive
  const option = interactive.button_reply ?? interactive.list_reply
  return {
    reply_option_id: option?.id ?? null,
    reply_option_title: option?.title ?? null,
    interactive_type: interactive.type,
    interactive_data: (interactive[interactive.type] ?? null) as Readonly<Record<string, unknown>> | null
  }
}
