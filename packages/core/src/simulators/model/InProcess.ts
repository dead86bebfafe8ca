/**
 * The model simulator in process: an `HttpClient` whose requests never leave
 * the process but are answered by `ModelSimulator.handle`. The production
 * adapter runs over it unchanged, so tests exercise the real translation code;
 * only the wire is missing.
 */
import { Effect } from "effect"
import { HttpClient, HttpClientResponse } from "effect/http"
import { simBodyOf } from "../network/Protocol.ts"
import type { ModelSimulator } from "./ModelSimulator.ts"

/** The API root of the in-process simulator (the `.invalid` TLD never resolves, should it ever leak). */
export const InProcessModelBaseUrl = "http://models.simulator.invalid/v1"
const rootPath = new URL(InProcessModelBaseUrl).pathname

/** An `HttpClient` answered by the simulator, piece by piece (a stream arrives as its events). */
export const httpClient = (simulator: ModelSimulator["Service"]): HttpClient.HttpClient =>
  HttpClient.make((request, url) =>
    Effect.gen(function*() {
      const answer = yield* simulator.handle({
        method: request.method,
        path: url.pathname.startsWith(rootPath) ? url.pathname.slice(rootPath.length) : url.pathname,
        authorization: request.headers["authorization"],
        body: yield* simBodyOf(request, "the model simulator")
      })
      const chunks = [...answer.chunks]
      const body = new ReadableStream<Uint8Array>({
        pull: (controller) => {
          const chunk = chunks.shift()
          if (chunk === undefined) controller.close()
          else controller.enqueue(chunk)
        }
      })
      return HttpClientResponse.fromWeb(request, new Response(body, { status: answer.status, headers: { "content-type": answer.contentType } }))
    })
  )
