/** The Effect client and its Promise facade against a real host over HTTP (memory ports). */
import { assert, describe, it, layer } from "@effect/vitest"
import { Ids, NotFound, Unauthorized, Unprocessable } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Exit, Layer, Option, Redacted, Scope } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll } from "vitest"
import { startHost, type TestHost } from "../../http-node/test/support.ts"
import { createParleyClient, networkErrorOf, ParleyClient, ParleyError, type ParleyPromiseClient } from "../src/index.ts"

const ports = Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)

class Host extends Context.Service<Host, TestHost>()("test/Host") {
  static readonly layer = Layer.effect(Host, startHost(ports))
}

/** The client of project A, over the host in context. */
const withClient = <A, E, R>(effect: Effect.Effect<A, E, R>, apiKey?: string | Redacted.Redacted<string>) =>
  Effect.gen(function*() {
    const host = yield* Host
    return yield* effect.pipe(Effect.provide(ParleyClient.layer({ baseUrl: host.url, apiKey: apiKey ?? host.key })))
  })

const BAD_SLUG = "slug must match ^[a-z0-9]+(?:-[a-z0-9]+)*$ and be at most 100 characters"

layer(Host.layer, { excludeTestServices: true })("Effect client", (it) => {
  it.effect("creates, gets and lists workflows", () =>
    withClient(Effect.gen(function*() {
      const client = yield* ParleyClient
      const created = yield* client.workflows.create({ payload: { workflow: { name: "Effect Client Flow" } } })
      assert.strictEqual(created.data.name, "Effect Client Flow")
      assert.strictEqual(created.data.status, "draft")
      const got = yield* client.workflows.get({ params: { id: created.data.id } })
      assert.deepStrictEqual(got.data, created.data)
      const listed = yield* client.workflows.list({ query: { name_contains: "effect client", limit: "100" } })
      assert.deepStrictEqual(listed.body.data.map((w) => w.id), [created.data.id])
      assert.isTrue("paging" in listed.body)
    })))

  it.effect("activates a workflow through update and reads the older surface", () =>
    withClient(Effect.gen(function*() {
      const client = yield* ParleyClient
      const { data } = yield* client.workflows.create({ payload: { workflow: { name: "To Activate" } } })
      const updated = yield* client.workflows.update({
        params: { id: data.id },
        payload: { workflow: { status: "active", lock_version: data.lock_version } }
      })
      assert.strictEqual(updated.data.status, "active")
      const flows = yield* client.flows.list({ query: { "q[status_eq]": "active", per_page: "100" } })
      assert.isTrue(flows.body.data.some((f) => f.id === data.id))
      assert.strictEqual(flows.headers["x-page"], "1")
    }), Redacted.make("pk_test_project_a_0123456789abcdef")))

  it.effect("a 404 is NotFound carrying the server's message", () =>
    withClient(Effect.gen(function*() {
      const client = yield* ParleyClient
      const error = yield* Effect.flip(client.workflows.get({ params: { id: "00000000-0000-4000-8000-00000000dead" } }))
      assert.instanceOf(error, NotFound)
      assert.strictEqual(error._tag, "NotFound")
      if (error._tag === "NotFound") assert.strictEqual(error.error, "Workflow not found")
    })))

  it.effect("a 422 is Unprocessable with the server's message and details", () =>
    withClient(Effect.gen(function*() {
      const client = yield* ParleyClient
      const error = yield* Effect.flip(
        client.workflows.create({ payload: { workflow: { name: "Bad slug", slug: "Not A Slug!" } } })
      )
      assert.instanceOf(error, Unprocessable)
      if (error._tag === "Unprocessable") {
        assert.strictEqual(error.error, BAD_SLUG)
        assert.deepStrictEqual(error.details, [{ path: "workflow.slug", message: "is invalid" }])
      }
    })))

  it.effect("a proxy failure's network error object is read with networkErrorOf", () =>
    withClient(Effect.gen(function*() {
      const client = yield* ParleyClient
      const failure = yield* Effect.flip(client.proxy.send({
        params: { version: "v24.0", phone_number_id: "999999999999999" },
        payload: { messaging_product: "whatsapp", to: "15551234567", type: "text", text: { body: "Hello" } }
      }))
      const network = Option.getOrThrow(yield* networkErrorOf(failure))
      assert.strictEqual(network.code, 100)
      assert.match(network.message, /^\(#100\) Unsupported request - object with ID '999999999999999'/)
      assert.strictEqual(network.error_data?.details, "Object with ID '999999999999999' not found in this project")
      // Any other failure has none.
      const other = yield* Effect.flip(client.workflows.get({ params: { id: "00000000-0000-4000-8000-00000000dead" } }))
      assert.isTrue(Option.isNone(yield* networkErrorOf(other)))
    })))

  it.effect("a wrong key is Unauthorized", () =>
    withClient(
      Effect.gen(function*() {
        const client = yield* ParleyClient
        const error = yield* Effect.flip(client.workflows.list({ query: {} }))
        assert.instanceOf(error, Unauthorized)
        if (error._tag === "Unauthorized") assert.strictEqual(error.error, "Invalid API key")
      }),
      "pk_wrong_wrong_wrong_wrong_wrong"
    ))

  it.effect("each project sees only its own workflows", () =>
    Effect.gen(function*() {
      const host = yield* Host
      const created = yield* withClient(
        ParleyClient.use((client) => client.workflows.create({ payload: { workflow: { name: "Tenant A only" } } }))
      )
      const error = yield* withClient(
        ParleyClient.use((client) => Effect.flip(client.workflows.get({ params: { id: created.data.id } }))),
        host.otherKey
      )
      assert.instanceOf(error, NotFound)
    }))
})

describe("Promise client", () => {
  let host: TestHost
  let client: ParleyPromiseClient
  let scope: Scope.Closeable

  beforeAll(async () => {
    scope = Effect.runSync(Scope.make())
    host = await Effect.runPromise(startHost(ports).pipe(Scope.provide(scope)))
    // A trailing slash on the base URL is tolerated.
    client = createParleyClient({ baseUrl: `${host.url}/`, apiKey: host.key })
  })
  afterAll(async () => {
    await client.close()
    await Effect.runPromise(Scope.close(scope, Exit.void))
  })

  const rejection = async (promise: Promise<unknown>): Promise<ParleyError> => {
    try {
      await promise
    } catch (error) {
      assert.instanceOf(error, ParleyError)
      return error as ParleyError
    }
    assert.fail("expected a rejection")
  }

  it("creates, gets and lists workflows with await", async () => {
    const created = await client.workflows.create({ payload: { workflow: { name: "Promise Client Flow" } } })
    assert.strictEqual(created.data.name, "Promise Client Flow")
    const got = await client.workflows.get({ params: { id: created.data.id } })
    assert.deepStrictEqual(got.data, created.data)
    const listed = await client.workflows.list({ query: { name_contains: "promise client" } })
    assert.deepStrictEqual(listed.body.data.map((w) => w.id), [created.data.id])
    const triggers = await client.triggers.list({ params: { id: created.data.id } })
    assert.deepStrictEqual(triggers.data, [])
  })

  it("rejects a 404 with a ParleyError carrying status, message and the typed error", async () => {
    const error = await rejection(client.workflows.get({ params: { id: "00000000-0000-4000-8000-00000000dead" } }))
    assert.strictEqual(error.status, 404)
    assert.strictEqual(error.error, "Workflow not found")
    assert.strictEqual(error.message, "404: Workflow not found")
    assert.instanceOf(error.cause, NotFound)
  })

  it("rejects a 422 with the server's message and details", async () => {
    const error = await rejection(
      client.workflows.create({ payload: { workflow: { name: "Bad slug", slug: "Not A Slug!" } } })
    )
    assert.strictEqual(error.status, 422)
    assert.strictEqual(error.error, BAD_SLUG)
    assert.deepStrictEqual(error.details, [{ path: "workflow.slug", message: "is invalid" }])
    assert.instanceOf(error.cause, Unprocessable)
  })

  it("rejects a wrong key with 401", async () => {
    const wrong = createParleyClient({ baseUrl: host.url, apiKey: Redacted.make("pk_wrong_wrong_wrong_wrong_wrong") })
    try {
      const error = await rejection(wrong.workflows.list({ query: {} }))
      assert.strictEqual(error.status, 401)
      assert.strictEqual(error.error, "Invalid API key")
      assert.instanceOf(error.cause, Unauthorized)
    } finally {
      await wrong.close()
    }
  })

  it("rejects with status 0 when the host cannot be reached, naming the URL and the cause", async () => {
    // A port nothing listens on any more.
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve))
    const { port } = closed.address() as AddressInfo
    await new Promise((resolve) => closed.close(resolve))
    const unreachable = createParleyClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: host.key })
    try {
      const error = await rejection(unreachable.workflows.list({ query: {} }))
      assert.strictEqual(error.status, 0)
      assert.include(error.error, `GET http://127.0.0.1:${port}/platform/v1/workflows failed: connect ECONNREFUSED 127.0.0.1:${port}`)
    } finally {
      await unreachable.close()
    }
  })

  it("rejects with status 0 when the host does not answer in time, naming the URL and the wait", async () => {
    const silent = createServer(() => {})
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve))
    const { port } = silent.address() as AddressInfo
    const slow = createParleyClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: host.key, timeout: "200 millis" })
    try {
      const error = await rejection(slow.workflows.list())
      assert.strictEqual(error.status, 0)
      assert.include(error.error, `GET http://127.0.0.1:${port}/platform/v1/workflows failed: no answer within 200ms`)
    } finally {
      await slow.close()
      silent.closeAllConnections()
      silent.close()
    }
  })

  it("lists with no argument where every part of the request is optional", async () => {
    const listed = await client.workflows.list()
    assert.isArray(listed.body.data)
    assert.isArray((await client.customers.list()).body.data)
  })

  it("keeps the network's error (code, message, details) on a proxy failure", async () => {
    const error = await rejection(client.proxy.send({
      params: { version: "v24.0", phone_number_id: "999999999999999" },
      payload: { messaging_product: "whatsapp", to: "15551234567", type: "text", text: { body: "Hello" } }
    }))
    assert.strictEqual(error.status, 404)
    assert.notInclude(error.error, "StatusCode")
    assert.match(error.error, /^\(#100\) Unsupported request - object with ID '999999999999999' does not exist/)
    assert.strictEqual(error.code, "100")
    assert.deepStrictEqual(error.details, [{ path: "", message: "Object with ID '999999999999999' not found in this project" }])
    assert.strictEqual(error.network?.code, 100)
    assert.strictEqual(error.network?.type, "MessageError")
  })

  it("rejects calls after close", async () => {
    const closed = createParleyClient({ baseUrl: host.url, apiKey: host.key })
    await closed.close()
    const error = await rejection(closed.workflows.list({ query: {} }))
    assert.strictEqual(error.status, 0)
  })
})
