/**
 * The `agent` node (decisions 2.3.9, 2.3.10, 10.6) as steps of the engine.
 * Each step does one thing and the engine checkpoints it with the journal
 * (`AgentState`): one model call (an iteration), or one item of what the
 * model's last turn asked (its text to send, one tool call). Sends go through
 * the engine's pending sends, and tool calls that reach outside (functions,
 * webhooks, MCP servers, events) through a pending `agent_tool`, so a crash
 * never repeats them: a resumed activation tells the model they are
 * unverified instead.
 */
import { Effect, Option, Predicate, Schema } from "effect"
import { EventPlans } from "../../events/EventPlans.ts"
import { Events } from "../../events/Events.ts"
import { Messaging } from "../../messaging/Messaging.ts"
import { ExecutionInputsRepo } from "../ExecutionsRepo.ts"
import { StoredWorkflows } from "../../workflows/StoredWorkflows.ts"
import { type BuiltInAgentTool, BuiltInAgentTools, effectiveAgentTools } from "../../workflows/NodeConfigs.ts"
import type { ExecutionContext, ExecutionRecord, PendingAgentTool, PendingSend } from "../Execution.ts"
import { interpolateText, renderText } from "../Interpolation.ts"
import { type StepInput, withVars } from "../nodes/NodeInput.ts"
import { type EventDraft, type StepOutcome, StepFailed } from "../Step.ts"
import { callSettings, generate, modelFailure, nodeModel } from "../ai/ModelCall.ts"
import { type AgentCall, type AgentState, type AgentTurn, settleCall, skipRest, toPrompt } from "./AgentState.ts"
import { builtInSpecs, localTool, recentMessages, type ToolAnswer, toolError, type ToolSpec } from "./BuiltInTools.ts"
import { customTools, runCustomTool } from "./CustomTools.ts"
import { OptionalText } from "../../shared/Json.ts"

const DEFAULT_MAX_ITERATIONS = 80
const DEFAULT_MAX_TOKENS = 8192
/** Characters of a tool's input and output kept in `agent_tool_called`. */
const LOGGED_CHARS = 4096

/** The text fields the agent reads from its config and from the model's tool arguments, each absent when empty. */
const AgentTexts = Schema.Struct({
  system_prompt: OptionalText,
  url: OptionalText,
  media_id: OptionalText,
  caption: OptionalText,
  filename: OptionalText,
  summary: OptionalText,
  reason: OptionalText,
  name: OptionalText
})
const agentTexts = Schema.decodeUnknownSync(AgentTexts)

const asText = (value: unknown): string => (Predicate.isString(value) ? value : renderText(value))

/** Whether user-visible sends are allowed: observer runs in `analysis_only` mode (the default) make none. */
const maySend = (input: StepInput) =>
  !input.execution.observer || input.node.data.config.observer_prompt_mode === "interactive_chat"

const logged = (u: unknown): unknown => {
  const text = JSON.stringify(u ?? null)
  return text.length <= LOGGED_CHARS ? u : `${text.slice(0, LOGGED_CHARS)}…`
}

const stay = (
  context: ExecutionContext,
  agent: AgentState,
  events: ReadonlyArray<EventDraft>,
  take?: ReadonlyArray<string>
): StepOutcome => ({ context, events, next: { _tag: "Stay" }, agent, take })

/** What went wrong, in a line: the `error` of a tool error, else the whole result. */
const errorText = (result: unknown): string => {
  const error = Predicate.isObject(result) ? (result as Record<string, unknown>).error : undefined
  return Predicate.isString(error) ? error : asText(result)
}

const toolCalled = (call: AgentCall, answer: ToolAnswer, durationMs: number): EventDraft => ({
  event_type: "agent_tool_called",
  payload: {
    tool: call.name,
    input: logged(call.params),
    output: logged(answer.result),
    duration_ms: durationMs,
    ...(answer.isError ? { error: errorText(answer.result) } : {})
  }
})

/** A settled tool call: its answer joins the journal and the log; the run stays on the node. */
const settled = (input: StepInput, state: AgentState, call: AgentCall, answer: ToolAnswer, startedMs: number, nowMs: number) =>
  stay(
    withVars(input.execution.execution_context, answer.vars ?? {}),
    settleCall(state, call, answer.result, answer.isError),
    [toolCalled(call, answer, Math.max(0, nowMs - startedMs))]
  )

