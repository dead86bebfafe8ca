/**
 * The model simulator's HTTP face (`ModelSimulator` in `@parley/core`): the
 * OpenAI-compatible API under `/model-simulator/v1` of the host whenever the
 * network simulator runs, so `npm start` has a model with no credentials
 * (declared at boot as `parley-sim`). Translation only: method, path,
 * `Authorization` and body in; status, content type and the answer's pieces
 * out (a streamed answer is written event by event).
 */
import { UpstreamSettings } from "@parley/core"
import { ModelSimulator } from "@parley/core/simulators"
import { Effect, Layer, Option, Stream } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { readBody } from "./SimulatorServer.ts"

/** Where the host serves the simulator's API root. */
export const ModelSimulatorPath = "/model-simulator/v1"

const unreadable = HttpServerResponse.jsonUnsafe(
  { error: { message: "The request body could not be read", type: "invalid_request_error" } },
  { status: 400 }
)

const handler = (simulator: ModelSimulator["Service"], prefix: string) => (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const url = Option.getOrUndefined(HttpServerRequest.toURL(request))
    if (url === undefined) return unreadable
    const answer = yield* simulator.handle({
      method: request.method,
      path: url.pathname.slice(prefix.length),
      authorization: request.headers["authorization"],
      body: yield* readBody(request)
    })
    return answer.chunks.length === 1
      ? HttpServerResponse.uint8Array(answer.chunks[0]!, { status: answer.status, contentType: answer.contentType })
      : HttpServerResponse.stream(Stream.fromIterable(answer.chunks), {
        status: answer.status,
        contentType: answer.contentType,
        headers: { "cache-control": "no-cache" }
      })
  }).pipe(Effect.catch(() => Effect.succeed(unreadable)))

/** The simulator's routes under `prefix` (default `ModelSimulatorPath`). */
export const routes = (prefix: string = ModelSimulatorPath): Layer.Layer<never, never, HttpRouter.HttpRouter | ModelSimulator> =>
  HttpRouter.use((router) =>
    Effect.gen(function*() {
      const simulator = yield* ModelSimulator
      yield* router.add("*", `${prefix}/*` as `/${string}`, handler(simulator, prefix))
    })
  )

/** `routes` in simulator mode (`PARLEY_UPSTREAM=simulator`), nothing otherwise. */
export const routesInSimulatorMode: Layer.Layer<never, never, HttpRouter.HttpRouter | ModelSimulator | UpstreamSettings> = Layer.unwrap(
  Effect.map(Effect.service(UpstreamSettings), (settings) => (settings.mode === "simulator" ? routes() : Layer.empty))
)
