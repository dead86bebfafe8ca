/**
 * Record and replay (docs/testing.md): a run of a host, read from its step
 * events, becomes a conversation script. The contact's inputs become steps
 * (what it said, tapped, picked or sent, and the time a wait timed out
 * after); what functions, webhooks and the model answered becomes the
 * script's doubles; and what each node did (entered, sent, the edge it took)
 * is kept under `recorded`. Replayed against a changed definition, the
 * script feeds the same inputs and answers, then reports, per node, the
 * first thing it did differently.
 */
import { Schema } from "effect"
import type { Definition } from "../index.ts"
import { describeSent, sentMessageOf } from "./SentMessages.ts"
import type { FlowScript, FlowStep } from "./FlowScripts.ts"

/** What recording reads of a step event (`GET /workflow_executions/<id>/events` items, or the kit's `events`). */
export interface RecordedEvent {
  readonly event_type: string
  readonly direction: string | null
  readonly edge_label: string | null
  readonly created_at: string
  readonly payload: Readonly<Record<string, unknown>>
  readonly step: { readonly identifier: string } | null
}

/** What each node did, in order: `entered`, `sent <message>`, `edge <label>`, `ended`, `failed <message>`, `handoff`. */
export type NodeFacts = Readonly<Record<string, ReadonlyArray<string>>>

const Reply = Schema.Struct({ type: Schema.Literals(["button_reply", "list_reply"]), id: Schema.String, title: Schema.String })
const Media = Schema.Struct({ type: Schema.Literals(["image", "video", "audio", "document", "sticker"]), caption: Schema.optionalKey(Schema.String) })
const SendRequest = Schema.Struct({ action: Schema.String, request: Schema.Unknown })
const WebhookRequest = Schema.Struct({ action: Schema.Literal("webhook"), request: Schema.Struct({ url: Schema.String }) })
const WebhookAnswer = Schema.Struct({ action: Schema.Literal("webhook"), response_status: Schema.Int, response: Schema.optionalKey(Schema.Unknown) })
const FunctionAnswer = Schema.Struct({ action: Schema.Literal("function"), response: Schema.optionalKey(Schema.Unknown) })
const FunctionRequest = Schema.Struct({ action: Schema.Literal("function"), request: Schema.Struct({ function_id: Schema.String }) })
const Decision = Schema.Struct({ selected_label: Schema.String, model_answer: Schema.optionalKey(Schema.NullOr(Schema.String)) })
const Failure = Schema.Struct({ message: Schema.optionalKey(Schema.String), error: Schema.optionalKey(Schema.String) })
const Resumed = Schema.Struct({ source: Schema.String })
const AgentToolCall = Schema.Struct({ tool: Schema.String, input: Schema.optionalKey(Schema.Unknown) })
const AgentMessage = Schema.Struct({ text: Schema.String })
const Notification = Schema.Struct({ message: Schema.String })
const Started = Schema.Struct({ trigger_type: Schema.String, variables: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown)) })

const is = <S extends Schema.Top & { readonly DecodingServices: never }>(schema: S) => {
  const decode = Schema.decodeUnknownOption(schema)
  return (value: unknown): S["Type"] | undefined => {
    const decoded = decode(value)
    return decoded._tag === "Some" ? decoded.value : undefined
  }
}
const asReply = is(Reply)
const asMedia = is(Media)
const asSend = is(SendRequest)
const asWebhookRequest = is(WebhookRequest)
const asWebhookAnswer = is(WebhookAnswer)
const asFunctionAnswer = is(FunctionAnswer)
const asFunctionRequest = is(FunctionRequest)
const asDecision = is(Decision)
const asFailure = is(Failure)
const asResumed = is(Resumed)
const asStarted = is(Started)
const asAgentToolCall = is(AgentToolCall)
const asAgentMessage = is(AgentMessage)
const asNotification = is(Notification)

const SENDS = new Set(["send_text", "send_template", "send_interactive", "send_media"])

/** What each node of a run did, from its step events (oldest first). */
export const nodeFacts = (events: ReadonlyArray<RecordedEvent>): NodeFacts => {
  const facts: Record<string, Array<string>> = {}
  let current: string | undefined
  const add = (node: string | undefined, fact: string) => {
    if (node !== undefined) (facts[node] ??= []).push(fact)
  }
  for (const e of events) {
    const node = e.step?.identifier ?? current
    if (e.step !== null) current = e.step.identifier
    const send = asSend(e.payload)
    if (e.event_type === "step_entered") add(node, "entered")
    else if (e.event_type === "action_executing" && send !== undefined && SENDS.has(send.action)) {
      add(node, `sent ${describeSent(sentMessageOf(send.request))}`)
    } else if (e.event_type === "agent_message_sent") {
      const message = asAgentMessage(e.payload)
      if (message !== undefined) add(node, `sent ${describeSent({ kind: "text", text: message.text })}`)
    } else if (e.event_type === "step_completed" && e.edge_label !== null) add(node, `edge ${e.edge_label}`)
    else if (e.event_type === "execution_ended") add(node, "ended")
    else if (e.event_type === "execution_handoff") add(node, "handoff")
    else if (e.event_type === "execution_failed") {
      const failure = asFailure(e.payload)
      add(node, `failed ${failure?.message ?? failure?.error ?? ""}`.trim())
    }
  }
  return facts
}

