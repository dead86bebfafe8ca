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
import { Events } from "../events/Events.ts"
import { FunctionCalls, type FunctionStepCall } from "../functions/FunctionCalls.ts"
import { replyFacts } from "../messaging/Content.ts"
import { Messaging } from "../messaging/Messaging.ts"
import { Templates } from "../messaging/templates/Templates.ts"
import { MessageConfigsRepo } from "../ports/MessageConfigsRepo.ts"
import { ContactsRepo } from "../ports/MessagingRepo.ts"
import { WorkflowsRepo } from "../ports/WorkflowsRepo.ts"
import { Ids } from "../shared/Ids.ts"
import type { Launch } from "./NewExecution.ts"
import { WebhookHttp, type WebhookHttpMethod } from "../ports/WebhookHttp.ts"
import { parseJson } from "../shared/Json.ts"
import { WebhookSettings } from "../webhooks/Settings.ts"
import { StepEventsRepo } from "../ports/ExecutionsRepo.ts"
import type { MessageConfigRecord } from "../messaging/numbers/MessageConfig.ts"
import { phoneDigits } from "../messaging/numbers/MessageConfig.ts"
import { isAiMarker } from "../workflows/NodeConfigs.ts"
import type { Node } from "../workflows/Workflow.ts"
import type { ExecutionContext, ExecutionRecord } from "./Execution.ts"
import type { Graph } from "./Graph.ts"
import { CONTEXT_MAX_BYTES, convertValue, interpolateText, interpolateValue, renderText, type Secrets, secretsUsed } from "./Interpolation.ts"
import { interactiveEnvelope, textEnvelope } from "./Envelopes.ts"
import { TemplateMismatch, templateComponents, templateEnvelope } from "./TemplateEnvelope.ts"
import { type EventDraft, follow, type StepOutcome, StepFailed } from "./Step.ts"

export interface StepInput {
  readonly execution: ExecutionRecord
  readonly graph: Graph
  readonly node: Node
  readonly secrets: Secrets
  readonly now: string
  /** `send_text` whose delay already passed. */
  readonly afterDelay: boolean
}

const str = (u: unknown): string | undefined => (Predicate.isString(u) && u.length > 0 ? u : undefined)
const num = (u: unknown): number | undefined => (Predicate.isNumber(u) && Number.isFinite(u) ? u : undefined)

const fail = (message: string, code?: string, events?: ReadonlyArray<EventDraft>) =>
  Effect.fail(new StepFailed({ message, code, events }))

/** Interpolation failures (an unknown `${ENV:NAME}`) fail the step with their message. */
const text = (template: string, ctx: ExecutionContext, secrets: Secrets) =>
  interpolateText(template, ctx, secrets).pipe(Effect.mapError((e) => new StepFailed({ message: e.message })))
const value = (template: unknown, ctx: ExecutionContext, secrets: Secrets) =>
  interpolateValue(template, ctx, secrets).pipe(Effect.mapError((e) => new StepFailed({ message: e.message })))

const withVars = (ctx: ExecutionContext, vars: Readonly<Record<string, unknown>>): ExecutionContext =>
  Object.keys(vars).length === 0 ? ctx : { ...ctx, vars: { ...ctx.vars, ...vars } }

/** Sender resolution (decisions 2.3): node number, node config, the run's number, the API start's config. */
const resolveSender = Effect.fnUntraced(function*(input: StepInput) {
  const configs = yield* MessageConfigsRepo
  const config = input.node.data.config
  const projectId = input.execution.project_id
  const phoneNumberId = str(config.phone_number_id)
  const ownLive = (found: Option.Option<MessageConfigRecord>) =>
    Option.filter(found, (c) => c.project_id === projectId && c.deleted_at === null)
  if (phoneNumberId !== undefined) return ownLive(yield* configs.findByPhoneNumberId(phoneNumberId))
  const msgConfigId = str(config.msg_config_id)
  if (msgConfigId !== undefined) return ownLive(yield* configs.findById(projectId, msgConfigId))
  const own = input.execution.msg_config_id ?? str(input.execution.execution_context.system.trigger_msg_config_id)
  if (own !== undefined) return ownLive(yield* configs.findById(projectId, own))
  return Option.none<MessageConfigRecord>()
})

