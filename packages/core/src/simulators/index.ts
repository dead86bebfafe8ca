/**
 * The network and model simulators (`@parley/core/simulators`): the messaging network and an OpenAI-compatible model
 * endpoint, speaking their real wire protocols, for a host in simulator mode, demos and tests. Nothing in Parley's
 * production code imports them; a host chooses to run them (`SimulatedUpstream.layerConfig` reads `PARLEY_UPSTREAM`).
 */
export * as Simulator from "./network/index.ts"
export type { InboundInput as SimulatorInboundInput, InboundResult as SimulatorInboundResult } from "./network/Inbound.ts"
export type {
  NetworkSimulatorOptions,
  NumberPatch as SimulatorNumberPatch,
  OutboxEntry as SimulatorOutboxEntry,
  SimBody,
  SimFile,
  SimRequest,
  SimResponse,
  SimulatedNumberInput,
  WebhookSink
} from "./network/Simulator.ts"
export type { SimulatedNumber } from "./network/Bootstrap.ts"
export type { SignupAnswer, SignupBusiness, SignupChoice, SignupNumber } from "./network/Signup.ts"
export * from "./model/ModelSimulator.ts"
export * as SimulatedUpstream from "./Upstream.ts"
// Also by name (the declaration bundler refers to them from other entries' types).
export { NetworkSimulator, SIMULATOR_APP_ID } from "./network/Simulator.ts"
export { PROVISIONING_PREFIXES, SIGNUP_CATALOGUE } from "./network/Signup.ts"