/** A new activation on entering the node: the system prompt, the conversation so far, the tools. */
const beginActivation = Effect.fnUntraced(function*(input: StepInput) {
  const e = input.execution
  const config = input.node.data.config
  const system = yield* interpolateText(agentTexts(config).system_prompt ?? "", e.execution_context, input.secrets).pipe(
    Effect.mapError((err) => new StepFailed({ message: err.message }))
  )
  let turns: Array<AgentTurn> = []
  if (e.msg_conversation_id !== null) {
    turns = (yield* recentMessages(e, e.msg_conversation_id, 20))
      .filter((m) => m.content !== null && m.content !== "")
      .map((m): AgentTurn => m.direction === "inbound" ? { role: "user", text: m.content! } : { role: "assistant", text: m.content!, calls: [] })
  }
  const last = e.execution_context.vars.last_user_input
  if (turns.length === 0 && last !== undefined && last !== null) turns = [{ role: "user", text: asText(last) }]
  const workflow = yield* (yield* StoredWorkflows).findById(e.project_id, e.workflow_id)
  const version = Option.match(workflow, { onNone: () => null, onSome: (w) => w.agent_default_tools_version })
  const enabled = Array.isArray(config.enabled_default_tools)
    ? config.enabled_default_tools.filter((t): t is BuiltInAgentTool => (BuiltInAgentTools as ReadonlyArray<unknown>).includes(t))
    : null
  // `emit_event` is hidden when the project's plan has no project events (2.3.10).
  const eventsEnabled = (yield* (yield* EventPlans).effective(e.project_id)).events_enabled
  const state: AgentState = {
    node_id: input.node.id,
    activation: 1,
    system,
    iteration: 0,
    turns,
    work: [],
    mcp_tools: [],
    builtins: effectiveAgentTools(enabled, version).filter((t) => eventsEnabled || t !== "emit_event")
  }
  return yield* customTools.listMcp(input, state)
})

/** The tools offered to the model: the node's built-ins and its own. */
const offered = (input: StepInput, state: AgentState): ReadonlyArray<ToolSpec> => [
  ...state.builtins.map((name) => builtInSpecs[name]!).filter((spec) => spec !== undefined),
  ...customTools.specs(input, state)
]

/** One model call: the journal as history; the answer's text and calls become the activation's work. */
const iterate = Effect.fnUntraced(function*(input: StepInput, state: AgentState) {
  const e = input.execution
  const config = input.node.data.config
  const maxIterations = Predicate.isNumber(config.max_iterations) ? config.max_iterations : DEFAULT_MAX_ITERATIONS
  if (state.iteration >= maxIterations) {
    return yield* new StepFailed({ message: "Agent exceeded max_iterations", code: "agent_max_iterations" })
  }
  // Messages that arrived mid-activation are the model's next user turns (decisions 10.6).
  const queued = e.observer || e.msg_config_id === null || e.contact_id === null
    ? []
    : yield* (yield* ExecutionInputsRepo).list(e.msg_config_id, e.contact_id, "queued")
  const injected = queued.map((i): AgentTurn => ({ role: "user", text: asText(i.value) }))
  const turns = [...state.turns, ...injected]
  const model = yield* nodeModel(config)
  const settings = callSettings(model, {
    temperature: config.temperature ?? 0,
    maxTokens: config.max_tokens ?? DEFAULT_MAX_TOKENS,
    reasoningEffort: config.reasoning_effort,
    promptCacheTtl: config.prompt_cache_ttl
  })
  const iteration = state.iteration + 1
  const started: EventDraft = { event_type: "agent_iteration_started", payload: { iteration, activation: state.activation, model: model.name } }
  const answer = yield* generate(model, settings, toPrompt(state.system, turns), offered(input, state)).pipe(
    Effect.mapError((error) =>
      new StepFailed({
        message: modelFailure(model, error),
        code: "model_error",
        events: [started, { event_type: "action_failed", payload: { action: "agent", error: { message: modelFailure(model, error) } } }]
      })
    )
  )
  const calls: ReadonlyArray<AgentCall> = answer.toolCalls.map((c) => ({ id: c.id, name: c.name, params: c.params }))
  const text = answer.text.trim()
  const autoSend = config.message_delivery_mode !== "tool_only" && maySend(input) && text.length > 0
  const next: AgentState = {
    ...state,
    iteration,
    turns: [...turns, { role: "assistant", text, calls }],
    work: [...(autoSend ? [{ kind: "text" as const, text }] : []), ...calls.map((call) => ({ kind: "call" as const, call }))]
  }
  // Calls that change nothing outside the run are answered now, in this step's checkpoint: one write per iteration.
  let folded = next
  let context = e.execution_context
  const events: Array<EventDraft> = [started]
  for (let head = folded.work[0]; head?.kind === "call"; head = folded.work[0]) {
    const call = head.call
    const answer = yield* answerLocally({ ...input, execution: { ...e, execution_context: context } }, folded, call)
    if (Option.isNone(answer)) break
    folded = settleCall(folded, call, answer.value.result, answer.value.isError)
    context = withVars(context, answer.value.vars ?? {})
    events.push(toolCalled(call, answer.value, 0))
  }
  return stay(context, folded, events, queued.map((i) => i.id))
})