/** Destination (decisions 2.3): `to_phone_number`, the contact's number, else its business-scoped id. */
const resolveRecipient = Effect.fnUntraced(function*(input: StepInput) {
  const ctx = input.execution.execution_context
  const override = str(input.node.data.config.to_phone_number)
  if (override !== undefined) {
    const digits = phoneDigits(yield* text(override, ctx, input.secrets))
    return digits.length > 0 ? Option.some({ to: digits }) : Option.none()
  }
  const phone = str(ctx.context.phone_number)
  if (phone !== undefined && phoneDigits(phone).length > 0) return Option.some({ to: phoneDigits(phone) })
  const recipient = str(ctx.context.recipient)
  return recipient !== undefined ? Option.some({ recipient }) : Option.none<{ to: string } | { recipient: string }>()
})

const sendStep = <R>(
  action: "send_text" | "send_template" | "send_interactive",
  build: (input: StepInput, sender: MessageConfigRecord) => Effect.Effect<Record<string, unknown>, StepFailed, R>
) =>
  Effect.fnUntraced(function*(input: StepInput) {
    const ctx = input.execution.execution_context
    const hasOverride = str(input.node.data.config.to_phone_number) !== undefined
    if (input.execution.observer && !hasOverride) {
      return follow(ctx, [{ event_type: "action_skipped", payload: { action, reason: "observer" } }])
    }
    const sender = yield* resolveSender(input)
    if (Option.isNone(sender)) return yield* fail("No sender number")
    const recipient = yield* resolveRecipient(input)
    if (Option.isNone(recipient)) return yield* fail("No recipient")
    const message = yield* build(input, sender.value)
    const key = `${input.execution.id}:${input.execution.step_seq}`
    const envelope = {
      messaging_product: "whatsapp",
      recipient_type: "individual",
      ...recipient.value,
      ...message,
      biz_opaque_callback_data: key
    }
    const outcome: StepOutcome = {
      context: ctx,
      events: [],
      next: {
        _tag: "Perform",
        pending: {
          kind: "send",
          key,
          node_id: input.node.id,
          message_id: "",
          msg_config_id: sender.value.id,
          to: "to" in recipient.value ? recipient.value.to : recipient.value.recipient,
          envelope,
          started_at: input.now
        }
      },
      secrets: secretsUsed(input.node.data.config, input.secrets)
    }
    return outcome
  })

const sendText = sendStep("send_text", (input) =>
  Effect.gen(function*() {
    const raw = input.node.data.config.message
    const body = Predicate.isString(raw)
      ? yield* text(raw, input.execution.execution_context, input.secrets)
      : JSON.stringify(yield* value(raw, input.execution.execution_context, input.secrets))
    if (body.length > 4096) return yield* fail("Message is longer than 4096 characters")
    return textEnvelope(body)
  }))

const sendInteractive = sendStep("send_interactive", (input) =>
  Effect.gen(function*() {
    const config = yield* value(input.node.data.config, input.execution.execution_context, input.secrets)
    return yield* interactiveEnvelope(config as Record<string, unknown>, input.execution.id).pipe(
      Effect.mapError((message) => new StepFailed({ message }))
    )
  }))

const holdsAiMarker = (u: unknown): boolean =>
  isAiMarker(u) || (Array.isArray(u) ? u.some(holdsAiMarker) : Predicate.isObject(u) && Object.values(u).some(holdsAiMarker))

/** AI fields (decisions 2.3.14) are generated by a provider model, which this host does not have: the step fails. */
const refuseAiFields = (node: Node, fields: ReadonlyArray<string>) =>
  fields.some((f) => holdsAiMarker(node.data.config[f]))
    ? fail("AI fields need a provider model, which this host does not have", "ai_unavailable")
    : Effect.void

