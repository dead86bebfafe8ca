/**
 * Where the host chooses the simulators (nothing else in production imports them): the network of the
 * configuration (`PARLEY_UPSTREAM`: the simulator by default, or the Cloud API), the model simulator, and what a
 * host in simulator mode serves of theirs (the model simulator's API, the simulated signup dialog).
 */
import { ModelSimulator, SimulatedUpstream } from "@parley/core/simulators"
import { Layer } from "effect"
import * as ModelSimulatorServer from "./ModelSimulatorServer.ts"
import * as SignupDialog from "./SignupDialog.ts"

/** `MessagingNetwork` and `UpstreamSettings` of the configuration. */
export const layerNetwork = SimulatedUpstream.layerConfig

/** The model simulator (served in simulator mode as `parley-sim`, scriptable by tests). */
export const layerModelSimulator = ModelSimulator.layer()

/** The routes of the simulators, where they run. */
export const routes = Layer.mergeAll(ModelSimulatorServer.routesInSimulatorMode, SignupDialog.routes)

/** What those routes serve (the host's 405 answers name them). */
export const ROUTES = [...SignupDialog.ROUTES]