/** A send the agent asked for: the engine records it and sends it once (`PendingSend.agent`). */
const send = (
  input: StepInput,
  state: AgentState,
  message: Record<string, unknown>,
  agent: NonNullable<PendingSend["agent"]>,
  resolve: ResolveSend
) =>
  Effect.map(resolve(input, message), (pending): StepOutcome =>
    Option.match(pending, {
      onNone: () => settleSend(input.execution.execution_context, state, agent, { error: "No sender number or recipient for this run" }),
      onSome: (p) => ({
        context: input.execution.execution_context,
        events: [],
        next: { _tag: "Perform", pending: { ...p, agent } },
        agent: state
      })
    }))

/** How the agent's sends are addressed and recorded: given by the engine's send nodes (`Nodes.ts`). */
export type ResolveSend = (
  input: StepInput,
  message: Record<string, unknown>
) => Effect.Effect<Option.Option<Omit<PendingSend, "agent">>, StepFailed, any>

const sendMediaMessage = (p: Readonly<Record<string, unknown>>): Record<string, unknown> | string => {
  const kind = p.media_type
  if (kind !== "image" && kind !== "video" && kind !== "audio" && kind !== "document") {
    return "media_type must be image, video, audio or document"
  }
  const texts = agentTexts(p)
  const link = texts.url
  const id = texts.media_id
  if ((link === undefined) === (id === undefined)) return "give exactly one of url or media_id"
  const caption = kind === "audio" ? undefined : texts.caption
  const filename = kind === "document" ? texts.filename : undefined
  return {
    type: kind,
    [kind]: { ...(link !== undefined ? { link } : { id }), ...(caption ? { caption } : {}), ...(filename ? { filename } : {}) }
  }
}

/** One tool call of the model's turn. */
/**
 * The answer of a call that needs no checkpoint of its own: an unknown tool, a tool that only reads or writes the
 * run, a knowledge base. None for the others.
 */
const answerLocally = Effect.fnUntraced(function*(input: StepInput, state: AgentState, call: AgentCall) {
  const offeredNames = offered(input, state).map((s) => s.name)
  if (!offeredNames.includes(call.name)) {
    return Option.some(toolError(`Unknown tool ${call.name}; the tools are ${offeredNames.join(", ")}`))
  }
  const local = yield* localTool(input.execution, call.name, call.params, input.now)
  if (Option.isSome(local)) return local
  return yield* customTools.direct(input, call)
})

