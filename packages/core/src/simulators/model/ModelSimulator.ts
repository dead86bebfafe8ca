/**
 * The model simulator: a deterministic language model behind the
 * OpenAI-compatible HTTP API, as the network simulator is for the messaging
 * network. A handler from request to answer; the host serves it over HTTP
 * (`/model-simulator/v1`), and `layerMemoryLanguageModels` answers the
 * production adapter's requests with it in process.
 *
 * Routes: `POST /chat/completions` (plain, and `stream: true` as server-sent
 * events), `POST /audio/transcriptions` (multipart `file`: UTF-8 text bytes
 * transcribe to themselves, anything else to `[voice note <n> bytes]`),
 * `GET /models`. With a key configured, a request whose bearer differs answers
 * 401.
 *
 * Tests script it: `script(turns, { model })` queues answers (text, tool
 * calls, an error status, a delay on the `Clock`) per upstream model, taken
 * first in first out; `requests` lists every request received, parsed.
 *
 * With nothing scripted it follows rules, so every AI feature can be tried
 * with no credentials; the first that applies answers:
 *  a. the last message is a tool result: text `Result of <tool>: <result>` (cut to 300 characters; a knowledge
 *     base's answer reads as its passages, joined);
 *  b. the user says bye, thanks, done or "that's all" and `complete_task` is offered: it is called with a summary;
 *  c. the user asks for a human, an agent or a person and `handoff_to_human` is offered: it is called with a reason;
 *  d. the user's text names an offered tool (its name, or every word of it): that tool is called, one per turn,
 *     with arguments built from its JSON schema (strings: the user's text; numbers: the first number in it;
 *     booleans: false; arrays: empty; objects: their properties likewise);
 *  e. the system prompt asks for a label or condition and lists them (lines `- label` or `1. label`, a description
 *     after `:` allowed) and no tool is offered: the label whose words overlap the user's text most, else the first;
 *  f. otherwise: `You said: <the user's last text>`.
 */
import { Clock, Context, Effect, Layer, Option, Predicate, Schema } from "effect"
import type { SimBody } from "../network/Protocol.ts"

/** One scripted answer. */
export interface ModelTurn {
  readonly text?: string | undefined
  readonly tool_calls?: ReadonlyArray<{ readonly name: string; readonly arguments: unknown }> | undefined
  /** Answer this status with `{ error: { message } }` instead. */
  readonly error?: { readonly status: number; readonly message: string } | undefined
  /** Wait this long (on the `Clock`) before answering. */
  readonly delay_ms?: number | undefined
}

export interface ModelSimRequest {
  readonly method: string
  /** Below the API root: `/chat/completions`. */
  readonly path: string
  readonly authorization: string | undefined
  readonly body: SimBody
}

export interface ModelSimAnswer {
  readonly status: number
  readonly contentType: string
  /** The body in the pieces it is sent in (one piece, or one per server-sent event). */
  readonly chunks: ReadonlyArray<Uint8Array>
}

/** A request as the simulator understood it (never its key). */
export interface ReceivedModelRequest {
  readonly method: string
  readonly path: string
  /** The upstream model asked for (chat) or named in the form (transcription). */
  readonly model: string | undefined
  /** The parsed JSON body, or the form's fields with each file's name and size. */
  readonly body: unknown
  readonly stream: boolean
}

export interface ModelSimulatorOptions {
  /** When set, only `Authorization: Bearer <apiKey>` is served; other requests answer 401. */
  readonly apiKey?: string | undefined
  /** What `GET /models` lists besides the scripted models. */
  readonly models?: ReadonlyArray<string> | undefined
}

export { SimulatedModelName } from "../../ai/ProviderModel.ts"
import { SimulatedModelName } from "../../ai/ProviderModel.ts"

// ---------------------------------------------------------------------------
// The request as read
// ---------------------------------------------------------------------------

const Message = Schema.Struct({
  role: Schema.String,
  content: Schema.optionalKey(Schema.NullOr(Schema.Union([
    Schema.String,
    Schema.Array(Schema.Struct({ type: Schema.String, text: Schema.optionalKey(Schema.String) }))
  ]))),
  tool_call_id: Schema.optionalKey(Schema.String),
  tool_calls: Schema.optionalKey(Schema.Array(Schema.Struct({
    id: Schema.String,
    function: Schema.Struct({ name: Schema.String, arguments: Schema.String })
  })))
})
type Message = typeof Message.Type

const ToolSpec = Schema.Struct({
  type: Schema.String,
  function: Schema.Struct({
    name: Schema.String,
    description: Schema.optionalKey(Schema.String),
    parameters: Schema.optionalKey(Schema.Unknown)
  })
})
type ToolSpec = typeof ToolSpec.Type

