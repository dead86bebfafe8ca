/**
 * The typed Effect client of Parley, derived entirely from the `ParleyApi`
 * contract: every group the contract gains appears here without client
 * changes, and failures are the contract's own error schemas (`NotFound`,
 * `Unprocessable`, `Unauthorized`, ...) carrying the server's message.
 */
import { Authentication, ParleyApi, ProxyKey } from "@parley/core"
import { Context, Duration, Effect, Layer, Redacted } from "effect"
import { FetchHttpClient, HttpClient, HttpClientError, HttpClientRequest } from "effect/http"
import { HttpApiClient, HttpApiMiddleware } from "effect/http-api"

export interface ParleyClientOptions {
  /** Where the host answers, e.g. `http://127.0.0.1:4000` (a path prefix is kept). */
  readonly baseUrl: string | URL
  /** A project's API key, sent as `X-API-Key` on every authenticated call. */
  readonly apiKey: string | Redacted.Redacted<string>
  /**
   * How long a call waits for the host's answer (default 30 seconds); then it fails with a transport error naming
   * the request and the wait (Node's `fetch` alone would wait 300 seconds).
   */
  readonly timeout?: Duration.Input | undefined
}

const DEFAULT_TIMEOUT = Duration.seconds(30)

/**
 * The generated client: one object per contract group, one method per endpoint. An interface, so declarations
 * (the `ParleyClient` service's among them) name it instead of spelling out every endpoint (about 300 KB).
 */
export interface ParleyApiClient extends HttpApiClient.ForApi<typeof ParleyApi> {}

/** A trailing slash would double up with the contract's absolute paths. */
const normalizeBaseUrl = (baseUrl: string | URL): string => baseUrl.toString().replace(/\/+$/, "")

/** The client side of the contract's `Authentication` and `ProxyKey` middleware: adds the project's key. */
export const layerAuthentication = (apiKey: string | Redacted.Redacted<string>) => {
  const key = Redacted.isRedacted(apiKey) ? apiKey : Redacted.make(apiKey)
  const withKey = (request: HttpClientRequest.HttpClientRequest) =>
    HttpClientRequest.setHeader(request, "x-api-key", Redacted.value(key))
  return Layer.merge(
    HttpApiMiddleware.layerClient(Authentication, ({ next, request }) => next(withKey(request))),
    HttpApiMiddleware.layerClient(ProxyKey, ({ next, request }) => next(withKey(request)))
  )
}

/**
 * Builds the client over the `HttpClient` in context (Fetch through `layer`,
 * or any other implementation a caller provides, e.g. `NodeHttpClient`).
 */
const make = (options: ParleyClientOptions): Effect.Effect<ParleyApiClient, never, HttpClient.HttpClient> => {
  const timeout = options.timeout === undefined ? DEFAULT_TIMEOUT : Duration.fromInputUnsafe(options.timeout)
  return HttpApiClient.make(ParleyApi, {
    transformClient: (client) =>
      client.pipe(
        HttpClient.mapRequest(HttpClientRequest.prependUrl(normalizeBaseUrl(options.baseUrl))),
        HttpClient.transform((response, request) =>
          Effect.timeoutOrElse(response, {
            duration: timeout,
            orElse: () =>
              Effect.fail(
                new HttpClientError.HttpClientError({
                  reason: new HttpClientError.TransportError({
                    request,
                    description: `no answer within ${Duration.format(timeout)}`
                  })
                })
              )
          })
        )
      )
  }).pipe(Effect.provide(layerAuthentication(options.apiKey)))
}

export class ParleyClient extends Context.Service<ParleyClient, ParleyApiClient>()("@parley/client/ParleyClient") {
  static readonly make = make

  /** The client over the platform's `fetch`. */
  static readonly layer = (options: ParleyClientOptions): Layer.Layer<ParleyClient> =>
    Layer.effect(ParleyClient, make(options)).pipe(Layer.provide(FetchHttpClient.layer))

  /** The client over an `HttpClient` the caller provides. */
  static readonly layerWithoutHttpClient = (
    options: ParleyClientOptions
  ): Layer.Layer<ParleyClient, never, HttpClient.HttpClient> => Layer.effect(ParleyClient, make(options))
}
