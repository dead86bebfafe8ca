/**
 * Functions as workflow steps (decisions 2.3.6, 2.3.7, 2.3.9, 10.5.5): the
 * exact payloads a function node, a function decide and an agent function
 * tool send, and the reading of their answers. The execution engine calls
 * `FunctionCalls` and acts on the result (merges `vars`, records `events`
 * with the execution's conversation under the rules of POST /events, stores
 * `saved` under `save_response_to`, follows `nextEdge`); every call writes an
 * invocation record with its source (`workflow_node`, `decide_node`,
 * `agent_tool`).
 */
import { Context, Data, Effect, Layer, Predicate } from "effect"
import { PublicUrl } from "../shared/PublicUrl.ts"
import { functionEndpointUrlOf, type FunctionInvocationSource } from "./Function.ts"
import { FunctionInvoker, type FunctionRunOutcome } from "./Invoker.ts"
import { cutToolResult } from "../shared/ToolResult.ts"

/** `execution_context` of an execution (decisions 2.4.1). */
export interface CallExecutionContext {
  readonly vars: Readonly<Record<string, unknown>>
  readonly system: Readonly<Record<string, unknown>>
  readonly context: Readonly<Record<string, unknown>>
  readonly metadata: Readonly<Record<string, unknown>>
}

/** One step event of the execution (decisions 6.8). */
export interface CallFlowEvent {
  readonly event_type: string
  readonly payload: unknown
  readonly created_at: string
}

export interface CallFlowInfo {
  /** The workflow. */
  readonly id: string
  readonly name: string
  /** The node calling the function. */
  readonly step_id: string
}

export interface CallConversation {
  readonly id: string
  readonly phone_number: string | null
  readonly status: string
  readonly last_active_at: string | null
  readonly msg_config_id: string | null
  readonly metadata: unknown
  readonly created_at: string
  readonly updated_at: string
}

export interface CallMessage {
  readonly id: string
  readonly message_type: string
  readonly content: unknown
  readonly direction: string
  readonly status: string | null
  readonly processing_status: string | null
  readonly msg_message_id: string | null
  readonly origin: string | null
  readonly phone_number: string | null
  readonly has_media: boolean
  readonly reply_option_id: string | null
  readonly reply_option_title: string | null
  readonly interactive_type: "button_reply" | "list_reply" | "nfm_reply" | null
  readonly interactive_data: unknown
  readonly created_at: string
  readonly updated_at: string
}

/** The conversation of an execution that has one, with its messages oldest first. */
export interface CallMsgContext {
  readonly conversation: CallConversation
  readonly messages: ReadonlyArray<CallMessage>
}

/** What every call of a step carries. */
export interface FunctionStepCall {
  readonly projectId: string
  readonly functionId: string
  readonly executionContext: CallExecutionContext
  /** The execution's step events, oldest first; the last 10 are sent. */
  readonly flowEvents: ReadonlyArray<CallFlowEvent>
  readonly flowInfo: CallFlowInfo
  /** Absent when the execution has no conversation. */
  readonly msgContext?: CallMsgContext | undefined
}

/** An event a function asked for (`events[]` of its answer), shape-checked only: emission applies its rules. */
export interface FunctionRequestedEvent {
  readonly name: string
  readonly properties?: Readonly<Record<string, unknown>> | null | undefined
  readonly occurred_at?: string | null | undefined
}

export const FLOW_EVENTS_SENT = 10
export const MESSAGES_SENT = 20

/**
 * A call that gives the step nothing to go on: the function is unknown or
 * not deployed, failed or timed out, answered with a status other than 2xx,
 * or with something the step cannot read. The execution fails with
 * `message` (an agent returns it to the model as the tool's error).
 */
export class FunctionCallFailed extends Data.TaggedError("FunctionCallFailed")<{
  readonly reason:
    | "not_found"
    | "not_deployed"
    | "secrets_unavailable"
    | "failed"
    | "timeout"
    | "http_status"
    | "invalid_json"
    | "invalid_answer"
    | "unknown_edge"
  readonly message: string
  /** The invocation record, when the function ran. */
  readonly invocationId?: string | undefined
  /** The function's status, for `http_status`. */
  readonly status?: number | undefined
}> {}

export interface FunctionNodeAnswer {
  /** To merge into `vars` (empty unless the answer is a JSON object with a `vars` object). */
  readonly vars: Readonly<Record<string, unknown>>
  readonly events: ReadonlyArray<FunctionRequestedEvent>
  /** The whole answer for `save_response_to`: parsed JSON, or the text of a non-JSON body. */
  readonly saved: unknown
  readonly invocationId: string
}

export interface FunctionDecideAnswer {
  readonly nextEdge: string
  readonly vars: Readonly<Record<string, unknown>>
  readonly events: ReadonlyArray<FunctionRequestedEvent>
  readonly invocationId: string
}

