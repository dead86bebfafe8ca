/**
 * The node types (decisions 2.3) as step functions: each reads the node's
 * config and the execution, and answers a `StepOutcome` or fails with
 * `StepFailed`. Side effects that must happen at most once (sends, webhook
 * requests) are not done here: the node answers `Perform` and the engine
 * records the intent before it sends (`Engine.ts`), or before it calls
 * `callWebhook`. Functions and events run
 * here: they are not retried (decisions 10.4), and a crash in their middle
 * fails the step as in doubt (the engine sees the step was entered twice).
 */
import { Effect, Option, Predicate } from "effect"
import { EventPlans } from "../events/EventPlans.ts"
import { Events } from "../events/Events.ts"
import { FunctionCalls } from "../functions/FunctionCalls.ts"
import { Messaging } from "../messaging/Messaging.ts"
import { Templates } from "../messaging/templates/Templates.ts"
import { StoredWorkflows } from "../workflows/StoredWorkflows.ts"
import { Ids } from "../shared/Ids.ts"
import type { Launch } from "./NewExecution.ts"
import { WebhookHttp } from "../ports/WebhookHttp.ts"
import { WebhookSettings } from "../shared/OutboundSettings.ts"
import { ExecutionInputsRepo, StepEventsRepo } from "./ExecutionsRepo.ts"
import { LanguageModels } from "../ai/LanguageModels.ts"
import { ProviderModels } from "../ai/ProviderModels.ts"
import { McpServers } from "../ai/tools/McpServers.ts"
import { KnowledgeSearch } from "../ai/tools/KnowledgeSearch.ts"
import { phoneDigits } from "../messaging/numbers/MessageConfig.ts"
import { convertValue, secretsUsed } from "./Interpolation.ts"
import { type EventDraft, follow, type StepOutcome, StepFailed } from "./Step.ts"
import { agentStep } from "./agent/Agent.ts"
import { chainDepthOf, configNumbers, configTexts, contextTexts, fail, type StepInput, text, value, withVars } from "./nodes/NodeInput.ts"
import { agentSend, sendInteractive, sendTemplate, sendText } from "./nodes/SendNodes.ts"
import { decideNode, functionNode } from "./nodes/FunctionNodes.ts"
import { splitNode } from "./nodes/SplitNode.ts"
import { webhookNode } from "./nodes/WebhookNode.ts"

/** Nesting depth of `call` children (decisions 2.3.11): a run at this depth calls no further. */
export const MAX_CALL_DEPTH = 5

/** System values a call child keeps from its parent (decisions 2.4.2); the launch sets the rest. */
const INHERITED_SYSTEM = ["trigger_msg_config_id", "customer", "event", "trigger_payload", "event_chain_depth"]

/**
 * `call` (decisions 2.3.11): a child execution of another active workflow, with a copy of the parent's `vars` and
 * the same context, created in the same transaction as the parent's checkpoint, which parks on the child
 * (`Transitions.followChild` moves the parent as the child moves).
 */
const callNode = Effect.fnUntraced(function*(input: StepInput) {
  const e = input.execution
  if (e.call_depth >= MAX_CALL_DEPTH) return yield* fail("Call depth exceeded", "call_depth_exceeded")
  const workflowId = configTexts(input.node.data.config).workflow_id ?? ""
  const target = yield* (yield* StoredWorkflows).findById(e.project_id, workflowId)
  if (Option.isNone(target)) return yield* fail(`Called workflow ${workflowId} not found`, "call_target_missing")
  if (target.value.status !== "active") return yield* fail(`Called workflow ${target.value.name} is not active`, "call_target_inactive")
  const messaging = yield* Messaging
  const config = e.msg_config_id === null ? Option.none() : yield* messaging.findNumber(e.project_id, e.msg_config_id)
  const contact = e.contact_id === null ? Option.none() : yield* messaging.findContact(e.project_id, e.contact_id)
  const ids = yield* Ids
  const id = yield* ids.uuid
  const trackingId = yield* ids.uuid
  const ctx = e.execution_context
  const phone = contextTexts(ctx.context).phone_number
  const launch: Launch = {
    workflow: target.value,
    triggerType: e.trigger_type,
    observer: e.observer,
    config: Option.getOrNull(config),
    contact: Option.getOrNull(contact),
    conversationId: e.msg_conversation_id,
    phone: phone === undefined ? null : phoneDigits(phone),
    recipient: contextTexts(ctx.context).recipient ?? null,
    vars: {},
    context: {},
    initialData: ctx.context.initial_data,
    metadata: ctx.metadata,
    system: Object.fromEntries(Object.entries(ctx.system).filter(([k]) => INHERITED_SYSTEM.includes(k))),
    dedupeKey: `call:${e.id}:${e.step_seq}`,
    parent: e
  }
  return {
    context: ctx,
    events: [{ event_type: "action_executing", payload: { action: "call", request: { workflow_id: target.value.id, workflow_name: target.value.name, execution_id: id } } }],
    next: {
      _tag: "Park",
      reason: null,
      wait: { kind: "call", seq: e.step_seq, node_id: input.node.id, due_at: null, timeout_seconds: null, child_id: id }
    },
    spawn: { launch, id, trackingId }
  } satisfies StepOutcome
})


