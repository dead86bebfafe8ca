/**
 * The network simulator (`Simulator` in `@parley/core`): the model, its in-process transport, and what a host needs
 * to run on it. Only values here: the declaration bundler turns a type inside a namespace export into a value, so the
 * simulator's types are exported from the package root (`SimulatorInboundInput`, `WebhookSink`, ...).
 */
export { NetworkSimulator, SIMULATOR_APP_ID } from "./Simulator.ts"
export { STATUS_BATCH_MAX } from "./Webhooks.ts"
export { SimulatorInputError } from "../../network/ErrorCodes.ts"
export { PROVISIONING_PREFIXES, SIGNUP_CATALOGUE } from "./Signup.ts"
export { httpClient, InProcessBaseUrl, layerMessagingNetwork, layerWithSimulator } from "./Transport.ts"
export { httpWebhookSink, registerSimulatedNumber, running, SimulatedNumberConfig, UpstreamMode } from "./Bootstrap.ts"
