/**
 * The network of a host's configuration (`PARLEY_UPSTREAM`): the network simulator in process (default, no
 * credentials) or the real Cloud API (`Upstream.layerCloud`). Only hosts and tests choose it: production code sees
 * the `MessagingNetwork` port and `UpstreamSettings`, whose `simulator` is the `SimulatedNetwork` port.
 */
import { Config, Effect, Layer, Option, Redacted } from "effect"
import { randomBytes } from "node:crypto"
import type { MessagingNetwork } from "../network/MessagingNetwork.ts"
import { UpstreamMode } from "../network/UpstreamMode.ts"
import { layerCloud, SecretsConfig, UpstreamSettings } from "../messaging/Upstream.ts"
import type { Ids } from "../shared/Ids.ts"
import { registerSimulatedNumber } from "./network/Bootstrap.ts"
import { NetworkSimulator, type NetworkSimulatorOptions, SIMULATOR_APP_ID } from "./network/Simulator.ts"
import { layerMessagingNetwork } from "./network/Transport.ts"

/**
 * The simulator with `options` (its app secret signs its webhooks and is the
 * host's app secret), the port over it, and the simulated number of
 * `PARLEY_SIM_*` registered in it. Webhooks go nowhere until a sink is set
 * (the messaging workers set ingestion as the sink).
 */
export const layerSimulator = (
  options: NetworkSimulatorOptions & { readonly verifyToken?: string | undefined }
): Layer.Layer<MessagingNetwork | UpstreamSettings | NetworkSimulator, Config.ConfigError, Ids> =>
  Layer.effect(
    UpstreamSettings,
    Effect.gen(function*() {
      const simulator = yield* NetworkSimulator
      const number = yield* registerSimulatedNumber
      return UpstreamSettings.of({
        mode: "simulator",
        appSecret: Option.some(Redacted.make(options.appSecret)),
        verifyToken: options.verifyToken === undefined ? Option.none() : Option.some(Redacted.make(options.verifyToken)),
        simulator: Option.some({
          appId: options.appId ?? SIMULATOR_APP_ID,
          inbound: simulator.inbound,
          outbox: simulator.outbox,
          setSink: simulator.setSink
        }),
        simulatedNumber: Option.some(number)
      })
    })
  ).pipe(Layer.provideMerge(layerMessagingNetwork), Layer.provideMerge(NetworkSimulator.layer(options)))

/** `PARLEY_SIM_STATUS_BATCH_MS`: how long the simulated network gathers status reports into one webhook (50 ms). */
const SimStatusBatchMs = Config.Int("PARLEY_SIM_STATUS_BATCH_MS").pipe(Config.withDefault(50))

/**
 * The simulator of the configuration, whatever `PARLEY_UPSTREAM` says (memory Parley, demos): signing with
 * `PARLEY_UPSTREAM_APP_SECRET` or, when unset, a random secret of this process; status reports gathered for
 * `PARLEY_SIM_STATUS_BATCH_MS`.
 */
export const layerSimulatorConfig: Layer.Layer<MessagingNetwork | UpstreamSettings | NetworkSimulator, never, Ids> = Layer.unwrap(
  Effect.gen(function*() {
    const secrets = yield* SecretsConfig
    const appSecret = Option.isSome(secrets.appSecret)
      ? Redacted.value(secrets.appSecret.value)
      : yield* Effect.sync(() => randomBytes(32).toString("hex"))
    return layerSimulator({
      appSecret,
      verifyToken: Option.getOrUndefined(Option.map(secrets.verifyToken, Redacted.value)),
      statusBatchMs: yield* SimStatusBatchMs
    })
  })
).pipe(Layer.orDie)

/**
 * The network of the configuration: `PARLEY_UPSTREAM=simulator` (default) runs the simulator
 * (`layerSimulatorConfig`); `cloud` talks to the real network. A configuration that cannot be read stops the host
 * at start.
 */
export const layerConfig: Layer.Layer<MessagingNetwork | UpstreamSettings, never, Ids> = Layer.unwrap(
  Effect.map(UpstreamMode, (mode): Layer.Layer<MessagingNetwork | UpstreamSettings, never, Ids> =>
    mode === "cloud" ? layerCloud.pipe(Layer.orDie) : layerSimulatorConfig)
).pipe(Layer.orDie)
