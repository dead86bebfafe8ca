/**
 * The simulator in process: an `HttpClient` whose requests never leave the
 * process but are answered by `NetworkSimulator.handle`, and the
 * `MessagingNetwork` port over it. The port is the Cloud API adapter itself,
 * so the in-process path builds the very requests production sends and reads
 * the answers the same way; only the wire is missing.
 */
import { Duration, Effect, Layer } from "effect"
import { HttpClient, HttpClientError, type HttpClientRequest, HttpClientResponse } from "effect/http"
import type { HttpClient as HttpClientService } from "effect/http/HttpClient"
import { MessagingNetwork } from "../../ports/MessagingNetwork.ts"
import * as CloudApi from "../CloudApi.ts"
import type { SimBody, SimFile } from "./Protocol.ts"
import type { Ids } from "../../shared/Ids.ts"
import { NetworkSimulator, type NetworkSimulatorOptions } from "./Simulator.ts"

/** The base address of the in-process network (the `.invalid` TLD never resolves, should it ever leak). */
export const InProcessBaseUrl = "http://network.simulator.invalid"

const bodyOf = (request: HttpClientRequest.HttpClientRequest): Effect.Effect<SimBody, HttpClientError.HttpClientError> => {
  const body = request.body
  switch (body._tag) {
    case "Empty":
      return Effect.succeed({ _tag: "None" })
    case "Uint8Array":
      return Effect.succeed({ _tag: "Bytes", contentType: body.contentType, bytes: body.body })
    case "FormData":
      return Effect.promise(async () => {
        const fields: Record<string, string> = {}
        const files: Array<SimFile> = []
        for (const [key, value] of body.formData.entries()) {
          if (typeof value === "string") fields[key] = value
          else {
            const bytes = new Uint8Array(await value.arrayBuffer())
            files.push({ key, filename: value.name, contentType: value.type, bytes })
          }
        }
        return { _tag: "Form", fields, files } as const
      })
    default:
      return Effect.fail(
        new HttpClientError.HttpClientError({
          reason: new HttpClientError.EncodeError({
            request,
            description: `the in-process network does not take ${body._tag} bodies`
          })
        })
      )
  }
}

/** An `HttpClient` answered by the simulator; the URL's origin becomes the network's base address. */
export const httpClient = (simulator: NetworkSimulator["Service"]): HttpClientService =>
  HttpClient.make((request, url) =>
    Effect.gen(function*() {
      const body = yield* bodyOf(request)
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