export interface FunctionToolAnswer {
  /** The answer's text, cut to 16 KB (`cutToolResult`): the tool result the model sees. */
  readonly result: string
  readonly vars: Readonly<Record<string, unknown>>
  readonly invocationId: string
}

const pickConversation = (c: CallConversation): CallConversation => ({
  id: c.id,
  phone_number: c.phone_number,
  status: c.status,
  last_active_at: c.last_active_at,
  msg_config_id: c.msg_config_id,
  metadata: c.metadata,
  created_at: c.created_at,
  updated_at: c.updated_at
})

const pickMessage = (m: CallMessage): CallMessage => ({
  id: m.id,
  message_type: m.message_type,
  content: m.content,
  direction: m.direction,
  status: m.status,
  processing_status: m.processing_status,
  msg_message_id: m.msg_message_id,
  origin: m.origin,
  phone_number: m.phone_number,
  has_media: m.has_media,
  reply_option_id: m.reply_option_id,
  reply_option_title: m.reply_option_title,
  interactive_type: m.interactive_type,
  interactive_data: m.interactive_data,
  created_at: m.created_at,
  updated_at: m.updated_at
})

const commonPayload = (call: FunctionStepCall) => ({
  execution_context: {
    vars: call.executionContext.vars,
    system: call.executionContext.system,
    context: call.executionContext.context,
    metadata: call.executionContext.metadata
  },
  flow_events: call.flowEvents.slice(-FLOW_EVENTS_SENT).map((e) => ({
    event_type: e.event_type,
    payload: e.payload,
    created_at: e.created_at
  })),
  flow_info: { id: call.flowInfo.id, name: call.flowInfo.name, step_id: call.flowInfo.step_id },
  ...(call.msgContext === undefined ? {} : {
    msg_context: {
      conversation: pickConversation(call.msgContext.conversation),
      messages: call.msgContext.messages.slice(-MESSAGES_SENT).map(pickMessage)
    }
  })
})

/**
 * The body a function node or a function decide sends (decisions 10.5.5):
 * `available_edges` are the decide's condition labels, `["next"]` for a
 * function node with an outgoing edge, `[]` without one.
 */
export const functionStepPayload = (call: FunctionStepCall, availableEdges: ReadonlyArray<string>) => {
  const { execution_context, flow_events, flow_info, ...rest } = commonPayload(call)
  return { execution_context, available_edges: [...availableEdges], flow_events, flow_info, ...rest }
}

/** The body an agent function tool sends: the model's arguments (already checked against `input_schema`) as `input`. */
export const functionToolPayload = (call: FunctionStepCall, input: unknown) => ({ input, ...commonPayload(call) })

