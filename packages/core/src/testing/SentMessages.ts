/**
 * What the bot sent, as a workflow test reads it: the network envelopes in a
 * contact's outbox decoded into a few plain shapes (text, template,
 * interactive, media), and the expectations a test or a conversation script
 * writes against them. Both are Schemas, so scripts decode into the same
 * expectations a TypeScript test writes.
 */
import { Option, Schema } from "effect"

/** A message the contact received from the number, in the shape a test compares. */
export type SentMessage =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "template"; readonly name: string; readonly language: string; readonly parameters: ReadonlyArray<string> }
  | {
    readonly kind: "interactive"
    /** `button`, `list`, `cta_url`, ... */
    readonly interactive_type: string
    readonly body: string | null
    /** Reply buttons, or the rows of every list section, in order. */
    readonly options: ReadonlyArray<{ readonly id: string; readonly title: string }>
  }
  | { readonly kind: "media"; readonly media_type: string; readonly caption: string | null; readonly link: string | null }
  | { readonly kind: "other"; readonly type: string; readonly envelope: unknown }

const TextEnvelope = Schema.Struct({ type: Schema.Literal("text"), text: Schema.Struct({ body: Schema.String }) })

const Parameter = Schema.Struct({ type: Schema.String, text: Schema.optionalKey(Schema.String) })
const TemplateEnvelope = Schema.Struct({
  type: Schema.Literal("template"),
  template: Schema.Struct({
    name: Schema.String,
    language: Schema.Struct({ code: Schema.String }),
    components: Schema.optionalKey(Schema.Array(Schema.Struct({
      type: Schema.String,
      parameters: Schema.optionalKey(Schema.Array(Parameter))
    })))
  })
})

const Choice = Schema.Struct({ id: Schema.String, title: Schema.String })
const InteractiveEnvelope = Schema.Struct({
  type: Schema.Literal("interactive"),
  interactive: Schema.Struct({
    type: Schema.String,
    body: Schema.optionalKey(Schema.Struct({ text: Schema.String })),
    action: Schema.optionalKey(Schema.Struct({
      buttons: Schema.optionalKey(Schema.Array(Schema.Struct({ reply: Choice }))),
      sections: Schema.optionalKey(Schema.Array(Schema.Struct({ rows: Schema.Array(Choice) })))
    }))
  })
})

const MediaObject = Schema.Struct({ link: Schema.optionalKey(Schema.String), caption: Schema.optionalKey(Schema.String) })
const mediaTypes = ["image", "video", "audio", "document", "sticker"] as const
const MediaEnvelope = Schema.Struct({
  type: Schema.Literals(mediaTypes),
  image: Schema.optionalKey(MediaObject),
  video: Schema.optionalKey(MediaObject),
  audio: Schema.optionalKey(MediaObject),
  document: Schema.optionalKey(MediaObject),
  sticker: Schema.optionalKey(MediaObject)
})

const AnyEnvelope = Schema.Struct({ type: Schema.String })

const decodeText = Schema.decodeUnknownOption(TextEnvelope)
const decodeTemplate = Schema.decodeUnknownOption(TemplateEnvelope)
const decodeInteractive = Schema.decodeUnknownOption(InteractiveEnvelope)
const decodeMedia = Schema.decodeUnknownOption(MediaEnvelope)
const decodeAny = Schema.decodeUnknownOption(AnyEnvelope)

/** An outbound envelope (the network's message body) as a `SentMessage`. */
export const sentMessageOf = (envelope: unknown): SentMessage => {
  const text = decodeText(envelope)
  if (Option.isSome(text)) return { kind: "text", text: text.value.text.body }
  const template = decodeTemplate(envelope)
  if (Option.isSome(template)) {
    const t = template.value.template
    return {
      kind: "template",
      name: t.name,
      language: t.language.code,
      parameters: (t.components ?? []).flatMap((c) => (c.parameters ?? []).flatMap((p) => (p.text === undefined ? [] : [p.text])))
    }
  }
  const interactive = decodeInteractive(envelope)
  if (Option.isSome(interactive)) {
    const i = interactive.value.interactive
    return {
      kind: "interactive",
      interactive_type: i.type,
      body: i.body?.text ?? null,
      options: [
        ...(i.action?.buttons ?? []).map((b) => b.reply),
        ...(i.action?.sections ?? []).flatMap((s) => s.rows)
      ].map(({ id, title }) => ({ id, title }))
    }
  }
  const media = decodeMedia(envelope)
  if (Option.isSome(media)) {
    const m = media.value
    const object = m[m.type]
    return { kind: "media", media_type: m.type, caption: object?.caption ?? null, link: object?.link ?? null }
  }
  return { kind: "other", type: Option.match(decodeAny(envelope), { onNone: () => "unknown", onSome: (e) => e.type }), envelope }
}

