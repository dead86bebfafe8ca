/**
 * The simulator in process: an `HttpClient` whose requests never leave the
 * process but are answered by `NetworkSimulator.handle`, and the
 * `MessagingNetwork` port over it. The port is the Cloud API adapter itself,
 * so the in-process path builds the very requests production sends and reads
 * the answers the same way; only the wire is missing.
 */
import { Duration, Effect, Layer } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"
import type { HttpClient as HttpClientService } from "effect/http/HttpClient"
import { MessagingNetwork } from "../../network/MessagingNetwork.ts"
import * as CloudApi from "../../network/CloudApi.ts"
import { simBodyOf } from "./Protocol.ts"
import type { Ids } from "../../shared/Ids.ts"
import { NetworkSimulator, type NetworkSimulatorOptions } from "./Simulator.ts"

/** The base address of the in-process network (the `.invalid` TLD never resolves, should it ever leak). */
export const InProcessBaseUrl = "http://network.simulator.invalid"

/** An `HttpClient` answered by the simulator; the URL's origin becomes the network's base address. */
export const httpClient = (simulator: NetworkSimulator["Service"]): HttpClientService =>
  HttpClient.make((request, url) =>
    Effect.gen(function*() {
      const body = yield* simBodyOf(request, "the in-process network")
      const query: Record<string, string> = {}
      for (const [key, value] of url.searchParams) if (!(key in query)) query[key] = value
      const answer = yield* simulator.handle({
        method: request.method,
        baseUrl: url.origin,
        path: url.pathname,
        query,
        authorization: request.headers["authorization"],
        body
      })
      return HttpClientResponse.fromWeb(
        request,
        new Response(answer.body as Uint8Array<ArrayBuffer>, {
          status: answer.status,
          headers: { "content-type": answer.contentType }
        })
      )
    })
  )

/** `MessagingNetwork` over the simulator in context, with no HTTP in between. */
export const layerMessagingNetwork: Layer.Layer<MessagingNetwork, never, NetworkSimulator> = Layer.effect(
  MessagingNetwork,
  Effect.gen(function*() {
    const simulator = yield* NetworkSimulator
    // No wire, so nothing to stall: no deadline (and no timer raced against every call).
    return yield* CloudApi.make({ baseUrl: InProcessBaseUrl, timeout: Duration.infinity }).pipe(
      Effect.provideService(HttpClient.HttpClient, httpClient(simulator))
    )
  })
)

/** The simulator and the port over it, as one layer (`NetworkSimulator` stays reachable for the sandbox routes). */
export const layerWithSimulator = (
  options: NetworkSimulatorOptions
): Layer.Layer<MessagingNetwork | NetworkSimulator, never, Ids> =>
  layerMessagingNetwork.pipe(Layer.provideMerge(NetworkSimulator.layer(options)))
