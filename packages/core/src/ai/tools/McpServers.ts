/**
 * MCP servers of the agent node (decisions 2.3.9 `flow_agent_mcp_servers`): their tools, listed and called over
 * streamable HTTP with effect's own `McpClient` (protocol 2025-11-25, the newest the official SDK serves), each
 * with the server's headers. The model sees a server's tools as `<server name>__<tool name>` (`mcpToolName`).
 *
 * Each operation opens its own session and closes it: an agent's tool calls are minutes apart and must survive a
 * restart, so a kept session would buy nothing. Addresses follow the webhook rule: private and loopback targets
 * are refused unless the operator allows them (`WebhookSettings`).
 */
import { Context, Duration, Effect, Layer, Predicate, Schema } from "effect"
import { McpClient, type McpClientError, McpProtocol, type McpSchema } from "effect/ai"
import { FetchHttpClient, HttpClient } from "effect/http"
import { WebhookHttp } from "../../ports/WebhookHttp.ts"
import { isPrivateAddress } from "../../shared/PrivateAddress.ts"
import { WebhookSettings } from "../../shared/OutboundSettings.ts"
import { cutToolResult, type Interpolate, TOOL_TIMEOUT_MS, type ToolOutcome } from "../../shared/ToolResult.ts"

/** One entry of `flow_agent_mcp_servers`, its headers already interpolated by the caller. */
export interface McpServerConfig {
  readonly name: string
  readonly url: string
  readonly headers?: Readonly<Record<string, string>> | null | undefined
}

export interface McpToolInfo {
  readonly name: string
  readonly description: string
  /** The tool's JSON Schema for its arguments, as the server gave it. */
  readonly inputSchema: Readonly<Record<string, unknown>>
}

export interface McpCallResult {
  /** The server said the tool failed; `content` says how. */
  readonly isError: boolean
  /** The text parts joined by blank lines; other parts described in brackets. */
  readonly content: string
}

/** The server could not be used: what was being done, and why. */
export class McpServerError extends Schema.TaggedError<McpServerError>()("McpServerError", {
  server: Schema.String,
  operation: Schema.Literals(["connect", "list_tools", "call_tool"]),
  message: Schema.String
}) {}

/** One entry of `flow_agent_mcp_servers`, as stored in the node's configuration. */
export interface McpServerToolConfig {
  readonly name: string
  readonly description?: string | null | undefined
  readonly url: string
  readonly headers?: Readonly<Record<string, unknown>> | null | undefined
}

/** The name the model calls a server's tool by. */
export const mcpToolName = (server: string, tool: string): string => `${server}__${tool}`

/** The server and tool behind a name the model called (`<server>__<tool>`), among the node's servers. */
export const findMcpTool = <S extends { readonly name: string }>(
  servers: ReadonlyArray<S>,
  exposedName: string
): { readonly server: S; readonly tool: string } | undefined => {
  // The longest matching server name wins: `a__b` and `a` both prefix `a__b__c`, and only `a__b`'s tool is `c`.
  const server = servers
    .filter((s) => exposedName.startsWith(`${s.name}__`) && exposedName.length > s.name.length + 2)
    .sort((a, b) => b.name.length - a.name.length)[0]
  return server === undefined ? undefined : { server, tool: exposedName.slice(server.name.length + 2) }
}

/** The node's server entry with its url and header values interpolated. */
export const resolveMcpServer = <E, R>(
  config: McpServerToolConfig,
  interpolate: Interpolate<E, R>
): Effect.Effect<McpServerConfig, E, R> =>
  Effect.gen(function*() {
    const url = yield* interpolate(config.url)
    const headers: Record<string, string> = {}
    for (const [name, template] of Object.entries(config.headers ?? {})) {
      const value = yield* interpolate(template)
      if (value !== null && value !== undefined) headers[name] = Predicate.isString(value) ? value : JSON.stringify(value)
    }
    return { name: config.name, url: Predicate.isString(url) ? url.trim() : String(url), headers }
  })

/** One MCP tool call as the model sees it: the server's failures and the tool's own are tool errors. */
export const callMcpTool = (
  server: McpServerConfig,
  toolName: string,
  args: unknown
): Effect.Effect<ToolOutcome, never, McpServers> =>
  McpServers.use((servers) => servers.callTool(server, toolName, args)).pipe(
    Effect.map((result): ToolOutcome =>
      result.isError
        ? { ok: false, result: { error: cutToolResult(result.content) } }
        : { ok: true, result: cutToolResult(result.content) }
    ),
    Effect.catchTag("McpServerError", (e) =>
      Effect.succeed<ToolOutcome>({
        ok: false,
        result: { error: `MCP server ${e.server} failed (${e.operation}): ${e.message}` }
      }))
  )

/** How a non-text part of a tool result reads to the model. */
const describePart = (part: McpSchema.CallToolResult["content"][number]): string => {
  switch (part.type) {
    case "text":
      return part.text
    case "image":
      return `[image: ${part.mimeType}, ${part.data.byteLength} bytes]`
    case "audio":
      return `[audio: ${part.mimeType}, ${part.data.byteLength} bytes]`
    case "resource":
      return "text" in part.resource ? part.resource.text : `[resource: ${part.resource.uri}]`
    case "resource_link":
      return `[resource link: ${part.uri} (${part.name})]`
  }
}