/**
 * What a test expects the bot to send next. Text is compared exactly (`text`)
 * or by a part (`text_contains`); a template by name, and its text parameters
 * when given; an interactive message by body and option titles when given;
 * media by type and caption when given.
 */
export const ExpectedMessage = Schema.Union([
  Schema.Struct({ text: Schema.String }),
  Schema.Struct({ text_contains: Schema.String }),
  Schema.Struct({
    template: Schema.String,
    language: Schema.optionalKey(Schema.String),
    parameters: Schema.optionalKey(Schema.Array(Schema.String))
  }),
  Schema.Struct({
    interactive: Schema.Struct({
      body: Schema.optionalKey(Schema.String),
      options: Schema.optionalKey(Schema.Array(Schema.String)),
      type: Schema.optionalKey(Schema.String)
    })
  }),
  Schema.Struct({ media: Schema.Literals(mediaTypes), caption: Schema.optionalKey(Schema.String) })
])
export type ExpectedMessage = typeof ExpectedMessage.Type

/** One line for a message in a failure. */
export const describeSent = (m: SentMessage): string => {
  switch (m.kind) {
    case "text":
      return `text ${JSON.stringify(m.text)}`
    case "template":
      return `template ${m.name} (${m.language}) ${JSON.stringify(m.parameters)}`
    case "interactive":
      return `interactive ${m.interactive_type} ${JSON.stringify(m.body)} [${m.options.map((o) => o.title).join(", ")}]`
    case "media":
      return `${m.media_type}${m.caption === null ? "" : ` ${JSON.stringify(m.caption)}`}`
    case "other":
      return `a ${m.type} message`
  }
}

export const describeExpected = (e: ExpectedMessage): string =>
  "text" in e
    ? `text ${JSON.stringify(e.text)}`
    : "text_contains" in e
    ? `a text containing ${JSON.stringify(e.text_contains)}`
    : "template" in e
    ? `template ${e.template}${e.language === undefined ? "" : ` (${e.language})`}${
      e.parameters === undefined ? "" : ` ${JSON.stringify(e.parameters)}`
    }`
    : "interactive" in e
    ? `interactive${e.interactive.type === undefined ? "" : ` ${e.interactive.type}`}${
      e.interactive.body === undefined ? "" : ` ${JSON.stringify(e.interactive.body)}`
    }${e.interactive.options === undefined ? "" : ` [${e.interactive.options.join(", ")}]`}`
    : `${e.media}${e.caption === undefined ? "" : ` ${JSON.stringify(e.caption)}`}`

const sameList = (a: ReadonlyArray<string>, b: ReadonlyArray<string>) => a.length === b.length && a.every((x, i) => x === b[i])

/** Whether `m` is what `e` expects. */
export const sentMatches = (e: ExpectedMessage, m: SentMessage): boolean => {
  if ("text" in e) return m.kind === "text" && m.text === e.text
  if ("text_contains" in e) return m.kind === "text" && m.text.includes(e.text_contains)
  if ("template" in e) {
    return m.kind === "template" && m.name === e.template && (e.language === undefined || e.language === m.language) &&
      (e.parameters === undefined || sameList(e.parameters, m.parameters))
  }
  if ("interactive" in e) {
    const i = e.interactive
    return m.kind === "interactive" && (i.type === undefined || i.type === m.interactive_type) &&
      (i.body === undefined || i.body === m.body) &&
      (i.options === undefined || sameList(i.options, m.options.map((o) => o.title)))
  }
  return m.kind === "media" && m.media_type === e.media && (e.caption === undefined || e.caption === m.caption)
}