const parseJson = (text: string): { readonly ok: true; readonly value: unknown } | { readonly ok: false } => {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

/** `vars` and `events` of a JSON object answer; a malformed member fails the call. */
const varsAndEvents = (answer: Record<string, unknown>, invocationId: string) =>
  Effect.gen(function*() {
    const invalid = (message: string) =>
      Effect.fail(new FunctionCallFailed({ reason: "invalid_answer", message, invocationId }))
    const vars = answer.vars
    if (vars !== undefined && vars !== null && !Predicate.isObject(vars)) return yield* invalid("vars must be an object")
    const rawEvents = answer.events
    if (rawEvents !== undefined && rawEvents !== null && !Array.isArray(rawEvents)) {
      return yield* invalid("events must be an array")
    }
    const events: Array<FunctionRequestedEvent> = []
    for (const [index, event] of (rawEvents ?? []).entries()) {
      if (!Predicate.isObject(event) || typeof event.name !== "string") {
        return yield* invalid(`events[${index}] must be an object with a name`)
      }
      const { name, occurred_at, properties } = event
      if (properties !== undefined && properties !== null && !Predicate.isObject(properties)) {
        return yield* invalid(`events[${index}].properties must be an object`)
      }
      if (occurred_at !== undefined && occurred_at !== null && typeof occurred_at !== "string") {
        return yield* invalid(`events[${index}].occurred_at must be a string`)
      }
      events.push({
        name,
        ...(properties === undefined ? {} : { properties: properties as Record<string, unknown> | null }),
        ...(occurred_at === undefined ? {} : { occurred_at: occurred_at as string | null })
      })
    }
    return { vars: (vars ?? {}) as Record<string, unknown>, events }
  })

const decoder = new TextDecoder()
const encoder = new TextEncoder()

export class FunctionCalls extends Context.Service<FunctionCalls, {
  /** A function node (decisions 2.3.7). */
  readonly callNode: (call: FunctionStepCall & { readonly hasNextEdge: boolean }) => Effect.Effect<FunctionNodeAnswer, FunctionCallFailed>
  /** A decide with `decision_type` `function` (decisions 2.3.6): its answer must name one of `labels`. */
  readonly callDecide: (call: FunctionStepCall & { readonly labels: ReadonlyArray<string> }) => Effect.Effect<FunctionDecideAnswer, FunctionCallFailed>
  /** An agent function tool (decisions 2.3.9). */
  readonly callAgentTool: (call: FunctionStepCall & { readonly input: unknown }) => Effect.Effect<FunctionToolAnswer, FunctionCallFailed>
}>()("@parley/core/functions/FunctionCalls") {
  static readonly layer = Layer.effect(
    FunctionCalls,
    Effect.gen(function*() {
      const invoker = yield* FunctionInvoker
      const publicUrl = yield* PublicUrl

      /** POSTs the payload as JSON; answers the 2xx body as text, anything else as the call's failure. */
      const post = (call: FunctionStepCall, payload: unknown, source: FunctionInvocationSource) =>
        Effect.gen(function*() {
          const outcome: FunctionRunOutcome = yield* invoker.call(call.projectId, call.functionId, {
            method: "POST",
            url: functionEndpointUrlOf(publicUrl, call.functionId),
            headers: { "content-type": "application/json", "user-agent": "Parley" },
            body: encoder.encode(JSON.stringify(payload))
          }, source).pipe(
            Effect.catchTags({
              NotFound: () => Effect.fail(new FunctionCallFailed({ reason: "not_found", message: "Function not found" })),
              Unprocessable: (e) => Effect.fail(new FunctionCallFailed({ reason: "not_deployed", message: e.error })),
              BadGateway: (e) => Effect.fail(new FunctionCallFailed({ reason: "secrets_unavailable", message: e.error }))
            })
          )
          const invocationId = outcome.invocation.id
          if (outcome.result._tag === "Failed") {
            const { detail, reason } = outcome.result.failure
            return yield* new FunctionCallFailed({ reason: reason === "timeout" ? "timeout" : "failed", message: detail, invocationId })
          }
          const response = outcome.result.response
          const text = decoder.decode(response.body)
          if (response.status < 200 || response.status > 299) {
            return yield* new FunctionCallFailed({
              reason: "http_status",
              message: `The function answered ${response.status}: ${text.slice(0, 512)}`,
              status: response.status,
              invocationId
            })
          }
          return { text, invocationId }
        })

      const callNode = Effect.fn("FunctionCalls.callNode")(function*(call: FunctionStepCall & { readonly hasNextEdge: boolean }) {
        const { invocationId, text } = yield* post(call, functionStepPayload(call, call.hasNextEdge ? ["next"] : []), "workflow_node")
        const parsed = parseJson(text)
        if (!parsed.ok) return { vars: {}, events: [], saved: text, invocationId } satisfies FunctionNodeAnswer
        if (!Predicate.isObject(parsed.value)) return { vars: {}, events: [], saved: parsed.value, invocationId } satisfies FunctionNodeAnswer
        const { events, vars } = yield* varsAndEvents(parsed.value, invocationId)
        return { vars, events, saved: parsed.value, invocationId } satisfies FunctionNodeAnswer
      })

      const callDecide = Effect.fn("FunctionCalls.callDecide")(
        function*(call: FunctionStepCall & { readonly labels: ReadonlyArray<string> }) {
          const { invocationId, text } = yield* post(call, functionStepPayload(call, call.labels), "decide_node")
          const parsed = parseJson(text)
          if (!parsed.ok || !Predicate.isObject(parsed.value)) {
            return yield* new FunctionCallFailed({
              reason: "invalid_json",
              message: "The decide function must answer a JSON object with next_edge",
              invocationId
            })
          }
          const nextEdge = parsed.value.next_edge
          if (typeof nextEdge !== "string" || !call.labels.includes(nextEdge)) {
            return yield* new FunctionCallFailed({
              reason: "unknown_edge",
              message: `next_edge ${JSON.stringify(nextEdge ?? null)} is not one of ${JSON.stringify(call.labels)}`,
              invocationId
            })
          }
          const { events, vars } = yield* varsAndEvents(parsed.value, invocationId)
          return { nextEdge, vars, events, invocationId } satisfies FunctionDecideAnswer
        }
      )

      const callAgentTool = Effect.fn("FunctionCalls.callAgentTool")(function*(call: FunctionStepCall & { readonly input: unknown }) {
        const { invocationId, text } = yield* post(call, functionToolPayload(call, call.input), "agent_tool")
        const parsed = parseJson(text)
        const vars = parsed.ok && Predicate.isObject(parsed.value) && Predicate.isObject(parsed.value.vars) ? parsed.value.vars : {}
        return { result: cutToolResult(text), vars, invocationId } satisfies FunctionToolAnswer
      })

      return FunctionCalls.of({ callNode, callDecide, callAgentTool })
    })
  )
}