/** One tool call of the model's turn. */
const runCall = Effect.fnUntraced(function*(input: StepInput, state: AgentState, call: AgentCall, resolveSend: ResolveSend) {
  const e = input.execution
  const nowMs = Date.parse(input.now)
  const p = (Predicate.isObject(call.params) && !Array.isArray(call.params) ? call.params : {}) as Readonly<Record<string, unknown>>
  const local = yield* answerLocally(input, state, call)
  if (Option.isSome(local)) return settled(input, state, call, local.value, nowMs, nowMs)
  switch (call.name) {
    case "send_notification_to_user":
    case "send_media": {
      if (!maySend(input)) return settled(input, state, call, toolError("Not sent: this observer run only analyses"), nowMs, nowMs)
      const message = call.name === "send_media"
        ? sendMediaMessage(p)
        : Predicate.isString(p.message) && p.message.trim().length > 0
        ? p.message.length <= 4096 ? { type: "text", text: { body: p.message, preview_url: false } } : "message is longer than 4096 characters"
        : "message is required"
      if (Predicate.isString(message)) return settled(input, state, call, toolError(message), nowMs, nowMs)
      return yield* send(input, state, message, { call_id: call.id, text: Predicate.isString(p.message) ? p.message : "" }, resolveSend)
    }
    case "complete_task": {
      const summary = agentTexts(p).summary
      const events: Array<EventDraft> = [toolCalled(call, { result: { completed: true }, isError: false }, 0)]
      if (p.end_conversation === true && e.msg_conversation_id !== null) {
        yield* (yield* Messaging).endConversation(e.project_id, e.msg_conversation_id, "agent")
      }
      const context = withVars(e.execution_context, summary === undefined ? {} : { agent_summary: summary })
      return { context, events, next: { _tag: "Follow", label: "next" }, agent: null } satisfies StepOutcome
    }
    case "handoff_to_human": {
      const reason = agentTexts(p).reason ?? null
      const after = skipRest(settleCall(state, call, { handed_off: true }, false), "the conversation was handed to a human")
      return {
        context: e.execution_context,
        events: [toolCalled(call, { result: { handed_off: true }, isError: false }, 0)],
        next: { _tag: "Handoff", handoff: { node_id: input.node.id, reason, source: "agent_tool" } },
        agent: after
      } satisfies StepOutcome
    }
    case "enter_waiting": {
      const after = skipRest(settleCall(state, call, { waiting: true }, false), "the agent waits for the contact")
      return park(input, after, [toolCalled(call, { result: { waiting: true }, isError: false }, 0)])
    }
    case "ask_about_file":
      return settled(input, state, call, yield* customTools.askAboutFile(input, p), nowMs, Date.parse(input.now))
    default: {
      // Tools that reach outside: recorded before they are made, made by this slice only.
      const pending: PendingAgentTool = {
        kind: "agent_tool",
        key: `${e.id}:${e.step_seq}`,
        node_id: input.node.id,
        call_id: call.id,
        started_at: input.now
      }
      return { context: e.execution_context, events: [], next: { _tag: "Perform", pending }, agent: state } satisfies StepOutcome
    }
  }
})

/** The activation is over until the contact writes again (observers end instead: they never take inputs). */
const park = (input: StepInput, state: AgentState, events: ReadonlyArray<EventDraft>): StepOutcome => {
  const e = input.execution
  if (e.observer) return { context: e.execution_context, events, next: { _tag: "End", reason: "observer_wait" }, agent: state }
  return {
    context: e.execution_context,
    events,
    next: {
      _tag: "Park",
      reason: "agent",
      wait: { kind: "agent", seq: e.step_seq, node_id: input.node.id, due_at: null, timeout_seconds: null }
    },
    agent: state
  }
}

/** One step of an agent node. */
export const agentStep = Effect.fnUntraced(function*(input: StepInput, resolveSend: ResolveSend) {
  const current = input.execution.agent
  if (current === null || current.node_id !== input.node.id) {
    // Entering the node: the activation's journal is checkpointed before the first model call.
    const begun = yield* beginActivation(input)
    return stay(input.execution.execution_context, begun.state, begun.events)
  }
  const state = current
  const head = state.work[0]
  if (head?.kind === "text") {
    return yield* send(input, state, { type: "text", text: { body: head.text.slice(0, 4096), preview_url: false } }, {
      call_id: null,
      text: head.text
    }, resolveSend)
  }
  if (head?.kind === "call") return yield* runCall(input, state, head.call, resolveSend)
  const last = state.turns[state.turns.length - 1]
  // A turn without tool calls ends the activation: the agent said what it had to say and waits for the contact.
  if (state.iteration > 0 && last?.role === "assistant" && last.calls.length === 0) return park(input, state, [])
  return yield* iterate(input, state)
})

