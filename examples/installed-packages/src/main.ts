/**
 * A program outside the workspace: Parley embedded in a plain `node:http`
 * server (memory ports), called through `@parley/client`. Its test installs
 * the packed tarballs into a fresh project, type-checks this file there and
 * runs it, so what ships is what is tested.
 */
import { createParleyClient } from "@parley/client"
import { Ids, Projects } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { makeNodeHandler } from "@parley/http-node"
import { Effect, Layer, ManagedRuntime } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

const ports = Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)
// One memo map: the handler and the bootstrap below share the same memory store.
const memoMap = Effect.runSync(Layer.makeMemoMap)
const server = createServer()
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
const parley = await makeNodeHandler({ publicUrl: url, ports, memoMap })
server.on("request", (request, response) => parley.handler(request, response))

const key = "pk_installed_0123456789abcdef"
const runtime = ManagedRuntime.make(Projects.layer.pipe(Layer.provideMerge(ports)), { memoMap })
await runtime.runPromise(Effect.gen(function*() {
  const projects = yield* Projects
  const project = yield* projects.create("Installed")
  yield* projects.createKey(project.id, "example", key)
}))

const client = createParleyClient({ baseUrl: url, apiKey: key })
try {
  const created = await client.workflows.create({ payload: { workflow: { name: "From a tarball" } } })
  const listed = await client.workflows.list({ query: {} })
  console.log(JSON.stringify({ created: created.data.name, listed: listed.body.data.map((w) => w.name) }))
} finally {
  await client.close()
  await parley.dispose()
  await runtime.dispose()
  server.close()
}