/** Per node, the first fact that differs between a recording and a replay; nodes that agree are left out. */
export const compareFacts = (recorded: NodeFacts, replayed: NodeFacts): ReadonlyArray<string> => {
  const nodes = [...Object.keys(recorded), ...Object.keys(replayed).filter((n) => !(n in recorded))]
  return nodes.flatMap((node) => {
    const was = recorded[node] ?? []
    const now = replayed[node] ?? []
    for (let i = 0; i < Math.max(was.length, now.length); i++) {
      if (was[i] !== now[i]) {
        const said = (fact: string | undefined) => (fact === undefined ? "nothing more" : fact)
        return [`node ${node}: recorded ${said(was[i])}, replay ${said(now[i])}`]
      }
    }
    return []
  })
}

/** The workflow definition's nodes, for the function ids of decide nodes (their events name none). */
export interface RecordedDefinition {
  readonly nodes: ReadonlyArray<{ readonly id: string; readonly data: { readonly config: Readonly<Record<string, unknown>> } }>
}

const seconds = (from: string, to: string) => Math.max(0, Math.ceil((Date.parse(to) - Date.parse(from)) / 1000))

/**
 * A conversation script replaying a recorded run: its inputs as steps, its answers as doubles, and what each node did
 * under `recorded`. `workflow` is the path the script names for the definition (written beside it).
 */
export const recordScript = (run: {
  readonly id: string
  readonly workflow: string
  readonly definition: RecordedDefinition
  readonly events: ReadonlyArray<RecordedEvent>
  readonly contact?: { readonly phone?: string | undefined; readonly name?: string | undefined } | undefined
}): FlowScript => {
  const steps: Array<FlowStep> = []
  const functions: Record<string, { readonly answers: Array<unknown> }> = {}
  const webhooks: Array<{ readonly url: string; readonly status: number; readonly body: unknown }> = []
  type Turn = { readonly text?: string; readonly tool_calls?: ReadonlyArray<{ readonly name: string; readonly arguments: unknown }> }
  const model: Array<Turn> = []
  // An agent's iteration is one model answer: its tool calls, and the text it sent (not through a tool).
  let agentTurn: { texts: Array<string>; calls: Array<{ readonly name: string; readonly arguments: unknown }> } | undefined
  const flushAgentTurn = () => {
    if (agentTurn === undefined) return
    const notified = new Set(agentTurn.calls.flatMap((c) => {
      const n = c.name === "send_notification_to_user" ? asNotification(c.arguments) : undefined
      return n === undefined ? [] : [n.message]
    }))
    const text = agentTurn.texts.filter((t) => !notified.has(t)).join("\n")
    model.push({ ...(text === "" ? {} : { text }), ...(agentTurn.calls.length === 0 ? {} : { tool_calls: agentTurn.calls }) })
    agentTurn = undefined
  }
  let trigger: "inbound_message" | "api" = "inbound_message"
  let pendingWebhook: string | undefined
  let pendingFunction: string | undefined
  let previous: string | undefined
  const configOf = (node: string | undefined) => run.definition.nodes.find((n) => n.id === node)?.data.config ?? {}
  const answer = (functionId: string, value: unknown) => void (functions[functionId] ??= { answers: [] }).answers.push(value)

  for (const e of run.events) {
    const node = e.step?.identifier
    if (e.event_type === "agent_iteration_started") {
      flushAgentTurn()
      agentTurn = { texts: [], calls: [] }
    } else if (e.event_type === "agent_tool_called" && agentTurn !== undefined) {
      const call = asAgentToolCall(e.payload)
      if (call !== undefined) agentTurn.calls.push({ name: call.tool, arguments: call.input ?? {} })
    } else if (e.event_type === "agent_message_sent" && agentTurn !== undefined) {
      const message = asAgentMessage(e.payload)
      if (message !== undefined) agentTurn.texts.push(message.text)
    } else if (e.event_type === "user_input_received" || e.event_type.startsWith("execution_") || e.event_type === "step_completed") {
      flushAgentTurn()
    }
    if (e.event_type === "execution_started") {
      const started = asStarted(e.payload)
      if (started !== undefined && started.trigger_type !== "inbound_message") {
        trigger = "api"
        steps.push({ start: { variables: started.variables ?? {} } })
      }
    } else if (e.event_type === "user_input_received" && e.direction === "inbound") {
      const value = e.payload["value"]
      const reply = asReply(value)
      const media = asMedia(value)
      steps.push(
        typeof value === "string"
          ? { say: value }
          : reply !== undefined
          ? reply.type === "button_reply" ? { tap: reply.title } : { pick: reply.title }
          : media !== undefined
          ? { send: { media: media.type, ...(media.caption === undefined ? {} : { caption: media.caption }) } }
          : { say: JSON.stringify(value) }
      )
    } else if (e.event_type === "execution_resumed" && asResumed(e.payload)?.source === "timeout" && previous !== undefined) {
      steps.push({ wait: seconds(previous, e.created_at) })
    } else if (e.event_type === "action_executing") {
      pendingWebhook = asWebhookRequest(e.payload)?.request.url
      pendingFunction = asFunctionRequest(e.payload)?.request.function_id
    } else if (e.event_type === "action_performed") {
      const hook = asWebhookAnswer(e.payload)
      if (hook !== undefined && pendingWebhook !== undefined && !webhooks.some((w) => w.url === pendingWebhook)) {
        webhooks.push({ url: pendingWebhook, status: hook.response_status, body: hook.response ?? {} })
      }
      const fn = asFunctionAnswer(e.payload)
      if (fn !== undefined && pendingFunction !== undefined) answer(pendingFunction, fn.response ?? {})
    } else if (e.event_type === "decision_evaluated") {
      const decision = asDecision(e.payload)
      const functionId = configOf(node)["function_id"]
      if (decision !== undefined && configOf(node)["decision_type"] === "function" && typeof functionId === "string") {
        answer(functionId, { next_edge: decision.selected_label })
      } else if (decision !== undefined) model.push({ text: decision.model_answer ?? decision.selected_label })
    }
    if (e.event_type === "step_entered") previous = e.created_at
  }

  flushAgentTurn()
  const contact = run.contact ?? {}
  return {
    name: `replay of run ${run.id}`,
    workflow: run.workflow,
    ...(contact.phone === undefined && contact.name === undefined
      ? {}
      : { contact: { ...(contact.phone === undefined ? {} : { phone: contact.phone }), ...(contact.name === undefined ? {} : { name: contact.name }) } }),
    ...(trigger === "api" ? { trigger } : {}),
    ...(Object.keys(functions).length === 0 ? {} : { functions }),
    ...(webhooks.length === 0 ? {} : { webhooks }),
    ...(model.length === 0 ? {} : { model }),
    steps,
    recorded: nodeFacts(run.events)
  }
}

