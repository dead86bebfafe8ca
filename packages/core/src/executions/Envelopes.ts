/**
 * The network message objects send nodes put on the wire (decisions 2.3.2,
 * 2.3.4), built from an already interpolated config. The graph validator
 * checked the config's shape when the workflow was saved; what is checked
 * here is what interpolation can break (lengths).
 */
import { Effect, Predicate, Schema } from "effect"
import { OptionalText } from "../shared/Json.ts"

type Json = Record<string, unknown>

/** The optional text fields of a send node's config, each absent when empty. */
const OptionalTexts = Schema.Struct({
  header_type: OptionalText,
  header_text: OptionalText,
  footer_text: OptionalText,
  flow_token: OptionalText,
  flow_action: OptionalText
})
const optionalTexts = Schema.decodeUnknownSync(OptionalTexts)
const ListSection = Schema.Struct({ title: OptionalText })
const ListRow = Schema.Struct({ description: OptionalText })

export const textEnvelope = (body: string): Json => ({ type: "text", text: { body, preview_url: false } })

const header = (config: Json): Json | undefined => {
  const type = optionalTexts(config).header_type ?? "none"
  if (type === "none") return undefined
  if (type === "text") return { type: "text", text: String(config.header_text ?? "") }
  return { type, [type]: { link: String(config.header_media_url ?? "") } }
}

const checkLength = (what: string, value: string | undefined, max: number) =>
  value !== undefined && value.length > max ? Effect.fail(`${what} is longer than ${max} characters`) : Effect.void

/** `send_interactive` (decisions 2.3.4); `flow_token` defaults to the execution id. */
export const interactiveEnvelope = (config: Json, executionId: string): Effect.Effect<Json, string> =>
  Effect.gen(function*() {
    const type = String(config.interactive_type)
    const body = String(config.body_text ?? "")
    const texts = optionalTexts(config)
    const footer = texts.footer_text
    yield* checkLength("body_text", body, 1024)
    yield* checkLength("footer_text", footer, 60)
    yield* checkLength("header_text", texts.header_text, 60)
    const expanded = Predicate.isObject(config.action_config) ? config.action_config as Json : {}
    const action = ((): Json => {
      switch (type) {
        case "button":
          return {
            buttons: (config.buttons as ReadonlyArray<Json> ?? []).map((b) => ({
              type: "reply",
              reply: { id: String(b.id), title: String(b.title) }
            }))
          }
        case "list":
          return {
            button: String(config.list_button_text ?? ""),
            sections: (config.list_sections as ReadonlyArray<Json> ?? []).map((s) => ({
              ...(Schema.decodeUnknownSync(ListSection)(s).title !== undefined ? { title: s.title } : {}),
              rows: (s.rows as ReadonlyArray<Json> ?? []).map((r) => ({
                id: String(r.id),
                title: String(r.title),
                ...(Schema.decodeUnknownSync(ListRow)(r).description !== undefined ? { description: r.description } : {})
              }))
            }))
          }
        case "cta_url":
          return { name: "cta_url", parameters: { display_text: String(config.cta_display_text), url: String(config.cta_url) } }
        case "flow":
          return {
            name: "flow",
            parameters: {
              flow_message_version: "3",
              flow_id: String(config.flow_id),
              flow_cta: String(config.flow_cta),
              flow_token: texts.flow_token ?? executionId,
              flow_action: texts.flow_action ?? "navigate",
              ...(Predicate.isObject(config.flow_action_payload) ? { flow_action_payload: config.flow_action_payload } : {})
            }
          }
        case "location_request_message":
          return { name: "send_location" }
        default:
          // product, product_list, catalog_message: the catalog and product ids travel in `action_config`.
          return expanded
      }
    })()
    const head = Predicate.isObject(config.header_config) ? config.header_config as Json : header(config)
    return {
      type: "interactive",
      interactive: {
        type,
        ...(head !== undefined ? { header: head } : {}),
        body: { text: body },
        ...(footer !== undefined ? { footer: { text: footer } } : {}),
        action: { ...action, ...(type === "button" || type === "list" ? {} : expanded) }
      }
    }
  })
