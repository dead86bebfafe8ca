/**
 * The agent's own tools (decisions 2.3.9, 10.5.5, 10.6): function tools,
 * webhook tools, knowledge bases and MCP servers, as the model is offered
 * them and as they answer; plus `ask_about_file` and the `emit_event`
 * allowlist, which read the project.
 */
import { Effect, Option, Predicate, Schema } from "effect"
import { Prompt } from "effect/ai"
import { Events } from "../../events/Events.ts"
import { FunctionCalls } from "../../functions/FunctionCalls.ts"
import { Messaging } from "../../messaging/Messaging.ts"
import { functionCall } from "../nodes/FunctionNodes.ts"
import type { StepInput } from "../nodes/NodeInput.ts"
import { generateText, modelFailure, nodeModel, callSettings } from "../ai/ModelCall.ts"
import { type KnowledgeBaseConfig, KNOWLEDGE_TOOL_INPUT_SCHEMA, searchKnowledgeBase } from "../../ai/tools/KnowledgeBaseTool.ts"
import { validateArguments } from "../../ai/tools/JsonSchema.ts"
import { callMcpTool, findMcpTool, McpServers, mcpToolName, type McpServerToolConfig, resolveMcpServer } from "../../ai/tools/McpServers.ts"
import type { ToolOutcome } from "../../shared/ToolResult.ts"
import { callWebhookTool, type WebhookToolConfig } from "../../ai/tools/WebhookTool.ts"
import { interpolateValue } from "../Interpolation.ts"
import type { EventDraft } from "../Step.ts"
import type { AgentCall, AgentState, McpToolEntry } from "./AgentState.ts"
import { type ToolAnswer, toolError, type ToolSpec } from "./BuiltInTools.ts"
import { OptionalText } from "../../shared/Json.ts"

type Item = Readonly<Record<string, unknown>>

const items = (u: unknown): ReadonlyArray<Item> =>
  Array.isArray(u) ? u.filter((i): i is Item => Predicate.isObject(i) && !Array.isArray(i)) : []

/** The text fields of a tool's config and of the model's arguments to it, each absent when empty. */
const ToolTexts = Schema.Struct({
  description: OptionalText,
  function_id: OptionalText,
  url: OptionalText,
  message_id: OptionalText,
  question: OptionalText
})
const toolTexts = Schema.decodeUnknownSync(ToolTexts)

const EMPTY_OBJECT_SCHEMA = { type: "object", properties: {} }

const schemaOr = (u: unknown): Readonly<Record<string, unknown>> =>
  Predicate.isObject(u) && !Array.isArray(u) ? u as Record<string, unknown> : EMPTY_OBJECT_SCHEMA

const functionTools = (input: StepInput) => items(input.node.data.config.flow_agent_function_tools)

const webhookTools = (input: StepInput) => items(input.node.data.config.flow_agent_webhooks) as ReadonlyArray<WebhookToolConfig & Item>
const knowledgeBases = (input: StepInput) =>
  items(input.node.data.config.flow_agent_knowledge_bases) as ReadonlyArray<KnowledgeBaseConfig & Item>
const mcpServers = (input: StepInput) => items(input.node.data.config.flow_agent_mcp_servers) as ReadonlyArray<McpServerToolConfig & Item>

/** The node's own tools as the model sees them. */
const specs = (input: StepInput, state: AgentState): ReadonlyArray<ToolSpec> => [
  ...functionTools(input).map((t) => ({
    name: String(t.name),
    description: toolTexts(t).description ?? String(t.name),
    parameters: schemaOr(t.input_schema)
  })),
  ...webhookTools(input).map((t) => ({
    name: t.name,
    description: toolTexts(t).description ?? t.name,
    parameters: schemaOr(t.body_schema)
  })),
  ...knowledgeBases(input).map((kb) => ({
    name: kb.name,
    description: toolTexts(kb).description ?? `Look up passages of the ${kb.name} knowledge base`,
    parameters: KNOWLEDGE_TOOL_INPUT_SCHEMA as unknown as Readonly<Record<string, unknown>>
  })),
  ...state.mcp_tools.map((t) => ({
    name: t.exposed,
    description: t.description,
    parameters: schemaOr(t.input_schema)
  }))
]

/** Interpolation for a tool's url, headers and body; an unknown `${ENV:NAME}` is the tool's error, not the run's. */
const interpolator = (input: StepInput) => (template: unknown) =>
  interpolateValue(template, input.execution.execution_context, input.secrets)

const fromOutcome = (outcome: ToolOutcome): ToolAnswer => ({ result: outcome.result, isError: !outcome.ok })

/** Tools that only read (knowledge bases): answered at once, never pending. */
const direct = Effect.fnUntraced(function*(input: StepInput, call: AgentCall) {
  const kb = knowledgeBases(input).find((k) => k.name === call.name)
  if (kb === undefined) return Option.none<ToolAnswer>()
  return Option.some(fromOutcome(yield* searchKnowledgeBase(kb, call.params)))
})

/** A function tool (10.5.5): the arguments and the run's payload; the answer (cut to 16 KB) is the result, `vars` merge. */
const runFunction = Effect.fnUntraced(function*(input: StepInput, tool: Item, call: AgentCall) {
  const checked = yield* Effect.result(validateArguments(tool.input_schema, call.params))
  if (checked._tag === "Failure") return toolError(checked.failure.message)
  const functionId = toolTexts(tool).function_id ?? ""
  const payload = yield* functionCall(input, functionId)
  const answer = yield* Effect.result((yield* FunctionCalls).callAgentTool({ ...payload, input: call.params }))
  if (answer._tag === "Failure") return toolError(answer.failure.message)
  return { result: answer.success.result, isError: false, vars: answer.success.vars } satisfies ToolAnswer
})

