/**
 * The Cloud API adapter over real HTTP, against the simulator's HTTP face on a
 * random loopback port: the same conformance suite as the in-process port.
 */
import { CloudApi, Ids, Simulator } from "@parley/core"
import { messagingNetworkConformance, simulatorOptions } from "@parley/core/testing/conformance"
import { Effect, Layer } from "effect"
import { FetchHttpClient, HttpServer } from "effect/http"
import * as SimulatorServer from "../src/upstream/SimulatorServer.ts"

const simulator = Simulator.NetworkSimulator.layer(simulatorOptions).pipe(Layer.provide(Ids.layerSequential))

const cloudApiOverHttp = Layer.unwrap(
  Effect.gen(function*() {
    const baseUrl = yield* HttpServer.addressFormattedWith(Effect.succeed)
    return CloudApi.layer({ baseUrl })
  })
).pipe(
  Layer.provide(FetchHttpClient.layer),
  Layer.provide(SimulatorServer.layerServer({ port: 0 })),
  Layer.provideMerge(simulator)
)

messagingNetworkConformance("MessagingNetwork (Cloud API adapter over HTTP to the simulator)", {
  layer: cloudApiOverHttp
})
