import { Layer } from "effect"
import { Simulator } from "../src/index.ts"
import { Ids } from "../src/shared/Ids.ts"
import { messagingNetworkConformance, simulatorOptions } from "../src/testing/conformance/MessagingNetworkConformance.ts"

// The port over the simulator in process: the Cloud API adapter's requests, answered without a wire.
messagingNetworkConformance("MessagingNetwork (simulator, in process)", {
  layer: Simulator.layerWithSimulator(simulatorOptions).pipe(Layer.provide(Ids.layerSequential))
})
