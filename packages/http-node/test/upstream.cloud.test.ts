/**
 * The Cloud API adapter over real HTTP, against the simulator's HTTP face on a
 * random loopback port: the same conformance suite as the in-process port,
 * over `fetch` (core's default) and over undici (what the Node host provides).
 */
import { NodeHttpClient } from "@effect/platform-node"
import { CloudApi, Ids } from "@parley/core"
import { Simulator } from "@parley/core/simulators"
import { messagingNetworkConformance, simulatorOptions } from "@parley/core/testing/conformance"
import { Effect, Layer } from "effect"
import { FetchHttpClient, type HttpClient, HttpServer } from "effect/http"
import * as SimulatorServer from "../src/simulators/SimulatorServer.ts"

const simulator = Simulator.NetworkSimulator.layer(simulatorOptions).pipe(Layer.provide(Ids.layerSequential))

const cloudApiOverHttp = (client: Layer.Layer<HttpClient.HttpClient>) =>
  Layer.unwrap(
    Effect.gen(function*() {
      const baseUrl = yield* HttpServer.addressFormattedWith(Effect.succeed)
      return CloudApi.layer({ baseUrl })
    })
  ).pipe(
    Layer.provide(client),
    Layer.provide(SimulatorServer.layerServer({ port: 0 })),
    Layer.provideMerge(simulator)
  )

messagingNetworkConformance("MessagingNetwork (Cloud API adapter over fetch to the simulator)", {
  layer: cloudApiOverHttp(FetchHttpClient.layer)
})

messagingNetworkConformance("MessagingNetwork (Cloud API adapter over undici to the simulator)", {
  layer: cloudApiOverHttp(NodeHttpClient.layerUndici)
})