const Conditions = Schema.Array(Schema.Record(Schema.String, Schema.Unknown))
const asConditions = is(Conditions)

/** A node's config as a create takes it: decide conditions lose the ids the host gave them. */
const writableConfig = (config: Readonly<Record<string, unknown>>) => {
  const conditions = asConditions(config["conditions"])
  return conditions === undefined
    ? config
    : { ...config, conditions: conditions.map((c) => Object.fromEntries(Object.entries(c).filter(([key]) => key !== "id"))) }
}

/**
 * The body of `POST /platform/v1/workflows` that recreates a workflow read from a host (`GET /workflows/<id>/definition`):
 * the settings that change how it runs, and the graph in its write form (edge ids and condition ids are the host's own,
 * so edges go by label).
 */
export const workflowBodyOf = (w: {
  readonly name: string
  readonly description?: string | null | undefined
  readonly message_debounce_seconds: number | null
  readonly inbound_message_read_mode: string
  readonly agent_default_tools_version: number | null
  readonly definition: Definition
}) => ({
  workflow: {
    name: w.name,
    ...(w.description === undefined || w.description === null ? {} : { description: w.description }),
    message_debounce_seconds: w.message_debounce_seconds,
    inbound_message_read_mode: w.inbound_message_read_mode,
    agent_default_tools_version: w.agent_default_tools_version,
    definition: {
      nodes: w.definition.nodes.map((n) => ({
        id: n.id,
        position: n.position,
        data: { node_type: n.data.node_type, config: writableConfig(n.data.config), display_name: n.data.display_name }
      })),
      edges: w.definition.edges.map((e) => ({ source: e.source, target: e.target, ...(e.label === null ? {} : { label: e.label }) }))
    }
  }
})

const RunContext = Schema.Struct({
  phone_number: Schema.optionalKey(Schema.NullOr(Schema.String)),
  contact: Schema.optionalKey(Schema.NullOr(Schema.Struct({ name: Schema.optionalKey(Schema.NullOr(Schema.String)) })))
})
const asRunContext = is(RunContext)

/** The contact of a run, from its `execution_context.context`: the phone number and the name the network gave. */
export const contactOf = (context: unknown): { readonly phone?: string; readonly name?: string } => {
  const c = asRunContext(context)
  const phone = c?.phone_number ?? undefined
  const name = c?.contact?.name ?? undefined
  return { ...(phone === undefined ? {} : { phone }), ...(name === undefined ? {} : { name }) }
}
