/**
 * The API's per-key limits over real HTTP (decisions 8.1): the general one-minute limit on every authenticated
 * route (Platform API, proxy) with its headers, and the execution start burst per key and workflow.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { type MessagingHost, startMessagingHost } from "./messaging.support.ts"

const hosts: Array<MessagingHost> = []
let close: () => Promise<void>

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    const ports = () => Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)
    hosts.push(yield* startMessagingHost(ports(), { PARLEY_RATE_LIMIT_PER_MINUTE: "5" }))
    hosts.push(yield* startMessagingHost(ports(), { PARLEY_START_BURST_PER_SECOND: "2" }))
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
}, 60_000)
afterAll(() => close())

/** Waits until `window` ms have just begun, so a test's requests fall in one window. */
const windowStart = async (window: number, room: number) => {
  const into = Date.now() % window
  if (into > window - room) await new Promise((resolve) => setTimeout(resolve, window - into + 5))
}

describe("API rate limits", () => {
  it("counts every authenticated request of a key in its minute and answers 429 past the limit", async () => {
    const host = hosts[0]!
    await windowStart(60_000, 10_000)
    const remaining: Array<string | null> = []
    for (let i = 0; i < 4; i++) {
      const answer = await host.request("GET", "/platform/v1/customers")
      assert.strictEqual(answer.status, 200)
      assert.strictEqual(answer.headers.get("x-ratelimit-limit"), "5")
      remaining.push(answer.headers.get("x-ratelimit-remaining"))
    }
    assert.deepStrictEqual(remaining, ["4", "3", "2", "1"])
    // A refusal of the handler is counted and carries the headers too; so is the proxy.
    const missing = await host.request("GET", "/platform/v1/customers/00000000-0000-0000-0000-000000000000")
    assert.strictEqual(missing.status, 404)
    assert.strictEqual(missing.headers.get("x-ratelimit-remaining"), "0")
    const reset = Number(missing.headers.get("x-ratelimit-reset"))
    assert.strictEqual(reset % 60, 0)
    assert.isAtLeast(reset * 1000, Date.now())

    const over = await host.request("GET", "/platform/v1/customers")
    assert.strictEqual(over.status, 429)
    assert.deepStrictEqual(over.body, { error: "Rate limit exceeded" })
    assert.strictEqual(over.headers.get("x-ratelimit-remaining"), "0")
    const retryAfter = Number(over.headers.get("retry-after"))
    assert.isTrue(retryAfter >= 1 && retryAfter <= 60, String(retryAfter))
    const proxied = await host.request("GET", "/proxy/v24.0/123/messages")
    assert.strictEqual(proxied.status, 429)
    assert.deepStrictEqual(proxied.body, { error: "Rate limit exceeded" })

    // Per key: the other project's key has its own minute; a wrong key is refused before any count.
    const other = await host.request("GET", "/platform/v1/customers", { key: host.otherKey })
    assert.strictEqual(other.status, 200)
    assert.strictEqual(other.headers.get("x-ratelimit-remaining"), "4")
    const wrong = await host.request("GET", "/platform/v1/customers", { key: "pk_wrong" })
    assert.strictEqual(wrong.status, 401)
    assert.isNull(wrong.headers.get("x-ratelimit-limit"))
  })

  it("limits execution starts per key and workflow per second, with the burst headers", async () => {
    const host = hosts[1]!
    const workflow = "00000000-0000-0000-0000-0000000000aa"
    const start = (id: string, key?: string) =>
      host.request("POST", `/platform/v1/workflows/${id}/executions`, {
        body: { workflow_execution: { phone_number: "+15550001111" } },
        ...(key !== undefined ? { key } : {})
      })
    await windowStart(1_000, 600)
    const first = await start(workflow)
    const second = await start(workflow)
    const third = await start(workflow)
    const elsewhere = await start("00000000-0000-0000-0000-0000000000bb")
    const otherKey = await start(workflow, host.otherKey)
    // The burst is counted before the start's own checks: the unknown workflow answers 404 inside the limit.
    assert.deepStrictEqual([first.status, second.status, third.status, elsewhere.status, otherKey.status], [404, 404, 429, 404, 404])
    assert.deepStrictEqual(
      [first, second, third].map((a) => [a.headers.get("x-burst-ratelimit-limit"), a.headers.get("x-burst-ratelimit-remaining")]),
      [["2", "1"], ["2", "0"], ["2", "0"]]
    )
    assert.deepStrictEqual(third.body, {
      error: "Execution start rate exceeded",
      message: "Too many execution starts for this workflow; retry in 1 second"
    })
    assert.strictEqual(third.headers.get("retry-after"), "1")
    // The general limit's headers are there too (1,000 a minute by default).
    assert.strictEqual(third.headers.get("x-ratelimit-limit"), "1000")
  })
})
