/**
 * An existing `node:http` application that mounts Parley under the same
 * server: Parley's paths (`/platform/`, `/api/`, `/openapi.json`, `/docs`) go
 * to Parley's Node handler, everything else stays the application's.
 *
 * Storage is the standalone host's: Postgres from `DATABASE_URL`, or an
 * embedded one in `PARLEY_DATA_DIR` (default `./.parley`). With
 * `PARLEY_STORAGE=memory` it runs on memory ports instead (nothing persists).
 *
 *   PORT=3000 npm start      then open http://127.0.0.1:3000/ and /docs
 */
import { Ids, Projects } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { type HostPorts, layerPorts, makeNodeHandler } from "@parley/http-node"
import { Layer, ManagedRuntime } from "effect"
import { createServer } from "node:http"

const port = Number(process.env.PORT ?? 3000)
const publicUrl = process.env.PARLEY_PUBLIC_URL ?? `http://127.0.0.1:${port}`
const apiKey = process.env.PARLEY_API_KEY ?? "pk_embedded_demo_key_0123456789"

const ports: Layer.Layer<HostPorts, unknown> = process.env.PARLEY_STORAGE === "memory"
  ? Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)
  : Layer.mergeAll(layerPorts, Ids.layer)
// One memo map for every runtime below: the ports are built once and shared
// (the same database pool, or the same memory store).
const memoMap = Layer.makeMemoMapUnsafe()

const parley = await makeNodeHandler({ publicUrl, ports, memoMap })

// Like the standalone host's first start: make sure a project exists and that the key is one of its keys.
const admin = ManagedRuntime.make(Projects.layer.pipe(Layer.provide(ports)), { memoMap })
await admin.runPromise(Projects.use((projects) => projects.bootstrap(apiKey)))

const isParleyPath = (path: string) =>
  path.startsWith("/platform/") || path.startsWith("/api/") || path === "/openapi.json" ||
  path === "/docs" || path.startsWith("/docs/")

const page = `<!doctype html>
<title>Acme support</title>
<h1>Acme support</h1>
<p>This page belongs to the application. Parley lives beside it:</p>
<ul>
  <li><a href="/docs">API docs</a></li>
  <li><a href="/openapi.json">OpenAPI</a></li>
</ul>`

const server = createServer((request, response) => {
  const path = new URL(request.url ?? "/", "http://localhost").pathname
  if (isParleyPath(path)) return parley.handler(request, response)
  if (path === "/") {
    response.writeHead(200, { "content-type": "text/html; charset=utf-8" })
    return response.end(page)
  }
  response.writeHead(404, { "content-type": "text/plain" })
  response.end("Not found (the application's own 404)")
})

server.listen(port, "127.0.0.1", () => {
  console.log(`Application on ${publicUrl}/  ·  Parley on ${publicUrl}/platform/v1  ·  docs ${publicUrl}/docs`)
  console.log(`API key: ${apiKey}`)
})

// Stop taking requests, then release in reverse order of creation: the ports go last.
const shutdown = () => {
  server.close()
  void admin.dispose().then(() => parley.dispose()).then(() => process.exit(0))
}
process.once("SIGINT", shutdown)
process.once("SIGTERM", shutdown)