const ChatRequest = Schema.Struct({
  model: Schema.String,
  messages: Schema.Array(Message),
  tools: Schema.optionalKey(Schema.Array(ToolSpec)),
  stream: Schema.optionalKey(Schema.Boolean)
})
type ChatRequest = typeof ChatRequest.Type

const decodeChat = Schema.decodeUnknownOption(ChatRequest)
const decodeJson = Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Unknown))
const jsonOf = (bytes: Uint8Array): Option.Option<unknown> => decodeJson(new TextDecoder().decode(bytes))

const textOf = (content: Message["content"]): string =>
  typeof content === "string" ? content : (content ?? []).flatMap((p) => (p.text === undefined ? [] : [p.text])).join("\n")

const cut = (s: string, max = 300) => (s.length <= max ? s : `${s.slice(0, max - 1)}…`)

const words = (s: string): Array<string> => s.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((w) => w.length > 0)

// ---------------------------------------------------------------------------
// The rules (module comment)
// ---------------------------------------------------------------------------

/** Arguments for a JSON schema, from the user's text (`anyOf`/`oneOf`: the first branch; `$ref`: into `root`). */
const argumentsFor = (schema: unknown, userText: string, root: unknown = schema): unknown => {
  if (!Predicate.isObject(schema)) return {}
  const s = schema as {
    readonly type?: unknown
    readonly properties?: unknown
    readonly enum?: unknown
    readonly anyOf?: unknown
    readonly oneOf?: unknown
    readonly $ref?: unknown
  }
  if (typeof s.$ref === "string" && s.$ref.startsWith("#/")) {
    const target = s.$ref.slice(2).split("/").reduce<unknown>((at, key) => (Predicate.isObject(at) ? (at as Record<string, unknown>)[key] : undefined), root)
    return argumentsFor(target, userText, root)
  }
  const branches = Array.isArray(s.anyOf) ? s.anyOf : Array.isArray(s.oneOf) ? s.oneOf : undefined
  if (branches !== undefined && branches.length > 0) return argumentsFor(branches[0], userText, root)
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0]
  const number = Number(/-?\d+(?:\.\d+)?/.exec(userText)?.[0] ?? 0)
  switch (s.type) {
    case "string":
      return userText
    case "number":
      return number
    case "integer":
      return Math.trunc(number)
    case "boolean":
      return false
    case "array":
      return []
    default: {
      const properties = Predicate.isObject(s.properties) ? s.properties as Record<string, unknown> : {}
      return Object.fromEntries(Object.entries(properties).map(([key, sub]) => [key, argumentsFor(sub, userText, root)]))
    }
  }
}

const mentions = (tool: string, text: string): boolean => {
  const said = new Set(words(text))
  if (text.toLowerCase().includes(tool.toLowerCase())) return true
  const parts = words(tool.replace(/([a-z])([A-Z])/g, "$1 $2"))
  return parts.length > 0 && parts.every((w) => said.has(w))
}

const Farewell = /\b(bye|goodbye|thanks|thank you|done|that'?s all)\b/i
const AsksForHuman = /\b(human|agent|person|someone real|real person|operator)\b/i
const ListItem = /^\s*(?:[-*•]|\d+[.)])\s+(.+?)\s*$/