const setVariable = Effect.fnUntraced(function*(input: StepInput) {
  const config = input.node.data.config
  const ctx = input.execution.execution_context
  const name = String(config.variable_name)
  const raw = config.variable_value
  const valueType = (configTexts(config).value_type ?? "string") as "string" | "number" | "boolean" | "json"
  const interpolated = Predicate.isString(raw) && valueType !== "json" ? yield* text(raw, ctx, input.secrets) : yield* value(raw, ctx, input.secrets)
  const converted = yield* convertValue(interpolated, valueType).pipe(Effect.mapError((e) => new StepFailed({ message: e.message })))
  return {
    ...follow(withVars(ctx, { [name]: converted }), [{ event_type: "variables_set", payload: { name, value: converted } }]),
    secrets: secretsUsed(raw, input.secrets)
  }
})


/**
 * `emit_event` (decisions 2.3.13): the event gets the run's conversation and its chain depth. The events
 * capability checks the limits (name, properties, time): a refusal fails the run; a plan or allowance refusal
 * (402) is logged and the run goes on.
 */
const emitEvent = Effect.fnUntraced(function*(input: StepInput) {
  const events = yield* Events
  const config = input.node.data.config
  const ctx = input.execution.execution_context
  const name = String(config.event_name)
  const secrets = secretsUsed(config, input.secrets)
  const rawProperties = config.properties === undefined || config.properties === null
    ? null
    : yield* value(config.properties, ctx, input.secrets)
  const occurredAt = configTexts(config).occurred_at === undefined ? null : (yield* text(String(config.occurred_at), ctx, input.secrets)).trim() || null
  const chainDepth = chainDepthOf(input.execution)
  const request = { name, properties: rawProperties, occurred_at: occurredAt, chain_depth: chainDepth }
  const executing: EventDraft = { event_type: "action_executing", payload: { action: "emit_event", request } }
  const refused = (message: string) => {
    const failed: EventDraft = { event_type: "action_failed", payload: { action: "emit_event", error: { message } } }
    return Effect.fail(new StepFailed({ message, events: [executing, failed], secrets }))
  }
  if (rawProperties !== null && !Predicate.isObject(rawProperties)) {
    return yield* refused("properties must be an object of strings, numbers, booleans or null")
  }
  const outcome = yield* Effect.result(events.emit(input.execution.project_id, {
    name,
    properties: rawProperties as Record<string, unknown> | null,
    occurred_at: occurredAt,
    conversation_id: input.execution.msg_conversation_id
  }, { chainDepth }))
  if (outcome._tag === "Success") {
    return {
      ...follow(ctx, [executing, {
        event_type: "action_performed",
        payload: { action: "emit_event", event_id: outcome.success.id, chain_depth: chainDepth }
      }]),
      secrets
    }
  }
  // The plan or the allowance refused it (402): logged, and the run goes on (decisions 2.3.13).
  if (outcome.failure._tag === "PaymentRequired") {
    return {
      ...follow(ctx, [executing, {
        event_type: "action_failed",
        payload: { action: "emit_event", error: { message: outcome.failure.error, code: outcome.failure.code ?? "payment_required" } }
      }]),
      secrets
    }
  }
  return yield* refused(outcome.failure.error)
})

