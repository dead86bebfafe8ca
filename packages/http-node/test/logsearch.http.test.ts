/** The log search HTTP suite (`logsearch.support.ts`) on memory ports, and a host told not to record API requests. */
import { assert, describe, it } from "@effect/vitest"
import { Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { logSearchOverHttp } from "./logsearch.support.ts"
import { type MessagingHost, startMessagingHost } from "./messaging.support.ts"

const memoryPorts = () => Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)

logSearchOverHttp("memory", Effect.sync(memoryPorts))

describe("log search with PARLEY_LOG_API_REQUESTS=false", () => {
  let host: MessagingHost
  let close: () => Promise<void> = () => Promise.resolve()
  beforeAll(async () => {
    const scope = Effect.runSync(Scope.make())
    host = await Effect.runPromise(startMessagingHost(memoryPorts(), { PARLEY_LOG_API_REQUESTS: "false" }).pipe(Effect.provideService(Scope.Scope, scope)))
    close = () => Effect.runPromise(Scope.close(scope, Exit.void))
  }, 60_000)
  afterAll(() => close())

  it("records no API request, and still searches", async () => {
    const tag = crypto.randomUUID()
    assert.strictEqual((await host.request("GET", `/platform/v1/workflows/${tag}`)).status, 404)
    const res = await host.request("GET", `/platform/v1/log_search?query=${tag}`)
    assert.strictEqual(res.status, 200, res.text)
    assert.deepStrictEqual(res.body.events, [])
  })
})
