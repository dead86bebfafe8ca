/**
 * Webhook deliveries on the production ports (PostgreSQL storage, pg-boss):
 * a delivery whose retry is pending when the host stops completes after a
 * new host starts on the same database, with the same idempotency key and
 * the same bytes, signed with the secret the database keeps encrypted. Nothing is killed by hand: the first host's layer is
 * closed mid-schedule and a second one built.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { verifyWebhookSignature } from "@parley/client"
import { Ids, Projects } from "@parley/core"
import { layerFromUrl, layerJobQueue, layerStorage } from "@parley/store-pg"
import { ConfigProvider, Context, Effect, Exit, Layer, References, Scope } from "effect"
import { HttpServer } from "effect/http"
import { SqlClient } from "effect/sql"
import { createServer } from "node:http"
import { afterAll, beforeAll } from "vitest"
import * as Host from "../src/Host.ts"
import { emptyDatabase } from "../../store-pg/test/pg.ts"
import { type Receiver, startReceiver } from "./receiver.ts"

const SECRET = "whsec_restart"

let databaseUrl: string
let receiver: Receiver
let closeFile: () => Promise<void>

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    databaseUrl = yield* emptyDatabase
    receiver = yield* startReceiver
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  closeFile = () => Effect.runPromise(Scope.close(scope, Exit.void))
}, 120_000)
afterAll(() => closeFile())

/** A host on the shared database, until its scope closes; answers its URL and services. */
const startHostOn = (scope: Scope.Scope) =>
  Effect.gen(function*() {
    const environment = ConfigProvider.fromEnv({ env: { ...process.env, PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS: "true" } })
    const context = yield* Layer.buildWithScope(
      Host.serve({ publicUrl: "http://127.0.0.1" }).pipe(
        Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })),
        Layer.provideMerge(
          Layer.mergeAll(layerStorage, layerJobQueue({ pollingIntervalSeconds: 0.5 }), Ids.layer).pipe(
            Layer.provideMerge(layerFromUrl(databaseUrl))
          )
        ),
        Layer.provideMerge(Layer.succeed(ConfigProvider.ConfigProvider, environment)),
        Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn"))
      ),
      scope
    )
    const url = yield* HttpServer.addressFormattedWith(Effect.succeed).pipe(Effect.provideContext(context))
    return { url, projects: Context.get(context, Projects), sql: Context.get(context, SqlClient.SqlClient) }
  })

const call = async (base: string, key: string, method: string, path: string, body?: unknown) => {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { "x-api-key": key, "content-type": "application/json" },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {})
  })
  const text = await response.text()
  return { status: response.status, body: text.length > 0 ? JSON.parse(text) : undefined, text }
}

const eventually = async <A>(what: string, f: () => Promise<A | undefined>, withinMs = 30_000): Promise<A> => {
  const deadline = Date.now() + withinMs
  while (true) {
    const value = await f()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`still waiting for: ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

describe("webhook deliveries (postgres)", () => {
  it("completes a delivery after a host restart mid-schedule, with the same key and bytes", async () => {
    const key = "pk_test_restart_project_0123456789"
    receiver.answer(() => ({ status: 503, body: "down for maintenance" }))

    // First host: the webhook, one event, one failed attempt; then it stops.
    const first = await Effect.runPromise(Scope.make())
    const { sql, url: firstUrl } = await Effect.runPromise(Effect.gen(function*() {
      const started = yield* startHostOn(first)
      const project = yield* started.projects.create("Restart")
      yield* started.projects.createKey(project.id, "test", key)
      return started
    }))
    const created = await call(firstUrl, key, "POST", "/platform/v1/msg/webhooks", {
      msg_webhook: { url: `${receiver.url}/restart`, events: ["project.event"], secret_key: SECRET }
    })
    assert.strictEqual(created.status, 201, created.text)
    // The signing secret is stored encrypted with the host key (the second host signs with it below).
    const plain = await Effect.runPromise(sql<{ readonly n: number }>`
      SELECT count(*)::int AS n FROM webhooks w WHERE w::text LIKE ${`%${SECRET}%`}`)
    assert.strictEqual(plain[0]!.n, 0)
    const emitted = await call(firstUrl, key, "POST", "/platform/v1/events", { name: "order.paid" })
    assert.strictEqual(emitted.status, 201, emitted.text)
    const [attempt1] = await receiver.received(1)
    const pending = await eventually("the first attempt in the log", async () => {
      const res = await call(firstUrl, key, "GET", "/platform/v1/webhook_deliveries")
      return res.body.data[0]?.attempt_count === 1 ? res.body.data[0] : undefined
    })
    assert.deepStrictEqual([pending.status, pending.response_status, pending.error_message], ["pending", 503, "down for maintenance"])
    await Effect.runPromise(Scope.close(first, Exit.void))
    receiver.answer(() => ({ status: 200 }))

    // Second host, same database: the pending attempt runs when it is due.
    const second = await Effect.runPromise(Scope.make())
    try {
      const { url: secondUrl } = await Effect.runPromise(startHostOn(second))
      const [, attempt2] = await receiver.received(2, 30_000)
      assert.isAtLeast(attempt2!.at - attempt1!.at, 9_900)
      assert.strictEqual(attempt2!.headers["x-idempotency-key"], attempt1!.headers["x-idempotency-key"])
      assert.isTrue(attempt2!.raw.equals(attempt1!.raw))
      assert.isTrue(verifyWebhookSignature(attempt2!.raw, attempt2!.headers["x-webhook-signature"] as string, SECRET))
      const delivered = await eventually("delivered", async () => {
        const res = await call(secondUrl, key, "GET", `/platform/v1/webhook_deliveries/${pending.id}`)
        return res.body.data.status === "delivered" ? res.body.data : undefined
      })
      assert.deepStrictEqual(
        delivered.attempts.map((a: any) => [a.response_status, a.error]),
        [[503, "down for maintenance"], [200, null]]
      )
      assert.strictEqual(delivered.request_body, attempt1!.raw.toString("utf8"))
      await new Promise((r) => setTimeout(r, 1_000))
      assert.strictEqual(receiver.requests.length, 2, "no duplicate beyond the retry")
    } finally {
      await Effect.runPromise(Scope.close(second, Exit.void))
    }
  }, 90_000)
})