/** The state after the engine made (or could not make) an agent's send. */
export const afterSend = (
  record: ExecutionRecord,
  pending: PendingSend,
  outcome: SendOutcome
): StepOutcome => settleSend(record.execution_context, record.agent!, pending.agent!, outcome)

type SendOutcome = { readonly messageId: string } | { readonly error: string; readonly code?: string | undefined }

/** A send's outcome joins the journal: its tool call's result, or (assistant text) just the log. */
const settleSend = (
  ctx: ExecutionContext,
  state: AgentState,
  agent: NonNullable<PendingSend["agent"]>,
  outcome: SendOutcome
): StepOutcome => {
  const call = agent.call_id === null
    ? undefined
    : state.work.flatMap((t) => (t.kind === "call" && t.call.id === agent.call_id ? [t.call] : []))[0]
  const withoutText = { ...state, work: state.work.filter((t) => t.kind !== "text") }
  if ("messageId" in outcome) {
    const sent: EventDraft = { event_type: "agent_message_sent", payload: { message_id: outcome.messageId, text: agent.text }, direction: "outbound" }
    if (call === undefined) return stay(ctx, withoutText, [sent])
    const answer = { result: { sent: true, message_id: outcome.messageId }, isError: false }
    return stay(ctx, settleCall(state, call, answer.result, false), [sent, toolCalled(call, answer, 0)])
  }
  const error = { error: outcome.error, ...(outcome.code !== undefined ? { code: outcome.code } : {}) }
  if (call === undefined) {
    return stay(ctx, withoutText, [
      { event_type: "action_failed", payload: { action: "agent_message", error: { message: outcome.error, code: outcome.code } } }
    ])
  }
  return stay(ctx, settleCall(state, call, error, true), [toolCalled(call, { result: error, isError: true }, 0)])
}

/** The pending outside tool call: made once by the slice that recorded it; unverified for anyone else. */
export const performTool = Effect.fnUntraced(function*(input: StepInput, pending: PendingAgentTool, fresh: boolean) {
  const state = input.execution.agent!
  const call = state.work.flatMap((t) => (t.kind === "call" && t.call.id === pending.call_id ? [t.call] : []))[0]
  const startedMs = Date.parse(pending.started_at)
  if (call === undefined) return stay(input.execution.execution_context, state, [])
  if (!fresh) {
    const answer = toolError("Unverified: a restart interrupted this call, so whether it took effect is unknown; it was not repeated")
    return settled(input, state, call, answer, startedMs, Date.parse(input.now))
  }
  const answer = call.name === "emit_event" ? yield* emitEvent(input, state, call) : yield* runCustomTool(input, state, call)
  return settled(input, state, call, answer, startedMs, Date.parse(input.now))
})

/** `emit_event` within the node's allowlist (`default_tool_configs.emit_event.event_definition_ids`). */
const emitEvent = Effect.fnUntraced(function*(input: StepInput, _state: AgentState, call: AgentCall) {
  const e = input.execution
  const p = (Predicate.isObject(call.params) ? call.params : {}) as Readonly<Record<string, unknown>>
  const name = agentTexts(p).name
  if (name === undefined) return toolError("name is required")
  const allowed = yield* customTools.allowedEvents(input)
  if (Option.isSome(allowed) && !allowed.value.includes(name)) {
    return toolError(`Event ${name} is not one this agent may emit; allowed: ${allowed.value.join(", ")}`)
  }
  const properties = p.properties === undefined || p.properties === null ? null : p.properties
  if (properties !== null && (!Predicate.isObject(properties) || Array.isArray(properties))) {
    return toolError("properties must be an object of strings, numbers, booleans or null")
  }
  const chainDepth = Predicate.isNumber(e.execution_context.system.event_chain_depth) ? e.execution_context.system.event_chain_depth : 0
  const outcome = yield* Effect.result((yield* Events).emit(e.project_id, {
    name,
    properties: properties as Record<string, unknown> | null,
    occurred_at: null,
    conversation_id: e.msg_conversation_id
  }, { chainDepth }))
  return outcome._tag === "Success"
    ? { result: { event_id: outcome.success.id }, isError: false }
    : toolError(outcome.failure.error)
})
