/**
 * The embedding entry point in process (memory ports): the prefix taken off requests and put into the URLs Parley
 * hands out, parts left unmounted, the application's own logger, `runPromise` over the services, and a stop that
 * refuses new requests.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids, Projects, unsupportedNode } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Effect, Layer, Logger } from "effect"
import { makeParley } from "../src/index.ts"
import { BasePathError, normalizeBasePath, stripBasePath } from "../src/embed/Mount.ts"

const KEY = "pk_embed_in_process_0123456789"

describe("makeParley (memory ports)", () => {
  it("serves under its prefix, hands out prefixed URLs, leaves out unmounted parts, and stops", async () => {
    const logged: Array<string> = []
    const parley = await makeParley({
      publicUrl: "http://app.example/",
      basePath: "parley/",
      storage: { ports: Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer) },
      apiKey: KEY,
      logger: Logger.make(({ message }) => void logged.push(String(message))),
      mount: { mcp: false, sandbox: false },
      models: [{ name: "local-llama", provider: "ollama", model: "llama3.1", base_url: "http://127.0.0.1:11434/v1", api_key_env: null }]
    })
    const call = (path: string, init: RequestInit = {}) =>
      parley.fetch(new Request(`http://app.example${path}`, {
        ...init,
        headers: { "x-api-key": KEY, ...(init.body !== undefined ? { "content-type": "application/json" } : {}), ...init.headers }
      }))
    try {
      assert.strictEqual(parley.basePath, "/parley")
      assert.strictEqual(parley.url, "http://app.example/parley")
      assert.strictEqual(parley.apiKey, KEY)
      assert.isUndefined(parley.createdApiKey, "a configured key is not a created one")

      for (const name of ["One", "Two"]) {
        const created = await call("/parley/platform/v1/workflows", { method: "POST", body: JSON.stringify({ workflow: { name } }) })
        assert.strictEqual(created.status, 201)
      }
      const list = await (await call("/parley/platform/v1/workflows?limit=1")).json() as { paging: { next: string } }
      assert.match(list.paging.next, /^http:\/\/app\.example\/parley\/platform\/v1\/workflows\?limit=1&after=/)
      // A framework that took the prefix off already (Hono's mount) reaches the same routes.
      assert.strictEqual((await call("/platform/v1/workflows")).status, 200)
      const document = await (await call("/parley/openapi.json")).json() as { servers: unknown }
      assert.deepStrictEqual(document.servers, [{ url: "http://app.example/parley" }])

      // Unmounted parts answer Parley's 404; the others stay.
      for (const [path, init] of [["/parley/mcp", { method: "POST", body: "{}" }], ["/parley/sandbox/outbox?phone_number_id=1", {}]] as const) {
        const refused = await call(path, init)
        assert.deepStrictEqual([refused.status, await refused.json()], [404, { error: "Not found" }], path)
      }
      assert.strictEqual((await call("/parley/docs")).status, 200)

      // Declared models beside the simulator's.
      const models = await (await call("/parley/platform/v1/provider_models")).json() as { data: Array<{ name: string }> }
      assert.includeMembers(models.data.map((m) => m.name), ["local-llama", "parley-sim"])

      // The services, without memo maps: the default project the bootstrap made holds the key.
      const projects = await parley.runPromise(Effect.flatMap(Effect.service(Projects), (p) => p.list))
      assert.deepStrictEqual(projects.map((p) => p.id), [parley.project.id])
      assert.isAbove(logged.length, 0, "the application's logger gets Parley's entries")
    } finally {
      await parley.dispose()
    }
    const after = await call("/parley/platform/v1/workflows")
    assert.deepStrictEqual([after.status, after.headers.get("retry-after")], [503, "1"])
  })

  it("serves the workflow viewer under its prefix: the embed's URL, the page, its assets and its API carry it", async () => {
    const parley = await makeParley({
      publicUrl: "http://app.example",
      basePath: "/apps/parley",
      storage: { ports: Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer) },
      apiKey: KEY
    })
    const unmounted = await makeParley({
      publicUrl: "http://app.example",
      basePath: "/apps/parley",
      storage: { ports: Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer) },
      apiKey: KEY,
      mount: { viewer: false }
    })
    const call = (target: typeof parley, path: string, init: RequestInit = {}) =>
      target.fetch(new Request(new URL(path, "http://app.example"), {
        ...init,
        headers: { "x-api-key": KEY, ...(init.body !== undefined ? { "content-type": "application/json" } : {}), ...init.headers }
      }))
    try {
      const created = await call(parley, "/apps/parley/platform/v1/workflow_embeds", {
        method: "POST",
        body: JSON.stringify({ workflow_embed: { scope_type: "project" } })
      })
      assert.strictEqual(created.status, 201)
      const { embed_url, token } = (await created.json() as { data: { embed_url: string; token: string } }).data
      assert.strictEqual(embed_url, `http://app.example/apps/parley/viewer/${token}`)
      const page = await call(parley, embed_url)
      assert.strictEqual(page.status, 200)
      const assets = [...(await page.text()).matchAll(/(?:href|src)="(assets\/[^"]+)"/g)].map((m) => new URL(m[1]!, embed_url))
      assert.strictEqual(assets.length, 2)
      for (const asset of assets) {
        assert.match(asset.pathname, /^\/apps\/parley\/viewer\/assets\//)
        assert.strictEqual((await call(parley, asset.toString())).status, 200, asset.pathname)
      }
      const session = await call(parley, "/apps/parley/viewer/v1/session", { headers: { "x-viewer-token": token } })
      assert.strictEqual(session.status, 200)
      // Left unmounted, the viewer's page and API answer Parley's 404.
      assert.strictEqual((await call(unmounted, `/apps/parley/viewer/${token}`)).status, 404)
      assert.strictEqual((await call(unmounted, "/apps/parley/viewer/v1/session", { headers: { "x-viewer-token": token } })).status, 404)
    } finally {
      await parley.dispose()
      await unmounted.dispose()
    }
  })

  it("normalizes its prefix and refuses one that names no stable place", () => {
    assert.strictEqual(normalizeBasePath(undefined), "")
    assert.strictEqual(normalizeBasePath("/"), "")
    assert.strictEqual(normalizeBasePath("/a/b/"), "/a/b")
    for (const bad of ["/a/../b", "/a?x", "/a//b"]) assert.throws(() => normalizeBasePath(bad), BasePathError)
    assert.strictEqual(stripBasePath("/parley", "/parley"), "/")
    assert.strictEqual(stripBasePath("/parley", "/parley?x=1"), "/?x=1")
    assert.strictEqual(stripBasePath("/parley", "/parley/docs"), "/docs")
    assert.strictEqual(stripBasePath("/parley", "/parleyx"), "/parleyx")
  })

  it("names the Node versions it cannot run on", () => {
    assert.strictEqual(unsupportedNode("20.20.2"), "Parley needs Node.js 22.19 or later; this is 20.20.2")
    assert.strictEqual(unsupportedNode("22.18.0"), "Parley needs Node.js 22.19 or later; this is 22.18.0")
    assert.isUndefined(unsupportedNode("22.19.0"))
    assert.isUndefined(unsupportedNode("24.21.0"))
  })
})