const handoffNode = Effect.fnUntraced(function*(input: StepInput) {
  const config = input.node.data.config
  const ctx = input.execution.execution_context
  const reason = configTexts(config).reason === undefined ? null : yield* text(String(config.reason), ctx, input.secrets)
  return {
    context: ctx,
    events: [],
    next: { _tag: "Handoff", handoff: { node_id: input.node.id, reason, source: "action_step" }, contextData: config.context_data },
    secrets: secretsUsed(config, input.secrets)
  } satisfies StepOutcome
})

const waitNode = (input: StepInput): Effect.Effect<StepOutcome> => {
  const config = input.node.data.config
  const ctx = input.execution.execution_context
  // Observer runs never take inputs: a wait ends them (decisions 10.1).
  if (input.execution.observer) return Effect.succeed({ context: ctx, events: [], next: { _tag: "End", reason: "observer_wait" } })
  const timeout = config.has_timeout === true ? configNumbers(config).timeout_seconds ?? null : null
  const dueAt = timeout === null ? null : new Date(Date.parse(input.now) + timeout * 1000).toISOString()
  const system = timeout === null
    ? (({ pending_timeout: _, ...rest }) => rest)(ctx.system)
    : { ...ctx.system, pending_timeout: { at: dueAt, seconds: timeout } }
  return Effect.succeed({
    context: { ...ctx, system },
    events: [],
    next: {
      _tag: "Park",
      reason: "wait_for_response",
      wait: { kind: "wait_for_response", seq: input.execution.step_seq, node_id: input.node.id, due_at: dueAt, timeout_seconds: timeout }
    }
  })
}

const delayFor = (input: StepInput): number =>
  input.afterDelay ? 0 : configNumbers(input.node.data.config).delay_seconds ?? 0

/** What the nodes read and call. */
export type NodeServices =
  | ExecutionInputsRepo
  | ProviderModels
  | LanguageModels
  | McpServers
  | KnowledgeSearch
  | EventPlans
  | Messaging
  | Events
  | FunctionCalls
  | StepEventsRepo
  | Templates
  | WebhookHttp
  | WebhookSettings
  | StoredWorkflows
  | Ids

/** Runs one node. */
export const runNode = (input: StepInput): Effect.Effect<StepOutcome, StepFailed, NodeServices> => {
  const ctx = input.execution.execution_context
  switch (input.node.data.node_type) {
    case "start":
      return Effect.succeed(follow(ctx, []))
    case "send_text": {
      const delay = delayFor(input)
      if (delay > 0) {
        return Effect.succeed<StepOutcome>({
          context: ctx,
          events: [],
          next: {
            _tag: "Park",
            reason: null,
            wait: {
              kind: "delay",
              seq: input.execution.step_seq,
              node_id: input.node.id,
              due_at: new Date(Date.parse(input.now) + delay * 1000).toISOString(),
              timeout_seconds: delay
            }
          }
        })
      }
      return sendText(input)
    }
    case "send_template":
      return sendTemplate(input)
    case "send_interactive":
      return sendInteractive(input)
    case "wait_for_response":
      return waitNode(input)
    case "decide":
      return decideNode(input)
    case "split":
      return splitNode(input)
    case "function":
      return functionNode(input)
    case "set_variable":
      return setVariable(input)
    case "emit_event":
      return emitEvent(input)
    case "handoff":
      return handoffNode(input)
    case "webhook":
      return webhookNode(input)
    case "call":
      return callNode(input)
    case "agent":
      return agentStep(input, agentSend)
    default:
      // Every type the validator admits is handled above; only a hand-made revision gets here.
      return fail(`Unknown node type ${input.node.data.node_type}`, "unknown_node_type")
  }
}


export type { StepInput } from "./nodes/NodeInput.ts"
export { callWebhook } from "./nodes/WebhookNode.ts"
export { functionCall } from "./nodes/FunctionNodes.ts"
