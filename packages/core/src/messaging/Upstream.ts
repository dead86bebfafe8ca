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
import { MessagingNetwork } from "../network/MessagingNetwork.ts"
import * as CloudApi from "../network/CloudApi.ts"
import type { SimulatedNetwork, SimulatedNumber } from "../network/SimulatedNetwork.ts"

export class UpstreamSettings extends Context.Service<UpstreamSettings, {
  readonly mode: "simulator" | "cloud"
  /** Verifies `X-Hub-Signature-256` on the host-wide ingestion path; none: every POST there answers 401. */
  readonly appSecret: Option.Option<Redacted.Redacted<string>>
  /** Answers the GET handshake on the host-wide path; none: every handshake there answers 403. */
  readonly verifyToken: Option.Option<Redacted.Redacted<string>>
  /** The in-process network (simulator mode only): the sandbox routes drive it. */
  readonly simulator: Option.Option<SimulatedNetwork>
  /** The number the simulator has registered for this host (simulator mode only). */
  readonly simulatedNumber: Option.Option<SimulatedNumber>
}>()("@parley/core/messaging/UpstreamSettings") {}

const optionalSecret = (name: string) =>
  Config.option(Config.Redacted(name)).pipe(
    Config.map(Option.filter((value) => Redacted.value(value).length > 0))
  )

/** `PARLEY_UPSTREAM_APP_SECRET` and `PARLEY_UPSTREAM_VERIFY_TOKEN`. */
export const SecretsConfig = Config.all({
  appSecret: optionalSecret("PARLEY_UPSTREAM_APP_SECRET"),
  verifyToken: optionalSecret("PARLEY_UPSTREAM_VERIFY_TOKEN")
})

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
