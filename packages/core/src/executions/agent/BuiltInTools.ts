/**
 * The built-in agent tools (decisions 2.3.10): what the model is offered
 * (name, description, JSON Schema of the arguments) and how the ones that
 * only read or write the run itself answer. Tools that send, move the run or
 * reach outside are carried out by `Agent.ts`.
 */
import { Effect, Option, Predicate } from "effect"
import { Messaging } from "../../messaging/Messaging.ts"
import type { ExecutionRecord } from "../Execution.ts"
import type { ModelTool } from "../ai/ModelCall.ts"

export type ToolSpec = ModelTool

const object = (properties: Record<string, unknown> = {}, required: ReadonlyArray<string> = []) => ({
  type: "object",
  properties,
  required,
  additionalProperties: false
})
const string = (description: string) => ({ type: "string", description })

export const builtInSpecs: Readonly<Record<string, ToolSpec>> = {
  send_notification_to_user: {
    name: "send_notification_to_user",
    description: "Send a text message to the contact now.",
    parameters: object({ message: string("The text to send (at most 4096 characters).") }, ["message"])
  },
  send_media: {
    name: "send_media",
    description: "Send an image, video, audio or document to the contact, by URL or media id, with an optional caption.",
    parameters: object({
      media_type: { type: "string", enum: ["image", "video", "audio", "document"] },
      url: string("A public https URL of the file."),
      media_id: string("The id of media uploaded earlier."),
      caption: string("Shown under the media (not for audio)."),
      filename: string("Documents only: the file name the contact sees.")
    }, ["media_type"])
  },
  get_execution_metadata: {
    name: "get_execution_metadata",
    description: "The execution id, tracking id, workflow id and name, and trigger type of this run.",
    parameters: object()
  },
  get_whatsapp_context: {
    name: "get_whatsapp_context",
    description: "The current conversation with its most recent messages (oldest first).",
    parameters: object()
  },
  contact_conversations: {
    name: "contact_conversations",
    description: "The contact's earlier conversations on this number, each with its last messages.",
    parameters: object({ limit: { type: "integer", minimum: 1, maximum: 20, description: "How many conversations (default 5)." } })
  },
  get_current_datetime: {
    name: "get_current_datetime",
    description: "The current date and time, in UTC or in an IANA time zone.",
    parameters: object({ timezone: string("An IANA time zone name, e.g. Europe/Paris.") })
  },
  save_variable: {
    name: "save_variable",
    description: "Store a value in the workflow's variables under a name.",
    parameters: object({ name: string("Variable name (letters, digits, underscores)."), value: {} }, ["name", "value"])
  },
  get_variable: {
    name: "get_variable",
    description: "Read one of the workflow's variables.",
    parameters: object({ name: string("Variable name.") }, ["name"])
  },
  ask_about_file: {
    name: "ask_about_file",
    description: "Answer a question about a media item (an image, a document, audio), by message id or URL.",
    parameters: object({
      question: string("What to find out about the file."),
      message_id: string("The id of a message in this conversation holding the media."),
      url: string("A URL of the file.")
    }, ["question"])
  },
  complete_task: {
    name: "complete_task",
    description: "The task is done: leave the agent and go on with the workflow.",
    parameters: object({
      summary: string("What was achieved (stored in vars.agent_summary)."),
      end_conversation: { type: "boolean", description: "Also close the conversation." }
    })
  },
  handoff_to_human: {
    name: "handoff_to_human",
    description: "Hand the conversation to a human; automatic replies stop until a person resumes it.",
    parameters: object({ reason: string("Why a human is needed.") })
  },
  enter_waiting: {
    name: "enter_waiting",
    description: "Stop and wait for the contact's next message.",
    parameters: object()
  },
  emit_event: {
    name: "emit_event",
    description: "Record a project event with flat properties.",
    parameters: object({
      name: string("The event name, e.g. order.refund_requested."),
      properties: { type: "object", description: "Flat map of strings, numbers, booleans or null." }
    }, ["name"])
  }
}

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/

/** A tool's answer: what the model sees, and whether it is an error. */
export interface ToolAnswer {
  readonly result: unknown
  readonly isError: boolean
  /** Variables the tool wrote. */
  readonly vars?: Readonly<Record<string, unknown>> | undefined
}

const ok = (result: unknown, vars?: Readonly<Record<string, unknown>>): ToolAnswer => ({ result, isError: false, vars })
export const toolError = (message: string): ToolAnswer => ({ result: { error: message }, isError: true })