const labelsIn = (system: string): Array<{ readonly label: string; readonly text: string }> =>
  system.split("\n").flatMap((line) => {
    const item = ListItem.exec(line)?.[1]
    if (item === undefined) return []
    const [label, ...rest] = item.split(":")
    const clean = label!.trim().replace(/^["'`]|["'`]$/g, "")
    return clean === "" ? [] : [{ label: clean, text: `${clean} ${rest.join(":")}` }]
  })

const Passages = Schema.Struct({ passages: Schema.Array(Schema.String) })
const decodePassages = Schema.decodeUnknownOption(Schema.fromJsonString(Passages))

/** A knowledge base's result as the words of its passages; any other result as it came. */
const readable = (result: string): string =>
  Option.match(decodePassages(result), { onNone: () => result, onSome: (r) => r.passages.join(" ").replace(/\s+/g, " ") })

/** The rule-driven answer to a chat request. */
export const ruleTurn = (request: ChatRequest): ModelTurn => {
  const messages = request.messages
  const tools = (request.tools ?? []).filter((t) => t.type === "function")
  const offered = (name: string) => tools.some((t) => t.function.name === name)
  const last = messages[messages.length - 1]

  // a. A tool result: summarise it.
  if (last?.role === "tool") {
    const call = messages.flatMap((m) => m.tool_calls ?? []).find((c) => c.id === last.tool_call_id)
    return { text: cut(`Result of ${call?.function.name ?? "the tool"}: ${readable(textOf(last.content))}`) }
  }
  const userText = [...messages].reverse().find((m) => m.role === "user")
  const said = userText === undefined ? "" : textOf(userText.content)
  const call = (name: string, args: unknown): ModelTurn => ({ tool_calls: [{ name, arguments: args }] })

  // b, c. Closing and handing off.
  if (Farewell.test(said) && offered("complete_task")) {
    return call("complete_task", argumentsFor(tools.find((t) => t.function.name === "complete_task")!.function.parameters, `The contact said: ${said}`))
  }
  if (AsksForHuman.test(said) && offered("handoff_to_human")) {
    return call("handoff_to_human", argumentsFor(tools.find((t) => t.function.name === "handoff_to_human")!.function.parameters, `The contact asked for a person: ${said}`))
  }
  // d. A tool the user names.
  const named = tools.find((t) => mentions(t.function.name, said))
  if (named !== undefined) return call(named.function.name, argumentsFor(named.function.parameters, said))

  // e. A choice among labels.
  const system = messages.filter((m) => m.role === "system").map((m) => textOf(m.content)).join("\n")
  const labels = labelsIn(system)
  if (tools.length === 0 && labels.length > 0 && /\b(label|condition)s?\b/i.test(system)) {
    const said_ = new Set(words(said))
    const score = (text: string) => words(text).filter((w) => said_.has(w)).length
    const best = labels.reduce((a, b) => (score(b.text) > score(a.text) ? b : a))
    return { text: best.label }
  }
  // f.
  return { text: cut(`You said: ${said}`) }
}

// ---------------------------------------------------------------------------
// Answers
// ---------------------------------------------------------------------------

const encoder = new TextEncoder()
const json = (status: number, body: unknown): ModelSimAnswer => ({
  status,
  contentType: "application/json",
  chunks: [encoder.encode(JSON.stringify(body))]
})
const errorAnswer = (status: number, message: string, type = "simulated_error") => json(status, { error: { message, type } })

/** Tokens as the simulator counts them: a word or a punctuation mark each. */
const tokens = (s: string) => s.split(/\s+/).filter((w) => w !== "").length

const completionAnswer = (id: string, created: number, request: ChatRequest, turn: ModelTurn, callIds: () => string) => {
  const calls = (turn.tool_calls ?? []).map((c) => ({
    id: callIds(),
    type: "function",
    function: { name: c.name, arguments: typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments ?? {}) }
  }))
  const text = turn.text ?? null
  const finish = calls.length > 0 ? "tool_calls" : "stop"
  const usage = {
    prompt_tokens: request.messages.reduce((n, m) => n + tokens(textOf(m.content)), 0),
    completion_tokens: tokens(text ?? "") + calls.length,
    total_tokens: 0
  }
  const withTotal = { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens }
  if (request.stream !== true) {
    return json(200, {
      id,
      object: "chat.completion",
      created,
      model: request.model,
      choices: [{
        index: 0,
        message: { role: "assistant", content: text, ...(calls.length > 0 ? { tool_calls: calls } : {}) },
        finish_reason: finish
      }],
      usage: withTotal
    })
  }
  const chunk = (delta: unknown, finish_reason: string | null = null, extra: object = {}) => ({
    id,
    object: "chat.completion.chunk",
    created,
    model: request.model,
    choices: [{ index: 0, delta, finish_reason }],
    ...extra
  })
  const events: Array<unknown> = [chunk({ role: "assistant", content: "" })]
  // Text in pieces of a few words, tool arguments in two halves: callers must put them together.
  for (const piece of (text ?? "").match(/\S+\s*/g) ?? []) events.push(chunk({ content: piece }))
  calls.forEach((c, index) => {
    const half = Math.ceil(c.function.arguments.length / 2)
    events.push(chunk({ tool_calls: [{ index, id: c.id, type: "function", function: { name: c.function.name, arguments: c.function.arguments.slice(0, half) } }] }))
    events.push(chunk({ tool_calls: [{ index, function: { arguments: c.function.arguments.slice(half) } }] }))
  })
  events.push(chunk({}, finish))
  events.push({ id, object: "chat.completion.chunk", created, model: request.model, choices: [], usage: withTotal })
  return {
    status: 200,
    contentType: "text/event-stream",
    chunks: [...events.map((e) => encoder.encode(`data: ${JSON.stringify(e)}\n\n`)), encoder.encode("data: [DONE]\n\n")]
  }
}

const transcriptOf = (bytes: Uint8Array): string => {
  try {
    const text = new TextDecoder("utf-8", { fatal: true }).decode(bytes)
    // Control characters (other than whitespace) mean bytes, not words.
    if (text.length > 0 && !/[\u0000-\u0008\u000e-\u001f]/.test(text)) return text
  } catch {
    // Not UTF-8: audio.
  }
  return `[voice note ${bytes.length} bytes]`
}

// ---------------------------------------------------------------------------
// The service
// ---------------------------------------------------------------------------

export class ModelSimulator extends Context.Service<ModelSimulator, {
  readonly handle: (request: ModelSimRequest) => Effect.Effect<ModelSimAnswer>
  /** Queues answers for `model` (an upstream model name), or for any model without one. */
  readonly script: (turns: ReadonlyArray<ModelTurn>, options?: { readonly model?: string | undefined }) => Effect.Effect<void>
  /** Every request received, oldest first. */
  readonly requests: Effect.Effect<ReadonlyArray<ReceivedModelRequest>>
  /** Forgets the scripts and the requests. */
  readonly reset: Effect.Effect<void>
}>()("@parley/core/ai/ModelSimulator") {
  static readonly make = (options: ModelSimulatorOptions = {}) =>
    Effect.sync(() => {
      const AnyModel = "\u0000any"
      const scripts = new Map<string, Array<ModelTurn>>()
      let received: Array<ReceivedModelRequest> = []
      let sequence = 0

      const next = (model: string): Option.Option<ModelTurn> => {
        for (const key of [model, AnyModel]) {
          const queue = scripts.get(key)
          const turn = queue?.shift()
          if (turn !== undefined) return Option.some(turn)
        }
        return Option.none()
      }

      const chat = (body: SimBody) =>
        Effect.gen(function*() {
          const raw = body._tag === "Bytes" ? jsonOf(body.bytes) : Option.none()
          const parsed = Option.flatMap(raw, decodeChat)
          if (Option.isNone(parsed)) {
            received.push({ method: "POST", path: "/chat/completions", model: undefined, body: undefined, stream: false })
            return errorAnswer(400, "The body must be a chat completions request: { model, messages[] }", "invalid_request_error")
          }
          const request = parsed.value
          received.push({
            method: "POST",
            path: "/chat/completions",
            model: request.model,
            body: Option.getOrUndefined(raw),
            stream: request.stream === true
          })
          const turn = Option.getOrElse(next(request.model), () => ruleTurn(request))
          if (turn.delay_ms !== undefined && turn.delay_ms > 0) yield* Effect.sleep(turn.delay_ms)
          if (turn.error !== undefined) return errorAnswer(turn.error.status, turn.error.message)
          const n = ++sequence
          const created = Math.floor((yield* Clock.currentTimeMillis) / 1000)
          let call = 0
          return completionAnswer(`chatcmpl-sim-${n}`, created, request, turn, () => `call_sim_${n}_${++call}`)
        })

      const transcription = (body: SimBody) => {
        if (body._tag !== "Form") return errorAnswer(400, "Send multipart/form-data with a file", "invalid_request_error")
        const file = body.files.find((f) => f.key === "file")
        received.push({
          method: "POST",
          path: "/audio/transcriptions",
          model: body.fields["model"],
          body: { ...body.fields, files: body.files.map((f) => ({ key: f.key, filename: f.filename, size: f.bytes.length })) },
          stream: false
        })
        if (file === undefined) return errorAnswer(400, "file is required", "invalid_request_error")
        return json(200, { text: transcriptOf(file.bytes) })
      }

      const handle = (request: ModelSimRequest): Effect.Effect<ModelSimAnswer> =>
        Effect.suspend(() => {
          if (options.apiKey !== undefined && request.authorization !== `Bearer ${options.apiKey}`) {
            return Effect.succeed(errorAnswer(401, "Incorrect API key provided", "invalid_api_key"))
          }
          const path = request.path.replace(/\/+$/, "")
          if (request.method === "POST" && path === "/chat/completions") return chat(request.body)
          if (request.method === "POST" && path === "/audio/transcriptions") return Effect.succeed(transcription(request.body))
          if (request.method === "GET" && path === "/models") {
            const names = new Set([SimulatedModelName, ...(options.models ?? []), ...[...scripts.keys()].filter((k) => k !== AnyModel)])
            return Effect.succeed(json(200, { object: "list", data: [...names].map((id) => ({ id, object: "model", created: 0, owned_by: "parley" })) }))
          }
          return Effect.succeed(errorAnswer(404, `No route ${request.method} ${path}`, "not_found"))
        })

      return ModelSimulator.of({
        handle,
        script: (turns, scriptOptions) =>
          Effect.sync(() => {
            const key = scriptOptions?.model ?? AnyModel
            scripts.set(key, [...(scripts.get(key) ?? []), ...turns])
          }),
        requests: Effect.sync(() => [...received]),
        reset: Effect.sync(() => {
          scripts.clear()
          received = []
        })
      })
    })

  static readonly layer = (options: ModelSimulatorOptions = {}) => Layer.effect(ModelSimulator, ModelSimulator.make(options))
}
