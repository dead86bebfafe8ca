import { Layer } from "effect"
import { Ids } from "../src/shared/Ids.ts"
import { messagingNetworkConformance, simulatorOptions } from "../src/testing/conformance/MessagingNetworkConformance.ts"
import { Simulator } from "../src/simulators/index.ts"

// The port over the simulator in process: the Cloud API adapter's requests, answered without a wire.
messagingNetworkConformance("MessagingNetwork (simulator, in process)", {
  layer: Simulator.layerWithSimulator(simulatorOptions).pipe(Layer.provide(Ids.layerSequential))
})
