/**
 * The network's send body as JSON Schema, for `msg_messages.send`'s `help` (issue 29 §3): the proxy forwards the body
 * byte for byte, so the contract's schema of it is "anything", and an agent building a send from `help` alone left out
 * `messaging_product` and `type` and got a bare `(#100) Invalid parameter`. The fields and kinds are the spec's
 * ("Messaging proxy": the send shapes).
 */

const text = (description: string) => ({ type: "string", description })

/** Media by the id an upload answered, or by a public link. */
const media = (kind: string, extra: Record<string, unknown> = {}) => ({
  type: "object",
  description: `The ${kind}: \`id\` (an uploaded media id) or \`link\` (a public https URL)`,
  properties: {
    id: text("Media id from an upload (`POST /<phone_number_id>/media`) or `/msg/media`"),
    link: text("A public https URL the network fetches"),
    ...extra
  }
})

export const SEND_TYPES = [
  "text",
  "template",
  "image",
  "audio",
  "video",
  "document",
  "sticker",
  "location",
  "contacts",
  "interactive",
  "reaction"
] as const

/** The body's properties, beside the tool's `phone_number_id`. */
export const sendBodyProperties: Record<string, unknown> = {
  messaging_product: { type: "string", enum: ["whatsapp"], description: "Always `whatsapp`" },
  recipient_type: { type: "string", enum: ["individual"], description: "Optional; `individual`" },
  to: text("The recipient's number in international form, digits only (e.g. `15551234567`)"),
  type: { type: "string", enum: [...SEND_TYPES], description: "The kind of message; its object goes in the field of that name" },
  context: {
    type: "object",
    description: "To reply to a message: `{ message_id }`",
    properties: { message_id: text("The network's id of the message replied to") },
    required: ["message_id"]
  },
  text: {
    type: "object",
    description: "With `type: text`; free-form text is accepted inside the 24-hour window only",
    properties: { body: text("The text, up to 4096 characters"), preview_url: { type: "boolean", description: "Show a link preview" } },
    required: ["body"]
  },
  template: {
    type: "object",
    description: "With `type: template`: an approved template of the number's business account",
    properties: {
      name: text("The template's name"),
      language: { type: "object", properties: { code: text("The template's language, e.g. `en_US`") }, required: ["code"] },
      components: {
        type: "array",
        description: "Values for the template's variables: `{ type: header|body|button, parameters: [{ type: text, text }] }`",
        items: { type: "object" }
      }
    },
    required: ["name", "language"]
  },
  image: media("image", { caption: text("Optional caption") }),
  audio: media("audio"),
  video: media("video", { caption: text("Optional caption") }),
  document: media("document", { caption: text("Optional caption"), filename: text("The name the recipient sees") }),
  sticker: media("sticker"),
  location: {
    type: "object",
    description: "With `type: location`",
    properties: {
      latitude: { type: "number" },
      longitude: { type: "number" },
      name: text("Optional place name"),
      address: text("Optional address")
    },
    required: ["latitude", "longitude"]
  },
  contacts: {
    type: "array",
    description: "With `type: contacts`: contact cards (`name { formatted_name }`, `phones [{ phone }]`, ...)",
    items: { type: "object" }
  },
  interactive: {
    type: "object",
    description: "With `type: interactive`: `type` (`button`, `list`, `cta_url`, `flow`, ...), `body { text }` and its `action`",
    properties: { type: text("`button`, `list`, `cta_url`, `flow`, ..."), body: { type: "object" }, action: { type: "object" } },
    required: ["type", "action"]
  },
  reaction: {
    type: "object",
    description: "With `type: reaction`: `{ message_id, emoji }` (an empty emoji removes it)",
    properties: { message_id: text("The message reacted to"), emoji: text("One emoji") },
    required: ["message_id", "emoji"]
  }
}

/** What every send must carry (the type's own object too: the field named by `type`). */
export const SEND_REQUIRED = ["messaging_product", "to", "type"] as const
