/**
 * One network call alone, without a host: the simulated network in a process of its own (`networkProcess.ts`),
 * called from this process through the Cloud API adapter over undici (as the host builds it, `Host.layerUndici`),
 * through effect's `HttpClient` over undici, and with a bare undici `request`, alternated (`proxyCalls.ts`). What
 * the adapter and effect's client cost a call over undici's own, with nothing else on the thread.
 *
 *   node --conditions=@parley/source bench/networkCall.ts      (`CALLS`, default 1000)
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { CloudApi } from "@parley/core"
import { Effect, Layer } from "effect"
import { HttpClient } from "effect/http"
import { forkNetwork } from "./networkProcess.ts"
import { compareCalls, formatCalls } from "./proxyCalls.ts"

const NUMBER = "100000000000001"
const CONTACT = "15551000001"

const main = Effect.gen(function*() {
  const { command, port } = yield* forkNetwork("bench-network-app-secret")
  yield* command({ lift: NUMBER })
  // The contact writes first, so its 24-hour window is open.
  yield* command({ inbound: { phoneNumberId: NUMBER, contacts: [CONTACT] } })
  const baseUrl = `http://127.0.0.1:${port}`
  const context = yield* Layer.build(CloudApi.layer({ baseUrl }).pipe(
    Layer.provide(Layer.effect(HttpClient.HttpClient, NodeHttpClient.makeUndici)),
    Layer.provide(NodeHttpClient.layerDispatcher)
  ))
  const result = yield* compareCalls({
    context,
    baseUrl,
    phoneNumberId: NUMBER,
    token: "parley-simulator-token",
    body: JSON.stringify({ messaging_product: "whatsapp", to: CONTACT, type: "text", text: { body: "hello" } }),
    calls: Number(process.env.CALLS ?? 1000),
    gapsMs: [0],
    networkName: "CloudApi.send over undici"
  })
  console.log(formatCalls(result).join("\n"))
}).pipe(Effect.scoped)

Effect.runPromise(main).then(() => process.exit(0), (error) => {
  console.error(error)
  process.exit(1)
})