/** The client's failure, with the underlying cause of a transport failure (connection refused, DNS). */
const describe = (error: McpClientError.McpClientError): string => {
  const reason = error.reason
  let cause = reason._tag === "TransportError" ? reason.cause : undefined
  // The root cause says what happened (`connect ECONNREFUSED ...`); the layers above say "fetch failed".
  while (Predicate.isError(cause) && Predicate.isError(cause.cause)) cause = cause.cause
  return Predicate.isError(cause) && cause.message !== "" ? `${error.message}: ${cause.message}` : error.message
}

/** The result's text; a result with only structured content reads as its JSON. */
const resultText = (result: McpSchema.CallToolResult): string =>
  result.content.length === 0 && result.structuredContent !== undefined
    ? JSON.stringify(result.structuredContent)
    : result.content.map(describePart).join("\n\n")

export class McpServers extends Context.Service<McpServers, {
  readonly listTools: (server: McpServerConfig) => Effect.Effect<ReadonlyArray<McpToolInfo>, McpServerError>
  /** Calls one tool by its own name (not the `<server>__` one); a tool that reports failure is `isError`, not an error. */
  readonly callTool: (server: McpServerConfig, toolName: string, args: unknown) => Effect.Effect<McpCallResult, McpServerError>
}>()("@parley/core/ai/tools/McpServers") {
  /** Over the `HttpClient` in context; `WebhookHttp.resolve` for the address check. */
  static readonly layer = Layer.effect(
    McpServers,
    Effect.gen(function*() {
      const httpClient = yield* HttpClient.HttpClient
      const http = yield* WebhookHttp
      const settings = yield* WebhookSettings
      const timeout = Duration.millis(TOOL_TIMEOUT_MS)

      const refuse = (server: McpServerConfig, operation: McpServerError["operation"], message: string) =>
        new McpServerError({ server: server.name, operation, message })

      /** Refuses what the webhook rule refuses: a non-http URL, and private addresses unless allowed. */
      const checkAddress = Effect.fnUntraced(function*(server: McpServerConfig) {
        const url = URL.canParse(server.url) ? new URL(server.url) : undefined
        if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:")) {
          // The URL itself stays out of the message: interpolated, it may hold a secret.
          return yield* refuse(server, "connect", "url is not an http or https URL")
        }
        if (!settings.allowPrivateUrls) {
          const addresses = yield* http.resolve(url.hostname).pipe(Effect.mapError((e) => refuse(server, "connect", e.message)))
          if (addresses.some(isPrivateAddress)) {
            return yield* refuse(server, "connect", `${url.hostname} resolves to a private address`)
          }
        }
        return url
      })

      const run = <A>(
        server: McpServerConfig,
        operation: McpServerError["operation"],
        use: (client: McpClient.McpClient) => Effect.Effect<A, McpClientError.McpClientError | McpServerError>
      ): Effect.Effect<A, McpServerError> =>
        Effect.gen(function*() {
          const url = yield* checkAddress(server)
          const client = yield* McpClient.http({ url, protocol: McpProtocol.v2025_11_25, headers: server.headers ?? {} }).pipe(
            Effect.flatMap((transport) =>
              McpClient.make({ name: "parley", version: "1.0.0", timeout }).pipe(Effect.provideService(McpClient.Transport, transport))
            ),
            Effect.mapError((e) => refuse(server, "connect", describe(e)))
          )
          return yield* use(client).pipe(
            Effect.mapError((e) => e._tag === "McpServerError" ? e : refuse(server, operation, describe(e)))
          )
        }).pipe(
          Effect.scoped,
          Effect.provideService(HttpClient.HttpClient, httpClient),
          // A server that accepts the connection and never answers costs at most this long, whatever stage hangs.
          Effect.timeoutOrElse({
            duration: timeout,
            orElse: () => Effect.fail(refuse(server, operation, `Timed out after ${TOOL_TIMEOUT_MS / 1000} s`))
          })
        )

      return McpServers.of({
        listTools: (server) =>
          run(server, "list_tools", (client) =>
            Effect.map(client.listTools({ timeout }), (tools) =>
              tools.map((tool): McpToolInfo => ({
                name: tool.name,
                description: tool.description ?? tool.title ?? "",
                inputSchema: tool.inputSchema as Readonly<Record<string, unknown>>
              })))),
        callTool: (server, toolName, args) =>
          run(server, "call_tool", (client) =>
            Effect.gen(function*() {
              const tools = yield* client.listTools({ timeout })
              const tool = tools.find((t) => t.name === toolName)
              if (tool === undefined) return yield* refuse(server, "call_tool", `the server has no tool named ${toolName}`)
              if (args !== undefined && args !== null && !(Predicate.isObject(args) && !Array.isArray(args))) {
                return yield* refuse(server, "call_tool", "the arguments must be an object")
              }
              const result = yield* client.callTool({ tool, arguments: (args ?? {}) as Record<string, unknown> }, { timeout })
              return { isError: result.isError === true, content: resultText(result) }
            }))
      })
    })
  )

  /**
   * Over the global `fetch`: what the engine uses, so no host has to wire a client. The address check resolves the
   * name before `fetch` connects; a name re-pointed in between is the gap the webhook port closes and this does not.
   */
  static readonly layerFetch = McpServers.layer.pipe(Layer.provide(FetchHttpClient.layer))
}
