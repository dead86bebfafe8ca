/**
 * A Hono application with Parley mounted under `/parley` through its web-standard handler: the application keeps its
 * own routes and 404; every part of Parley answers under the prefix, and the URLs Parley hands out carry it.
 *
 *   PORT=3000 PARLEY_API_KEY=pk_... npm start --prefix examples/embed-hono
 *
 * Storage: `DATABASE_URL` when set, else an embedded PostgreSQL in `PARLEY_DATA_DIR` (default `./.parley`).
 */
import { serve } from "@hono/node-server"
import { makeParley } from "@parley/http-node"
import { Hono } from "hono"
import { mount } from "hono/mount"

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

const app = new Hono()
app.get("/", (c) =>
  c.html(`<!doctype html>
<title>Acme support</title>
<h1>Acme support</h1>
<p>This page belongs to the application (Hono). Parley lives beside it:</p>
<ul>
  <li><a href="/parley/docs">API docs</a></li>
  <li><a href="/parley/openapi.json">OpenAPI</a></li>
</ul>`))
// Hono's mount takes the prefix off before Parley sees the request; Parley accepts it either way.
app.all("/parley/*", mount(parley.fetch))
app.notFound((c) => c.text("Not found (the application's own 404)", 404))

// Listens once Parley is ready: no request ever reaches a Parley still starting.
const server = serve({ fetch: app.fetch, port, hostname: "127.0.0.1" }, () => {
  console.log(`Application on ${publicUrl}/  ·  Parley on ${parley.url}/platform/v1  ·  docs ${parley.url}/docs`)
  if (parley.createdApiKey !== undefined) console.log(`API key (shown once): ${parley.createdApiKey}`)
})

// Stop taking requests, let those in flight finish, then stop Parley (its workers, its database).
const shutdown = () => {
  server.close()
  void parley.dispose().then(() => process.exit(0))
}
process.once("SIGINT", shutdown)
process.once("SIGTERM", shutdown)
