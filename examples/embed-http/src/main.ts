/**
 * An existing `node:http` application with Parley mounted under `/parley`: the application keeps its own page and
 * its own 404; every part of Parley (Platform API, older surface, proxy, sandbox, health, setup and inbox pages,
 * MCP, docs, OpenAPI) answers under the prefix, and the URLs Parley hands out carry it.
 *
 *   PORT=3000 PARLEY_API_KEY=pk_... npm start --prefix examples/embed-http
 *
 * Storage: `DATABASE_URL` when set, else an embedded PostgreSQL in `PARLEY_DATA_DIR` (default `./.parley`).
 */
import { makeParley } from "@parley/http-node"
import { createServer } from "node:http"

const port = Number(process.env.PORT ?? 3000)
const publicUrl = process.env.PUBLIC_URL ?? `http://127.0.0.1:${port}`
const databaseUrl = process.env.DATABASE_URL

const parley = await makeParley({
  publicUrl,
  basePath: "/parley",
  storage: databaseUrl ? { databaseUrl } : { dataDir: process.env.PARLEY_DATA_DIR ?? "./.parley" },
  apiKey: process.env.PARLEY_API_KEY || undefined,
  network: { mode: "simulator" }
})

const page = `<!doctype html>
<title>Acme support</title>
<h1>Acme support</h1>
<p>This page belongs to the application. Parley lives beside it:</p>
<ul>
  <li><a href="/parley/docs">API docs</a></li>
  <li><a href="/parley/openapi.json">OpenAPI</a></li>
</ul>`

const server = createServer((request, response) => {
  const path = new URL(request.url ?? "/", "http://localhost").pathname
  if (path === "/parley" || path.startsWith("/parley/")) return parley.handler(request, response)
  if (path === "/") {
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" })
    return response.end(page)
  }
  response.writeHead(404, { "content-type": "text/plain" })
  response.end("Not found (the application's own 404)")
})

// Listens once Parley is ready: no request ever reaches a Parley still starting.
server.listen(port, "127.0.0.1", () => {
  console.log(`Application on ${publicUrl}/  ·  Parley on ${parley.url}/platform/v1  ·  docs ${parley.url}/docs`)
  if (parley.createdApiKey !== undefined) console.log(`API key (shown once): ${parley.createdApiKey}`)
})

// Stop taking requests, let those in flight finish, then stop Parley (its workers, its database).
const shutdown = () => {
  server.close()
  server.closeIdleConnections()
  void parley.dispose().then(() => process.exit(0))
}
process.once("SIGINT", shutdown)
process.once("SIGTERM", shutdown)
