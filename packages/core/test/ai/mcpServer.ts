/**
 * Test support: a real MCP server (the official SDK's `McpServer` over its
 * streamable HTTP transport, stateful sessions, SSE answers) on a loopback
 * port, wanting `Authorization: Bearer <TOKEN>`. Its `orders` tools:
 * `lookup_order` (A1 is shipped; any other id is a tool error) and
 * `echo_headers`.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as z from "zod"

export const TOKEN = "mcp-t0ken"

const makeServer = () => {
  const server = new McpServer({ name: "orders", version: "1.0.0" })
  server.registerTool("lookup_order", {
    description: "Finds an order by id",
    inputSchema: { order_id: z.string() }
  }, ({ order_id }) => ({
    content: order_id === "A1"
      ? [{ type: "text", text: "Order A1: shipped" }, { type: "image", data: Buffer.from("png!").toString("base64"), mimeType: "image/png" }]
      : [{ type: "text", text: `No order ${order_id}` }],
    isError: order_id !== "A1"
  }))
  server.registerTool("echo_headers", { description: "" }, () => ({ content: [{ type: "text", text: "ok" }] }))
  return server
}

export const closeServer = (server: Http.Server) =>
  Effect.callback<void>((resume) => {
    server.close(() => resume(Effect.void))
    server.closeAllConnections()
  })

/** A stateful streamable HTTP endpoint at `/mcp` that wants `Authorization: Bearer <TOKEN>`; `requests` keeps each one's headers. */
export const startServer = Effect.acquireRelease(
  Effect.callback<{ readonly url: string; readonly server: Http.Server; readonly requests: Array<Http.IncomingHttpHeaders> }>((resume) => {
    const sessions = new Map<string, StreamableHTTPServerTransport>()
    const requests: Array<Http.IncomingHttpHeaders> = []
    const handle = async (req: Http.IncomingMessage, res: Http.ServerResponse) => {
      requests.push(req.headers)
      if (req.headers.authorization !== `Bearer ${TOKEN}`) {
        res.writeHead(401, { "content-type": "application/json" }).end("{\"error\":\"unauthorized\"}")
        return
      }
      const chunks: Array<Buffer> = []
      for await (const chunk of req) chunks.push(chunk as Buffer)
      const body = chunks.length === 0 ? undefined : JSON.parse(Buffer.concat(chunks).toString("utf8"))
      const sessionId = req.headers["mcp-session-id"]
      let transport = typeof sessionId === "string" ? sessions.get(sessionId) : undefined
      if (transport === undefined && req.method === "POST" && isInitializeRequest(body)) {
        const created = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => Crypto.randomUUID(),
          onsessioninitialized: (id) => void sessions.set(id, created)
        })
        created.onclose = () => void (created.sessionId !== undefined && sessions.delete(created.sessionId))
        await makeServer().connect(created)
        transport = created
      }
      if (transport === undefined) {
        res.writeHead(404).end()
        return
      }
      await transport.handleRequest(req, res, body)
    }
    const server = Http.createServer((req, res) => void handle(req, res).catch(() => res.writeHead(500).end()))
    server.listen(0, "127.0.0.1", () =>
      resume(Effect.succeed({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, server, requests })))
  }),
  ({ server }) => closeServer(server)
)