/** Runs one of the node's own tools that reach outside (recorded as pending by the engine first). */
export const runCustomTool = Effect.fnUntraced(function*(input: StepInput, _state: AgentState, call: AgentCall) {
  const fn = functionTools(input).find((t) => t.name === call.name)
  if (fn !== undefined) return yield* runFunction(input, fn, call)
  const hook = webhookTools(input).find((t) => t.name === call.name)
  if (hook !== undefined) {
    return yield* callWebhookTool(hook, call.params, interpolator(input)).pipe(
      Effect.map(fromOutcome),
      Effect.catch((e) => Effect.succeed(toolError(e.message)))
    )
  }
  const mcp = findMcpTool(mcpServers(input), call.name)
  if (mcp !== undefined) {
    const server = yield* Effect.result(resolveMcpServer(mcp.server, interpolator(input)))
    if (server._tag === "Failure") return toolError(server.failure.message)
    return fromOutcome(yield* callMcpTool(server.success, mcp.tool, call.params))
  }
  return toolError(`Unknown tool ${call.name}`)
})

/** The media a question is about: a message of the run's number by id, or a URL. */
const fileOf = Effect.fnUntraced(function*(input: StepInput, p: Item) {
  const url = toolTexts(p).url
  if (url !== undefined) {
    if (!URL.canParse(url)) return Option.none<Prompt.FilePart>()
    return Option.some(Prompt.makePart("file", { mediaType: "application/octet-stream", data: new URL(url) }))
  }
  const messageId = toolTexts(p).message_id
  const e = input.execution
  if (messageId === undefined || e.msg_config_id === null) return Option.none<Prompt.FilePart>()
  const messaging = yield* Messaging
  const config = yield* messaging.findNumber(e.project_id, e.msg_config_id)
  if (Option.isNone(config)) return Option.none<Prompt.FilePart>()
  const message = yield* Effect.option(messaging.getMessage(e.project_id, config.value.phone_number_id, messageId))
  if (Option.isNone(message) || message.value.media === null) return Option.none<Prompt.FilePart>()
  const stored = yield* messaging.findMedia(e.project_id, message.value.media.id)
  return Option.map(stored, (m) => Prompt.makePart("file", { mediaType: m.content_type, fileName: m.filename, data: m.bytes }))
})

/** `ask_about_file`: the node's model answers the question with the file attached. */
const askAboutFile = Effect.fnUntraced(function*(input: StepInput, p: Item) {
  const question = toolTexts(p).question
  if (question === undefined) return toolError("question is required")
  const file = yield* fileOf(input, p)
  if (Option.isNone(file)) return toolError("No media found: give the id of a message holding media in this conversation, or a URL")
  const model = yield* nodeModel(input.node.data.config)
  const prompt = Prompt.make([{ role: "user", content: [Prompt.makePart("text", { text: question }), file.value] }])
  const answer = yield* Effect.result(generateText(model, callSettings(model, { temperature: 0 }), prompt))
  return answer._tag === "Success"
    ? { result: { answer: answer.success }, isError: false } satisfies ToolAnswer
    : toolError(modelFailure(model, answer.failure))
})

/** Names the node may emit (`default_tool_configs.emit_event.event_definition_ids`); None allows every active one. */
const allowedEvents = Effect.fnUntraced(function*(input: StepInput) {
  const configs = input.node.data.config.default_tool_configs
  const emit = Predicate.isObject(configs) ? (configs as Item).emit_event : undefined
  const ids = Predicate.isObject(emit) ? (emit as Item).event_definition_ids : undefined
  if (!Array.isArray(ids) || ids.length === 0) return Option.none<ReadonlyArray<string>>()
  const events = yield* Events
  const names: Array<string> = []
  for (const id of ids) {
    if (!Predicate.isString(id)) continue
    const found = yield* events.findDefinition(input.execution.project_id, id)
    if (Option.isSome(found)) names.push(found.value.name)
  }
  return Option.some(names)
})

/**
 * The MCP servers' tools, listed once when the activation begins (a resumed activation offers the same ones). A
 * server that cannot be reached offers none this activation; the log says why.
 */
const listMcp = Effect.fnUntraced(function*(input: StepInput, state: AgentState) {
  const entries: Array<McpToolEntry> = []
  const events: Array<EventDraft> = []
  for (const config of mcpServers(input)) {
    const server = yield* Effect.result(resolveMcpServer(config, interpolator(input)))
    const listed = server._tag === "Failure"
      ? { _tag: "Failure" as const, failure: { message: server.failure.message } }
      : yield* Effect.result((yield* McpServers).listTools(server.success))
    if (listed._tag === "Failure") {
      events.push({ event_type: "action_failed", payload: { action: "mcp_list_tools", server: config.name, error: { message: listed.failure.message } } })
      continue
    }
    for (const tool of listed.success) {
      entries.push({
        server: config.name,
        tool: tool.name,
        exposed: mcpToolName(config.name, tool.name),
        description: tool.description ?? `${tool.name} of ${config.name}`,
        input_schema: tool.inputSchema
      })
    }
  }
  return { state: { ...state, mcp_tools: entries }, events }
})

export const customTools = { specs, direct, askAboutFile, allowedEvents, listMcp }
