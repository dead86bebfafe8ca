/** `/docs` renders the API reference in a real browser, from the host alone (no CDN on this network). */
import { Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Effect, Exit, Layer, Scope } from "effect"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { browserAvailable, launchBrowser } from "./browser.ts"
import { startHost, type TestHost } from "./support.ts"

let host: TestHost
let scope: Scope.Closeable

beforeAll(async () => {
  scope = Effect.runSync(Scope.make())
  host = await Effect.runPromise(
    startHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)).pipe(Effect.provideService(Scope.Scope, scope))
  )
})
afterAll(() => Effect.runPromise(Scope.close(scope, Exit.void)))

describe.skipIf(!browserAvailable)("API reference page", () => {
  it("renders the operations of the contract", async () => {
    const browser = await launchBrowser()
    try {
      const page = await browser.newPage()
      const failed: Array<string> = []
      page.on("requestfailed", (request) => failed.push(request.url()))
      const response = await page.goto(`${host.url}/docs`, { waitUntil: "load" })
      assert.strictEqual(response?.status(), 200)
      // Scalar renders the operations client-side from the OpenAPI document.
      await page.getByText("Workflows", { exact: false }).first().waitFor({ timeout: 20_000 })
      await page.getByText("/platform/v1/workflows", { exact: false }).first().waitFor({ timeout: 20_000 })
      assert.deepStrictEqual(failed.filter((u) => !u.startsWith(host.url)), [], `no request leaves the host: ${failed.join(", ")}`)
    } finally {
      await browser.close()
    }
  }, 60_000)
})
