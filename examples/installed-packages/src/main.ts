/**
 * A program outside the workspace: Parley embedded in a plain `node:http`
 * server with `makeParley` (memory ports), called through `@parley/client`. Its test installs
 * the packed tarballs into a fresh project, type-checks this file there and
 * runs it, so what ships is what is tested.
 */
import { createParleyClient } from "@parley/client"
import { Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { makeParley } from "@parley/http-node"
import { Layer } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

const server = createServer()
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
const key = "pk_installed_0123456789abcdef"
// Memory ports: nothing persists, no database to start (a test's choice; production leaves `storage` to the default).
const parley = await makeParley({
  publicUrl: url,
  apiKey: key,
  storage: { ports: Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer) },
  logger: "none"
})
server.on("request", parley.handler)

const client = createParleyClient({ baseUrl: url, apiKey: key })
try {
  const created = await client.workflows.create({ payload: { workflow: { name: "From a tarball" } } })
  const listed = await client.workflows.list({ query: {} })
  console.log(JSON.stringify({ created: created.data.name, listed: listed.body.data.map((w) => w.name) }))
} finally {
  await client.close()
  server.close()
  await parley.dispose()
}
