/**
 * Which network a host talks to (`PARLEY_UPSTREAM`): the in-process network
 * simulator (default, no credentials needed) or the real Cloud API at
 * `PARLEY_UPSTREAM_URL`. Builds the `MessagingNetwork` port for the mode and
 * the `UpstreamSettings` ingestion and the sandbox read: the host-wide app
 * secret that signs upstream webhooks (in simulator mode, the simulator's),
 * the handshake verify token, and the simulator itself when there is one.
 */
import { Config, Context, Effect, Layer, Option, Redacted } from "effect"
import { FetchHttpClient, HttpClient } from "effect/http"
import { randomBytes } from "node:crypto"
import { MessagingNetwork } from "../network/MessagingNetwork.ts"
import type { Ids } from "../shared/Ids.ts"
import * as CloudApi from "../network/CloudApi.ts"
import { registerSimulatedNumber, type SimulatedNumber, UpstreamMode } from "./simulator/Bootstrap.ts"
import { NetworkSimulator, type NetworkSimulatorOptions } from "./simulator/Simulator.ts"
import { layerMessagingNetwork } from "./simulator/Transport.ts"

export class UpstreamSettings extends Context.Service<UpstreamSettings, {
  readonly mode: "simulator" | "cloud"
  /** Verifies `X-Hub-Signature-256` on the host-wide ingestion path; none: every POST there answers 401. */
  readonly appSecret: Option.Option<Redacted.Redacted<string>>
  /** Answers the GET handshake on the host-wide path; none: every handshake there answers 403. */
  readonly verifyToken: Option.Option<Redacted.Redacted<string>>
  /** The in-process network (simulator mode only): the sandbox routes drive it. */
  readonly simulator: Option.Option<NetworkSimulator["Service"]>
  /** The number the simulator has registered for this host (simulator mode only). */
  readonly simulatedNumber: Option.Option<SimulatedNumber>
}>()("@parley/core/messaging/UpstreamSettings") {}

const optionalSecret = (name: string) =>
  Config.option(Config.Redacted(name)).pipe(
    Config.map(Option.filter((value) => Redacted.value(value).length > 0))
  )

/** `PARLEY_UPSTREAM_APP_SECRET` and `PARLEY_UPSTREAM_VERIFY_TOKEN`. */
const SecretsConfig = Config.all({
  appSecret: optionalSecret("PARLEY_UPSTREAM_APP_SECRET"),
  verifyToken: optionalSecret("PARLEY_UPSTREAM_VERIFY_TOKEN")
})

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
        simulator: Option.some(simulator),
        simulatedNumber: Option.some(number)
      })
    })
  ).pipe(Layer.provideMerge(layerMessagingNetwork), Layer.provideMerge(NetworkSimulator.layer(options)))

/**
 * The HTTP client the Cloud API adapter sends with: `fetch` unless the host
 * provides one (Node's host provides undici's, about a millisecond cheaper per
 * request than `fetch`, whose web streams cost more than the send itself).
 */
export const UpstreamHttpClient = Context.Reference<HttpClient.HttpClient | undefined>(
  "@parley/core/messaging/UpstreamHttpClient",
  { defaultValue: () => undefined }
)

const cloudHttpClient = Layer.unwrap(
  Effect.map(UpstreamHttpClient, (client) =>
    client === undefined ? FetchHttpClient.layer : Layer.succeed(HttpClient.HttpClient, client))
)

/** The Cloud API at `PARLEY_UPSTREAM_URL` over `UpstreamHttpClient`, with the secrets of the configuration. */
export const layerCloud: Layer.Layer<MessagingNetwork | UpstreamSettings, Config.ConfigError> = Layer.effect(
  UpstreamSettings,
  Effect.gen(function*() {
    const secrets = yield* SecretsConfig
    return UpstreamSettings.of({
      mode: "cloud",
      appSecret: secrets.appSecret,
      verifyToken: secrets.verifyToken,
      simulator: Option.none(),
      simulatedNumber: Option.none()
    })
  })
).pipe(Layer.merge(CloudApi.layerConfig.pipe(Layer.provide(cloudHttpClient))))

/** `PARLEY_SIM_STATUS_BATCH_MS`: how long the simulated network gathers status reports into one webhook (50 ms). */
const SimStatusBatchMs = Config.Int("PARLEY_SIM_STATUS_BATCH_MS").pipe(Config.withDefault(50))

/**
 * The network of the configuration: `PARLEY_UPSTREAM=simulator` (default)
 * runs the simulator, signing with `PARLEY_UPSTREAM_APP_SECRET` or, when
 * unset, a random secret of this process; `cloud` talks to the real network.
 * A configuration that cannot be read stops the host at start.
 */
export const layerConfig: Layer.Layer<MessagingNetwork | UpstreamSettings, never, Ids> = Layer.unwrap(
  Effect.gen(function*() {
    const mode = yield* UpstreamMode
    if (mode === "cloud") return layerCloud
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