/** `send_template` (decisions 2.3.3): the mirrored template, read again from the network, must be approved now. */
const sendTemplate = sendStep("send_template", (input, sender) =>
  Effect.gen(function*() {
    yield* refuseAiFields(input.node, ["parameters"])
    const templates = yield* Templates
    const config = input.node.data.config
    const found = yield* templates.forSend(input.execution.project_id, str(config.template_id) ?? "")
    if (Option.isNone(found)) return yield* fail("Template not found", "template_not_found")
    const t = found.value
    if (t.status !== "approved") {
      return yield* fail(`Template ${t.name} (${t.language}) is not approved: its status is ${t.status}`, "template_not_approved")
    }
    if (t.business_account_id !== sender.business_account_id) {
      return yield* fail(`Template ${t.name} belongs to another business account than the sender number`, "template_account_mismatch")
    }
    const parameters = yield* value(config.parameters, input.execution.execution_context, input.secrets)
    const components = templateComponents(t, parameters)
    if (components instanceof TemplateMismatch) return yield* fail(components.message, "template_parameter_mismatch")
    return templateEnvelope(t, components)
  }))

/** The payload parts every function step sends (decisions 10.5.5). */
const functionCall = Effect.fnUntraced(function*(input: StepInput, functionId: string) {
  const events = yield* StepEventsRepo
  const messaging = yield* Messaging
  const e = input.execution
  const recent = yield* events.latest(e.id, 10)
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
const recordRequestedEvents = Effect.fnUntraced(function*(
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

const functionFailed = (e: { readonly message: string; readonly reason: string }, action: string) =>
  new StepFailed({
    message: e.message,
    code: e.reason,
    events: [{ event_type: "action_failed", payload: { action, error: { message: e.message, code: e.reason } } }]
  })

const functionNode = Effect.fnUntraced(function*(input: StepInput) {
  const calls = yield* FunctionCalls
  const config = input.node.data.config
  const functionId = str(config.function_id) ?? ""
  const call = yield* functionCall(input, functionId)
  const hasNextEdge = input.graph.follow(input.node.id, "next") !== undefined
  const started: EventDraft = { event_type: "action_executing", payload: { action: "function", request: { function_id: functionId } } }
  const answer = yield* calls.callNode({ ...call, hasNextEdge }).pipe(Effect.mapError((e) => functionFailed(e, "function")))
  const saveTo = str(config.save_response_to)
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

/** The webhook node's timeout (decisions 2.3.8). */
export const WEBHOOK_TIMEOUT_MS = 30_000
/**
 * Bytes of a webhook answer read at most: the execution context's own limit (2.4.5), since a longer answer could
 * not be saved anyway. A longer answer fails the step when `save_response_to` asks for it, else only its head is logged.
 */
export const WEBHOOK_RESPONSE_MAX_BYTES = CONTEXT_MAX_BYTES
/** Characters of a failed answer's body kept in `error_details` (decisions 2.3.8). */
const WEBHOOK_ERROR_BODY_CHARS = 512

const METHODS: ReadonlyArray<WebhookHttpMethod> = ["GET", "POST", "PUT", "PATCH", "DELETE"]

/** The request a webhook node makes, interpolated (decisions 2.3.8), with the secret values it holds. */
const webhookRequest = Effect.fnUntraced(function*(input: StepInput) {
  const config = input.node.data.config
  const ctx = input.execution.execution_context
  const secrets = secretsUsed(config, input.secrets)
  const failMasked = (message: string, code: string) => Effect.fail(new StepFailed({ message, code, secrets }))
  yield* refuseAiFields(input.node, ["url", "headers", "body_template"])
  const method = (str(config.method)?.toUpperCase() ?? "POST") as WebhookHttpMethod
  if (!METHODS.includes(method)) return yield* failMasked(`Webhook method ${String(config.method)} is not one of ${METHODS.join(", ")}`, "invalid_request")
  const url = (yield* text(String(config.url ?? ""), ctx, input.secrets)).trim()
  const parsed = URL.canParse(url) ? new URL(url) : undefined
  if (parsed === undefined || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
    return yield* failMasked(`Webhook url is not an http or https URL: ${url}`, "invalid_url")
  }
  // Stored definitions have headers as an object; the older surface's JSON text is read the same way.
  const rawHeaders = Predicate.isString(config.headers) ? Option.getOrUndefined(parseJson(config.headers)) : config.headers
  if (rawHeaders !== undefined && rawHeaders !== null && !Predicate.isObject(rawHeaders)) {
    return yield* failMasked("Webhook headers must be an object of strings", "invalid_request")
  }
  const headers: Record<string, string> = {}
  for (const [name, raw] of Object.entries((rawHeaders ?? {}) as Record<string, unknown>)) {
    headers[name] = yield* text(Predicate.isString(raw) ? raw : renderText(raw), ctx, input.secrets)
  }
  const sendsBody = method !== "GET" && method !== "DELETE" && config.body_template !== undefined && config.body_template !== null
  const body = sendsBody ? yield* value(config.body_template, ctx, input.secrets) : undefined
  if (sendsBody && !Object.keys(headers).some((h) => h.toLowerCase() === "content-type")) headers["Content-Type"] = "application/json"
  return { method, url, headers, body, secrets }
})

/**
 * `webhook` (decisions 2.3.8), first half: the request is checked and logged, and the engine records that it is
 * about to be made (`Perform` with a `webhook` pending action) before `callWebhook` makes it.
 */
const webhookNode = Effect.fnUntraced(function*(input: StepInput) {
  const request = yield* webhookRequest(input)
  const outcome: StepOutcome = {
    context: input.execution.execution_context,
    events: [{
      event_type: "action_executing",
      payload: { action: "webhook", request: { method: request.method, url: request.url, headers: request.headers, body: request.body ?? null } }
    }],
    next: {
      _tag: "Perform",
      pending: { kind: "webhook", key: `${input.execution.id}:${input.execution.step_seq}`, node_id: input.node.id, started_at: input.now }
    },
    secrets: request.secrets
  }
  return outcome
})

/**
 * `webhook`, second half: the request, once, with the 30 s timeout and the private-address rule. A 2xx answer
 * goes on by `next` (the body, parsed JSON or else text, in `save_response_to`); anything else fails the step.
 */
export const callWebhook = Effect.fnUntraced(function*(input: StepInput) {
  const http = yield* WebhookHttp
  const settings = yield* WebhookSettings
  const request = yield* webhookRequest(input)
  const { secrets } = request
  const failed = (message: string, code: string, extra: Record<string, unknown> = {}) =>
    Effect.fail(new StepFailed({
      message,
      code,
      secrets,
      events: [{ event_type: "action_failed", payload: { action: "webhook", error: { message, code }, ...extra } }]
    }))
  const answer = yield* Effect.result(http.request({
    method: request.method,
    url: request.url,
    headers: request.headers,
    body: request.body === undefined ? undefined : new TextEncoder().encode(JSON.stringify(request.body)),
    timeoutMs: WEBHOOK_TIMEOUT_MS,
    allowPrivate: settings.allowPrivateUrls,
    maxBodyBytes: WEBHOOK_RESPONSE_MAX_BYTES
  }))
  if (answer._tag === "Failure") return yield* failed(`Webhook request failed: ${answer.failure.message}`, answer.failure.reason)
  const { body, status, truncated } = answer.success
  if (status < 200 || status > 299) {
    return yield* failed(`Webhook answered HTTP ${status}: ${body.slice(0, WEBHOOK_ERROR_BODY_CHARS)}`, String(status), { response_status: status })
  }
  const saveTo = str(input.node.data.config.save_response_to)
  if (saveTo !== undefined && truncated) {
    return yield* failed(`Webhook answer is larger than ${WEBHOOK_RESPONSE_MAX_BYTES} bytes and cannot be saved`, "response_too_large", {
      response_status: status
    })
  }
  const response = Option.getOrElse(parseJson(body), () => body)
  const ctx = input.execution.execution_context
  return {
    ...follow(saveTo === undefined ? ctx : withVars(ctx, { [saveTo]: response }), [
      { event_type: "action_performed", payload: { action: "webhook", response_status: status, response } }
    ]),
    secrets
  }
})

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
  const workflowId = str(input.node.data.config.workflow_id) ?? ""
  const target = yield* (yield* WorkflowsRepo).findById(e.project_id, workflowId)
  if (Option.isNone(target)) return yield* fail(`Called workflow ${workflowId} not found`, "call_target_missing")
  if (target.value.status !== "active") return yield* fail(`Called workflow ${target.value.name} is not active`, "call_target_inactive")
  const config = e.msg_config_id === null ? Option.none() : yield* (yield* MessageConfigsRepo).findById(e.project_id, e.msg_config_id)
  const contact = e.contact_id === null ? Option.none() : yield* (yield* ContactsRepo).findById(e.project_id, e.contact_id)
  const ids = yield* Ids
  const id = yield* ids.uuid
  const trackingId = yield* ids.uuid
  const ctx = e.execution_context
  const phone = str(ctx.context.phone_number)
  const launch: Launch = {
    workflow: target.value,
    triggerType: e.trigger_type,
    observer: e.observer,
    config: Option.getOrNull(config),
    contact: Option.getOrNull(contact),
    conversationId: e.msg_conversation_id,
    phone: phone === undefined ? null : phoneDigits(phone),
    recipient: str(ctx.context.recipient) ?? null,
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

const decideNode = Effect.fnUntraced(function*(input: StepInput) {
  const config = input.node.data.config
  const conditions = Array.isArray(config.conditions) ? config.conditions as ReadonlyArray<Record<string, unknown>> : []
  const labels = conditions.map((c) => String(c.label))
  const decisionType = str(config.decision_type) ?? "ai"
  const evaluating: EventDraft = { event_type: "decision_evaluating", payload: { decision_type: decisionType, available_edges: labels } }
  if (decisionType !== "function") {
    return yield* fail("AI decisions need a provider model, which this host does not have", "ai_unavailable", [evaluating])
  }
  const calls = yield* FunctionCalls
  const call = yield* functionCall(input, str(config.function_id) ?? "")
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

const setVariable = Effect.fnUntraced(function*(input: StepInput) {
  const config = input.node.data.config
  const ctx = input.execution.execution_context
  const name = String(config.variable_name)
  const raw = config.variable_value
  const valueType = (str(config.value_type) ?? "string") as "string" | "number" | "boolean" | "json"
  const interpolated = Predicate.isString(raw) && valueType !== "json" ? yield* text(raw, ctx, input.secrets) : yield* value(raw, ctx, input.secrets)
  const converted = yield* convertValue(interpolated, valueType).pipe(Effect.mapError((e) => new StepFailed({ message: e.message })))
  return {
    ...follow(withVars(ctx, { [name]: converted }), [{ event_type: "variables_set", payload: { name, value: converted } }]),
    secrets: secretsUsed(raw, input.secrets)
  }
})

/** The emitter's `system.event_chain_depth` (decisions 2.4.2): events it emits carry it (10.1). */
const chainDepthOf = (e: ExecutionRecord): number => num(e.execution_context.system.event_chain_depth) ?? 0

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
  const occurredAt = str(config.occurred_at) === undefined ? null : (yield* text(String(config.occurred_at), ctx, input.secrets)).trim() || null
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
  const reason = str(config.reason) === undefined ? null : yield* text(String(config.reason), ctx, input.secrets)
  return {
    context: ctx,
    events: config.context_data === undefined ? [] : [{ event_type: "variables_set", payload: { name: "context_data", value: config.context_data } }],
    next: { _tag: "Handoff", handoff: { node_id: input.node.id, reason, source: "action_step" } },
    secrets: secretsUsed(config, input.secrets)
  } satisfies StepOutcome
})

const waitNode = (input: StepInput): Effect.Effect<StepOutcome> => {
  const config = input.node.data.config
  const ctx = input.execution.execution_context
  // Observer runs never take inputs: a wait ends them (decisions 10.1).
  if (input.execution.observer) return Effect.succeed({ context: ctx, events: [], next: { _tag: "End", reason: "observer_wait" } })
  const timeout = config.has_timeout === true ? num(config.timeout_seconds) ?? null : null
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

const delayFor = (input: StepInput): number => (input.afterDelay ? 0 : num(input.node.data.config.delay_seconds) ?? 0)

/** What the nodes read and call. */
export type NodeServices =
  | MessageConfigsRepo
  | Messaging
  | Events
  | FunctionCalls
  | StepEventsRepo
  | Templates
  | WebhookHttp
  | WebhookSettings
  | WorkflowsRepo
  | ContactsRepo
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
    default:
      return fail(`Node type ${input.node.data.node_type} cannot run on this host yet`, "unsupported_node")
  }
}
