/**
 * The `function` node and `decide` (decisions 2.3.6, 2.3.7, 10.5.5): the
 * payload every function step sends, the answer's `vars` and events, and the
 * AI decision beside the function decision.
 */
import { Effect, Option } from "effect"
import { Events } from "../../events/Events.ts"
import { FunctionCalls, type FunctionStepCall } from "../../functions/FunctionCalls.ts"
import { replyFacts } from "../../messaging/Content.ts"
import { Messaging } from "../../messaging/Messaging.ts"
import { StepEventsRepo } from "../ExecutionsRepo.ts"
import { type EventDraft, follow, type StepOutcome, StepFailed } from "../Step.ts"
import { aiDecide } from "../ai/AiDecide.ts"
import { chainDepthOf, configTexts, type StepInput, withVars } from "./NodeInput.ts"

/** The payload parts every function step sends (decisions 10.5.5). */
export const functionCall = Effect.fnUntraced(function*(input: StepInput, functionId: string) {
  const events = yield* StepEventsRepo
  const messaging = yield* Messaging
  const e = input.execution
  const recent = yield* events.latest(e, 10)
  const conversation = e.msg_conversation_id === null
    ? undefined
    : yield* messaging.getConversation(e.project_id, e.msg_conversation_id).pipe(Effect.option)
  const messages = conversation === undefined || Option.isNone(conversation)
    ? []
    : (yield* messaging.listMessages(e.project_id, { conversation_id: conversation.value.id }, { mode: "cursor", limit: 20 })).items
  const call: FunctionStepCall = {
    projectId: e.project_id,
    functionId,
    executionContext: e.execution_context,
    flowEvents: [...recent].reverse().map((ev) => ({ event_type: ev.event_type, payload: ev.payload, created_at: ev.created_at })),
    flowInfo: { id: e.workflow_id, name: e.workflow_name, step_id: input.node.id },
    msgContext: conversation === undefined || Option.isNone(conversation) ? undefined : {
      conversation: { ...conversation.value, msg_config_id: conversation.value.msg_config_id },
      messages: [...messages].reverse().map((m) => ({
        id: m.id,
        message_type: m.type,
        content: m.content,
        direction: m.direction,
        status: m.status,
        processing_status: m.processing_status,
        msg_message_id: m.network_id,
        origin: m.origin,
        phone_number: m.phone_number,
        has_media: m.has_media,
        ...replyFacts(m.fields),
        created_at: m.created_at,
        updated_at: m.updated_at
      }))
    }
  }
  return call
})

/** Records the events a function asked for, with the run's conversation; refusals are logged, never fatal. */
export const recordRequestedEvents = Effect.fnUntraced(function*(
  input: StepInput,
  requested: ReadonlyArray<{ readonly name: string; readonly properties?: unknown; readonly occurred_at?: string | null | undefined }>
) {
  const emitted = yield* Events
  const drafts: Array<EventDraft> = []
  for (const event of requested) {
    const outcome = yield* Effect.result(emitted.emit(input.execution.project_id, {
      name: event.name,
      properties: (event.properties ?? null) as Record<string, unknown> | null,
      occurred_at: event.occurred_at ?? null,
      conversation_id: input.execution.msg_conversation_id
    }, { chainDepth: chainDepthOf(input.execution) }))
    drafts.push(
      outcome._tag === "Success"
        ? { event_type: "action_performed", payload: { action: "emit_event", event_id: outcome.success.id, name: event.name } }
        : { event_type: "action_failed", payload: { action: "emit_event", error: { message: outcome.failure.error } } }
    )
  }
  return drafts
})

export const functionFailed = (e: { readonly message: string; readonly reason: string }, action: string) =>
  new StepFailed({
    message: e.message,
    code: e.reason,
    events: [{ event_type: "action_failed", payload: { action, error: { message: e.message, code: e.reason } } }]
  })

export const functionNode = Effect.fnUntraced(function*(input: StepInput) {
  const calls = yield* FunctionCalls
  const config = input.node.data.config
  const functionId = configTexts(config).function_id ?? ""
  const call = yield* functionCall(input, functionId)
  const hasNextEdge = input.graph.follow(input.node.id, "next") !== undefined
  const started: EventDraft = { event_type: "action_executing", payload: { action: "function", request: { function_id: functionId } } }
  const answer = yield* calls.callNode({ ...call, hasNextEdge }).pipe(Effect.mapError((e) => functionFailed(e, "function")))
  const saveTo = configTexts(config).save_response_to
  const vars = saveTo === undefined ? answer.vars : { ...answer.vars, [saveTo]: answer.saved }
  const emitted = yield* recordRequestedEvents(input, answer.events)
  const events: Array<EventDraft> = [
    started,
    { event_type: "action_performed", payload: { action: "function", invocation_id: answer.invocationId, response: answer.saved } },
    ...(Object.keys(answer.vars).length > 0
      ? [{ event_type: "variables_merged", payload: { keys: Object.keys(answer.vars), source: "function" } }]
      : []),
    ...emitted
  ]
  return follow(withVars(input.execution.execution_context, vars), events)
})


export const decideNode = Effect.fnUntraced(function*(input: StepInput) {
  const config = input.node.data.config
  const conditions = Array.isArray(config.conditions) ? config.conditions as ReadonlyArray<Record<string, unknown>> : []
  const labels = conditions.map((c) => String(c.label))
  const decisionType = configTexts(config).decision_type ?? "ai"
  const evaluating: EventDraft = { event_type: "decision_evaluating", payload: { decision_type: decisionType, available_edges: labels } }
  if (decisionType !== "function") {
    const decided = yield* aiDecide(input, conditions.map((c) => ({ label: String(c.label), description: configTexts(c).description ?? "" })))
      .pipe(Effect.mapError((e) => new StepFailed({ ...e, events: [evaluating, ...(e.events ?? [])] })))
    return {
      context: input.execution.execution_context,
      events: [
        evaluating,
        {
          event_type: "decision_evaluated",
          payload: {
            selected_label: decided.label,
            fallback: decided.fallback,
            model_answer: decided.answer,
            ...(decided.error !== null ? { error: decided.error } : {})
          }
        }
      ],
      next: { _tag: "Follow", label: decided.label, noEdge: "no_edge" }
    } satisfies StepOutcome
  }
  const calls = yield* FunctionCalls
  const call = yield* functionCall(input, configTexts(config).function_id ?? "")
  const answer = yield* calls.callDecide({ ...call, labels }).pipe(Effect.mapError((e) => functionFailed(e, "function")))
  const emitted = yield* recordRequestedEvents(input, answer.events)
  return {
    context: withVars(input.execution.execution_context, answer.vars),
    events: [
      evaluating,
      ...(Object.keys(answer.vars).length > 0
        ? [{ event_type: "variables_merged", payload: { keys: Object.keys(answer.vars), source: "decide" } }]
        : []),
      ...emitted,
      { event_type: "decision_evaluated", payload: { selected_label: answer.nextEdge, fallback: false } }
    ],
    next: { _tag: "Follow", label: answer.nextEdge, noEdge: "no_edge" }
  } satisfies StepOutcome
})

