/**
 * The MCP tool server at `/mcp` (decisions 4.12): streamable HTTP through effect's `McpServer`, one MCP tool per
 * `Tool` below. Every tool takes `{ action, params }`; `help` lists its actions with their params' JSON Schema.
 * Results are JSON text; failures set `isError` with `{ "error" }` text. The host authenticates the key before
 * the session and provides `McpCaller` to every request (see `http-node` `Host.ts`).
 */
import { Context, Effect, Layer, Option, Predicate } from "effect"
import { McpProtocol, McpSchema, McpServer } from "effect/ai"
import { type Action, type ActionServices, McpCaller, type Tool, ToolFailure } from "./Action.ts"
import { Status } from "./tools/Status.ts"
import { SearchDocs } from "./tools/SearchDocs.ts"
import { Customers } from "./tools/Customers.ts"
import { SetupLinks } from "./tools/SetupLinks.ts"
import { MsgNumbers } from "./tools/MsgNumbers.ts"
import { MsgConversations } from "./tools/MsgConversations.ts"
import { MsgMessages } from "./tools/MsgMessages.ts"
import { MsgTemplates } from "./tools/MsgTemplates.ts"
import { Webhooks } from "./tools/Webhooks.ts"
import { Workflows } from "./tools/Workflows.ts"
import { WorkflowEmbeds } from "./tools/WorkflowEmbeds.ts"
import { Functions } from "./tools/Functions.ts"
import { Events } from "./tools/Events.ts"
import { Logs } from "./tools/Logs.ts"
import { Diagnostics } from "./tools/Diagnostics.ts"
import { Guardrails } from "./tools/Guardrails.ts"

/** Every tool the server lists, in this order. A new tool is a module declaring its actions, added here. */
export const tools: ReadonlyArray<Tool> = [
  Status,
  SearchDocs,
  Customers,
  SetupLinks,
  MsgNumbers,
  MsgConversations,
  MsgMessages,
  MsgTemplates,
  Webhooks,
  Workflows,
  WorkflowEmbeds,
  Functions,
  Events,
  Logs,
  Diagnostics,
  Guardrails
]

const HELP = "help"

/** A tool with one action runs it when `action` is left out (`status`, `search_docs`). */
const defaultAction = (tool: Tool): Action | undefined => tool.actions.length === 1 ? tool.actions[0] : undefined

const inputSchemaOf = (tool: Tool) => ({
  type: "object" as const,
  properties: {
    action: { type: "string", enum: [HELP, ...tool.actions.map((a) => a.name)], description: "What to do; `help` lists the actions and their params" },
    params: { type: "object", description: "The action's parameters (see `help`)" }
  },
  ...(defaultAction(tool) === undefined ? { required: ["action"] } : {})
})

const text = (value: unknown) => [{ type: "text" as const, text: JSON.stringify(value) }]

/** Runs one call of `tool`: `help`, an action, or a tool error naming what was wrong. */
export const runTool = (tool: Tool, payload: unknown): Effect.Effect<unknown, ToolFailure, ActionServices> =>
  Effect.gen(function*() {
    const name = Predicate.hasProperty(payload, "action") ? payload.action : undefined
    const params = Predicate.hasProperty(payload, "params") ? payload.params : undefined
    if (params !== undefined && params !== null && !(Predicate.isObject(params) && !Array.isArray(params))) {
      return yield* new ToolFailure({ error: "params must be an object" })
    }
    if (name === HELP) {
      return tool.actions.map((a) => ({ action: a.name, description: a.description, params: a.params }))
    }
    const chosen = name === undefined ? defaultAction(tool) : tool.actions.find((a) => a.name === name)
    if (chosen === undefined) {
      const known = [HELP, ...tool.actions.map((a) => a.name)].join(", ")
      return yield* new ToolFailure({
        error: name === undefined ? `action is required (one of ${known})` : `Unknown action ${JSON.stringify(name)} (one of ${known})`
      })
    }
    return yield* chosen.run((params ?? {}) as Record<string, unknown>)
  })

/** Registers every tool with the server; the handlers run with the request's `McpCaller` (the host provides it). */
const registrations = Layer.effectDiscard(Effect.gen(function*() {
  const server = yield* McpServer.McpServer
  const services = yield* Effect.context<Exclude<ActionServices, McpCaller>>()
  for (const tool of tools) {
    yield* server.addTool({
      tool: new McpSchema.Tool({ name: tool.name, description: tool.description, inputSchema: inputSchemaOf(tool) }),
      annotations: Context.empty(),
      handle: (payload) =>
        // `McpCaller` comes with the request (the host's route middleware); without one nothing runs.
        Effect.serviceOption(McpCaller).pipe(
          Effect.flatMap(Option.match({
            onNone: () => Effect.fail(new ToolFailure({ error: "Invalid API key" })),
            onSome: (caller) => runTool(tool, payload).pipe(Effect.provideService(McpCaller, caller))
          })),
          Effect.provide(services),
          Effect.map((result) => new McpSchema.CallToolResult({ content: text(result) })),
          Effect.catchTag("ToolFailure", (failure) =>
            Effect.succeed(new McpSchema.CallToolResult({ isError: true, content: text({ error: failure.error }) })))
        )
    })
  }
}))

/** The MCP route: streamable HTTP at `/mcp`, sessions of the protocol versions current clients speak. */
export const layerHttp = McpServer.layerHttp({
  name: "parley",
  version: "0.1.0",
  path: "/mcp",
  protocols: [McpProtocol.v2025_11_25, McpProtocol.v2025_06_18, McpProtocol.v2025_03_26],
  allowSessionTermination: true,
  registrations
})
