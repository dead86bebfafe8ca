/**
 * What a host needs to run on the simulator: the one simulated number it
 * connects at start (`PARLEY_SIM_*`), and a sink that POSTs the simulator's
 * webhooks to an HTTP endpoint (Parley's own ingestion, in the host).
 */
import { Config, Effect, Option, Redacted } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import { HubSignatureHeader } from "../../network/Webhook.ts"
import type { WebhookSink } from "./Protocol.ts"
import { NetworkSimulator } from "./Simulator.ts"

export { UpstreamMode } from "../../network/UpstreamMode.ts"
export type { SimulatedNumber } from "../../network/SimulatedNetwork.ts"
import type { SimulatedNumber } from "../../network/SimulatedNetwork.ts"

/**
 * `PARLEY_SIM_PHONE_NUMBER_ID` (default `100000000000001`),
 * `PARLEY_SIM_BUSINESS_ACCOUNT_ID` (`200000000000001`),
 * `PARLEY_SIM_DISPLAY_PHONE_NUMBER` (`+1 555-010-0001`),
 * `PARLEY_SIM_VERIFIED_NAME` (`Parley Sandbox`),
 * `PARLEY_SIM_ACCESS_TOKEN` (`parley-simulator-token`: the simulator holds no
 * real credential, and a fixed default keeps a stored config valid across
 * restarts).
 */
export const SimulatedNumberConfig = Config.all({
  phoneNumberId: Config.String("PARLEY_SIM_PHONE_NUMBER_ID").pipe(Config.withDefault("100000000000001")),
  businessAccountId: Config.String("PARLEY_SIM_BUSINESS_ACCOUNT_ID").pipe(Config.withDefault("200000000000001")),
  displayPhoneNumber: Config.String("PARLEY_SIM_DISPLAY_PHONE_NUMBER").pipe(Config.withDefault("+1 555-010-0001")),
  verifiedName: Config.String("PARLEY_SIM_VERIFIED_NAME").pipe(Config.withDefault("Parley Sandbox")),
  accessToken: Config.Redacted("PARLEY_SIM_ACCESS_TOKEN").pipe(Config.withDefault(Redacted.make("parley-simulator-token")))
})

/**
 * Registers the simulated number of the configuration (quality `GREEN`, tier
 * `TIER_10K`, status `CONNECTED`, app subscribed) and answers it.
 */
export const registerSimulatedNumber: Effect.Effect<SimulatedNumber, Config.ConfigError, NetworkSimulator> = Effect.gen(
  function*() {
    const number = yield* SimulatedNumberConfig
    const simulator = yield* NetworkSimulator
    yield* simulator.registerNumber({
      phoneNumberId: number.phoneNumberId,
      businessAccountId: number.businessAccountId,
      accessToken: Redacted.value(number.accessToken),
      displayPhoneNumber: number.displayPhoneNumber,
      verifiedName: number.verifiedName,
      qualityRating: "GREEN",
      messagingLimitTier: "TIER_10K",
      status: "CONNECTED"
    })
    return number
  }
)

/**
 * A sink that POSTs each webhook to `url` as the network does: the raw body,
 * `content-type: application/json` and `X-Hub-Signature-256`. Anything but a
 * 2xx is a failed delivery (the simulator retries it).
 */
export const httpWebhookSink = (url: string): Effect.Effect<WebhookSink, never, HttpClient.HttpClient> =>
  Effect.map(HttpClient.HttpClient, (client) => {
    const strict = HttpClient.filterStatusOk(client)
    return (rawBody, signatureHeader) =>
      HttpClientRequest.post(url).pipe(
        HttpClientRequest.setHeader(HubSignatureHeader, signatureHeader),
        HttpClientRequest.bodyUint8Array(rawBody, "application/json"),
        strict.execute,
        Effect.asVoid
      )
  })

/** The network simulator running in this context (simulator mode, tests); a defect where none runs. */
export const running: Effect.Effect<NetworkSimulator["Service"]> = Effect.flatMap(
  Effect.serviceOption(NetworkSimulator),
  Option.match({ onNone: () => Effect.die(new Error("no network simulator runs here")), onSome: Effect.succeed })
)