const params = (u: unknown): Readonly<Record<string, unknown>> => (Predicate.isObject(u) && !Array.isArray(u) ? u as Record<string, unknown> : {})

/** The current time as the model reads it; an unknown zone is the model's error to fix. */
const datetime = (nowIso: string, timezone: unknown): ToolAnswer => {
  if (timezone === undefined || timezone === null || timezone === "" || timezone === "UTC") {
    return ok({ datetime: nowIso, timezone: "UTC" })
  }
  if (!Predicate.isString(timezone)) return toolError("timezone must be an IANA time zone name")
  try {
    const local = new Intl.DateTimeFormat("sv-SE", {
      timeZone: timezone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      weekday: "long"
    }).formatToParts(new Date(nowIso))
    const part = (type: string) => local.find((p) => p.type === type)?.value ?? ""
    return ok({
      datetime: `${part("year")}-${part("month")}-${part("day")}T${part("hour")}:${part("minute")}:${part("second")}`,
      weekday: part("weekday"),
      timezone,
      utc: nowIso
    })
  } catch {
    return toolError(`Unknown time zone ${timezone}`)
  }
}

/** The conversation's recent messages as the model reads them, oldest first. */
export const recentMessages = Effect.fnUntraced(function*(e: ExecutionRecord, conversationId: string, limit: number) {
  const messaging = yield* Messaging
  const slice = yield* messaging.listMessages(e.project_id, { conversation_id: conversationId }, { mode: "cursor", limit })
  return [...slice.items].reverse().map((m) => ({
    id: m.id,
    direction: m.direction,
    type: m.type,
    content: m.content,
    created_at: m.created_at
  }))
})

/** Answers the tools that only read or write the run; None for the others. */
export const localTool = Effect.fnUntraced(function*(
  e: ExecutionRecord,
  name: string,
  rawParams: unknown,
  nowIso: string
): Effect.fn.Return<Option.Option<ToolAnswer>, never, Messaging> {
  const p = params(rawParams)
  const ctx = e.execution_context
  switch (name) {
    case "get_execution_metadata":
      return Option.some(ok({
        execution_id: e.id,
        tracking_id: e.tracking_id,
        workflow_id: e.workflow_id,
        workflow_name: e.workflow_name,
        trigger_type: e.trigger_type
      }))
    case "get_current_datetime":
      return Option.some(datetime(nowIso, p.timezone))
    case "save_variable": {
      const varName = p.name
      if (!Predicate.isString(varName) || !VARIABLE_NAME.test(varName)) {
        return Option.some(toolError("name must start with a letter or underscore and hold only letters, digits and underscores"))
      }
      return Option.some(ok({ saved: varName }, { [varName]: p.value ?? null }))
    }
    case "get_variable": {
      const varName = p.name
      if (!Predicate.isString(varName)) return Option.some(toolError("name is required"))
      return Option.some(ok(varName in ctx.vars ? { name: varName, value: ctx.vars[varName] } : { name: varName, found: false }))
    }
    case "get_whatsapp_context": {
      if (e.msg_conversation_id === null) return Option.some(ok({ conversation: null, messages: [] }))
      const messaging = yield* Messaging
      const conversation = yield* Effect.option(messaging.getConversation(e.project_id, e.msg_conversation_id))
      if (Option.isNone(conversation)) return Option.some(ok({ conversation: null, messages: [] }))
      const c = conversation.value
      return Option.some(ok({
        conversation: { id: c.id, phone_number: c.phone_number, status: c.status, last_active_at: c.last_active_at, metadata: c.metadata },
        messages: yield* recentMessages(e, c.id, 20)
      }))
    }
    case "contact_conversations": {
      const phone = ctx.context.phone_number
      if (!Predicate.isString(phone) || e.msg_config_id === null) return Option.some(ok({ conversations: [] }))
      const messaging = yield* Messaging
      const limit = Predicate.isNumber(p.limit) ? Math.min(20, Math.max(1, Math.floor(p.limit))) : 5
      const slice = yield* messaging.listConversations(
        e.project_id,
        { msg_config_id: e.msg_config_id, phone_number: phone },
        { mode: "cursor", limit: limit + 1 }
      )
      const earlier = slice.items.filter((c) => c.id !== e.msg_conversation_id).slice(0, limit)
      const conversations = []
      for (const c of earlier) {
        conversations.push({
          id: c.id,
          status: c.status,
          last_active_at: c.last_active_at,
          created_at: c.created_at,
          last_messages: yield* recentMessages(e, c.id, 5)
        })
      }
      return Option.some(ok({ conversations }))
    }
    default:
      return Option.none()
  }
})
