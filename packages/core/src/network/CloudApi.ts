/**
 * The Cloud API adapter of `MessagingNetwork`: every call is one HTTP request
 * to `<base>/<version>/<path>` with `Authorization: Bearer <token>`, through
 * effect's `HttpClient` (so it runs wherever an `HttpClient` exists). Bodies
 * given as bytes go out byte for byte; answers come back byte for byte with a
 * typed view next to them. Nothing is retried here: throttling codes go back
 * to the caller, who owns the retry policy (decisions §8.2).
 *
 * The same adapter talks to the simulator: over real HTTP to its HTTP face,
 * or in process through `NetworkSimulator`'s own `HttpClient`.
 */
import { Config, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import { parseJson } from "../shared/Json.ts"
import { TracePropagation } from "../shared/Telemetry.ts"
import { HttpClient, HttpClientRequest, type HttpClientResponse } from "effect/http"
import {
  type MediaFile,
  MessagingNetwork,
  type NetworkAccess,
  type NetworkAnswer,
  type NetworkBody,
  NetworkRefused,
  NetworkUnavailable
} from "./MessagingNetwork.ts"
import {
  BlockedUsersPage,
  BlockUsersAnswer,
  DefaultApiVersion,
  HealthStatusAnswer,
  isApiVersion,
  MediaInfo,
  MediaUploaded,
  MessagingProduct,
  NetworkErrorBody,
  NetworkTemplate,
  PhoneNumberFacts,
  PhoneNumberFields,
  PhoneNumberPage,
  SendAnswer,
  SignupToken,
  SubscribedApps,
  SuccessAnswer,
  TemplateCreated,
  TemplatePage,
  UploadedAsset,
  UploadSession,
  UsernameAnswer,
  UsernameSuggestions
} from "./NetworkObjects.ts"

/** The real network's Graph host: the default of `PARLEY_UPSTREAM_URL`. */
export const DefaultBaseUrl = "https://graph.facebook.com"

export interface CloudApiOptions {
  /** Scheme and host (and optional path prefix) the version segment is appended to. */
  readonly baseUrl: string
  /**
   * Per request; default 30 seconds. `Duration.infinity`: none, for a
   * network with no wire to stall (the in-process simulator), which then
   * pays no timer race per call.
   */
  readonly timeout?: Duration.Input | undefined
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

const bodyBytes = (body: NetworkBody): Uint8Array =>
  body instanceof Uint8Array ? body : encoder.encode(JSON.stringify(body))

const decodeError = Schema.decodeUnknownOption(NetworkErrorBody)

const noClientSpan = () => true

type Query = Readonly<Record<string, string | number | undefined>>

const definedParams = (query: Query | undefined): Record<string, string> => {
  const params: Record<string, string> = {}
  if (query !== undefined) {
    for (const [key, value] of Object.entries(query)) if (value !== undefined) params[key] = String(value)
  }
  return params
}

/**
 * Classifies an answer: 2xx decodes into `schema` (or stays bytes when
 * `schema` is undefined); anything else must be the network's error object.
 */
const classify = <A>(
  status: number,
  contentType: string,
  body: Uint8Array,
  decode: ((json: unknown) => Option.Option<A>) | undefined
): Effect.Effect<NetworkAnswer<A>, NetworkRefused | NetworkUnavailable> => {
  const unexpected = (detail: string) =>
    new NetworkUnavailable({ reason: "UnexpectedAnswer", detail, status, contentType, body })
  if (status >= 200 && status < 300) {
    if (decode === undefined) return Effect.succeed({ status, contentType, body, value: body as A })
    const json = parseJson(decoder.decode(body))
    if (Option.isNone(json)) return Effect.fail(unexpected(`HTTP ${status} answer is not JSON`))
    const value = decode(json.value)
    if (Option.isNone(value)) return Effect.fail(unexpected(`HTTP ${status} answer does not have the expected shape`))
    return Effect.succeed({ status, contentType, body, value: value.value })
  }
  const refusal = Option.flatMap(parseJson(decoder.decode(body)), decodeError)
  if (Option.isNone(refusal)) return Effect.fail(unexpected(`HTTP ${status} answer is not a network error object`))
  return Effect.fail(new NetworkRefused({ status, contentType, body, error: refusal.value.error }))
}

/** The adapter over whatever `HttpClient` is in context. */
export const make = (options: CloudApiOptions) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    // The network sees Parley's trace context (`traceparent`, `b3`) only when the operator enables propagation.
    const propagate = yield* TracePropagation
    const base = options.baseUrl.replace(/\/+$/, "")
    const timeout = Duration.fromInputUnsafe(options.timeout ?? Duration.seconds(30))

    /**
     * `<base>/<version>/<segments>`. The proxy validates the version segment it
     * forwards: a malformed one reaching here is a bug, not a network answer.
     */
    const urlOf = (access: Pick<NetworkAccess, "version">, segments: ReadonlyArray<string>): Effect.Effect<string> => {
      const version = access.version ?? DefaultApiVersion
      if (!isApiVersion(version)) return Effect.die(new Error(`not a version segment: ${JSON.stringify(version)}`))
      // A URL resolves `.`/`..` (even encoded), which would leave the object the caller was allowed to reach.
      if (segments.some((s) => s === "." || s === "..")) return Effect.die(new Error(`dot segment in ${segments.join("/")}`))
      return Effect.succeed(`${base}/${version}/${segments.map(encodeURIComponent).join("/")}`)
    }

    const deadline = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Duration.isFinite(timeout)
        ? Effect.timeoutOrElse(effect, {
          duration: timeout,
          orElse: () =>
            Effect.fail(
              new NetworkUnavailable({ reason: "Timeout", detail: `no answer within ${Duration.format(timeout)}` })
            )
        })
        : effect

    const execute = <A>(
      span: string,
      access: NetworkAccess | undefined,
      request: HttpClientRequest.HttpClientRequest,
      decode: ((json: unknown) => Option.Option<A>) | undefined
    ): Effect.Effect<NetworkAnswer<A>, NetworkRefused | NetworkUnavailable> =>
      client.execute(access === undefined ? request : HttpClientRequest.bearerToken(request, access.accessToken)).pipe(
        Effect.flatMap((response: HttpClientResponse.HttpClientResponse) =>
          Effect.map(response.arrayBuffer, (buffer) => ({
            status: response.status,
            contentType: response.headers["content-type"] ?? "",
            body: new Uint8Array(buffer)
          }))
        ),
        deadline,
        Effect.catchTag("HttpClientError", (error) =>
          Effect.fail(new NetworkUnavailable({ reason: "Transport", detail: error.message }))),
        Effect.flatMap(({ body, contentType, status }) => classify(status, contentType, body, decode)),
        // Without propagation the client's own span (its URL and headers as attributes) would only repeat this call's:
        // it is not made. Its stack trace would only ever point here.
        propagate
          ? Effect.provideService(HttpClient.TracerPropagationEnabled, true)
          : Effect.provideService(HttpClient.TracerDisabledWhen, noClientSpan),
        Effect.withSpan(span, undefined, { captureStackTrace: false })
      )

    // One decoder per answer's schema, made at its first call (not at every call: a send's is made once).
    const decoders = new Map<unknown, (json: unknown) => Option.Option<unknown>>()
    const json = <S extends Schema.ConstraintDecoder<unknown>>(schema: S): (json: unknown) => Option.Option<S["Type"]> => {
      let decode = decoders.get(schema)
      if (decode === undefined) decoders.set(schema, decode = Schema.decodeUnknownOption(schema))
      return decode as (json: unknown) => Option.Option<S["Type"]>
    }

    const call = <S extends Schema.ConstraintDecoder<unknown>>(
      span: string,
      schema: S,
      access: NetworkAccess,
      method: "GET" | "POST" | "DELETE",
      segments: ReadonlyArray<string>,
      options: { readonly query?: Query | undefined; readonly body?: NetworkBody | undefined } = {}
    ): Effect.Effect<NetworkAnswer<S["Type"]>, NetworkRefused | NetworkUnavailable> =>
      Effect.flatMap(urlOf(access, segments), (url) => {
        const made = HttpClientRequest.make(method)(url)
        // A send has no query: its request is not given an empty one to merge.
        const request = HttpClientRequest.acceptJson(
          options.query === undefined ? made : HttpClientRequest.setUrlParams(made, definedParams(options.query))
        )
        return execute(
          span,
          access,
          options.body === undefined
            ? request
            : HttpClientRequest.bodyUint8Array(request, bodyBytes(options.body), "application/json"),
          json(schema)
        )
      })

    const send = (access: NetworkAccess, phoneNumberId: string, envelope: NetworkBody) =>
      call("MessagingNetwork.send", SendAnswer, access, "POST", [phoneNumberId, "messages"], { body: envelope })

    return MessagingNetwork.of({
      send,
      markRead: (access, phoneNumberId, input) =>
        call("MessagingNetwork.markRead", SuccessAnswer, access, "POST", [phoneNumberId, "messages"], {
          body: {
            messaging_product: MessagingProduct,
            status: "read",
            message_id: input.messageId,
            ...(input.typingIndicator === true ? { typing_indicator: { type: "text" } } : {})
          }
        }),

      uploadMedia: (access, phoneNumberId, file: MediaFile) =>
        Effect.flatMap(urlOf(access, [phoneNumberId, "media"]), (url) => {
          const form = new FormData()
          form.append("messaging_product", MessagingProduct)
          form.append("type", file.mimeType)
          form.append("file", new Blob([new Uint8Array(file.bytes)], { type: file.mimeType }), file.filename)
          const request = HttpClientRequest.post(url).pipe(HttpClientRequest.bodyFormData(form), HttpClientRequest.acceptJson)
          return execute("MessagingNetwork.uploadMedia", access, request, json(MediaUploaded))
        }),
      uploadAsset: (access, file: MediaFile) =>
        call("MessagingNetwork.openUploadSession", UploadSession, access, "POST", ["app", "uploads"], {
          query: { file_name: file.filename, file_length: file.bytes.byteLength, file_type: file.mimeType }
        }).pipe(
          Effect.flatMap((session) => urlOf(access, [session.value.id])),
          Effect.flatMap((url) =>
            execute(
              "MessagingNetwork.uploadAsset",
              access,
              HttpClientRequest.post(url).pipe(
                HttpClientRequest.setHeader("file_offset", "0"),
                HttpClientRequest.bodyUint8Array(new Uint8Array(file.bytes), file.mimeType),
                HttpClientRequest.acceptJson
              ),
              json(UploadedAsset)
            )
          )
        ),
      getMedia: (access, mediaId, options) =>
        call("MessagingNetwork.getMedia", MediaInfo, access, "GET", [mediaId], {
          query: { phone_number_id: options?.phoneNumberId }
        }),
      deleteMedia: (access, mediaId, options) =>
        call("MessagingNetwork.deleteMedia", SuccessAnswer, access, "DELETE", [mediaId], {
          query: { phone_number_id: options?.phoneNumberId }
        }),
      downloadMedia: (access, url) =>
        execute<Uint8Array>("MessagingNetwork.downloadMedia", access, HttpClientRequest.get(url), undefined),

      listTemplates: (access, businessAccountId, query) =>
        call("MessagingNetwork.listTemplates", TemplatePage, access, "GET", [businessAccountId, "message_templates"], {
          query: { ...query }
        }),
      getTemplate: (access, templateId) =>
        call("MessagingNetwork.getTemplate", NetworkTemplate, access, "GET", [templateId]),
      createTemplate: (access, businessAccountId, definition) =>
        call("MessagingNetwork.createTemplate", TemplateCreated, access, "POST", [businessAccountId, "message_templates"], {
          body: definition
        }),
      editTemplate: (access, templateId, definition) =>
        call("MessagingNetwork.editTemplate", SuccessAnswer, access, "POST", [templateId], { body: definition }),
      deleteTemplate: (access, businessAccountId, target) =>
        call("MessagingNetwork.deleteTemplate", SuccessAnswer, access, "DELETE", [businessAccountId, "message_templates"], {
          query: { name: target.name, hsm_id: target.hsmId }
        }),

      listBlockedUsers: (access, phoneNumberId, query) =>
        call("MessagingNetwork.listBlockedUsers", BlockedUsersPage, access, "GET", [phoneNumberId, "block_users"], {
          query: { ...query }
        }),
      blockUsers: (access, phoneNumberId, body) =>
        call("MessagingNetwork.blockUsers", BlockUsersAnswer, access, "POST", [phoneNumberId, "block_users"], { body }),
      unblockUsers: (access, phoneNumberId, body) =>
        call("MessagingNetwork.unblockUsers", BlockUsersAnswer, access, "DELETE", [phoneNumberId, "block_users"], { body }),

      updateFlowMetadata: (access, flowId, body) =>
        call("MessagingNetwork.updateFlowMetadata", SuccessAnswer, access, "POST", [flowId], { body }),

      getUsername: (access, phoneNumberId) =>
        call("MessagingNetwork.getUsername", UsernameAnswer, access, "GET", [phoneNumberId, "username"]),
      setUsername: (access, phoneNumberId, body) =>
        call("MessagingNetwork.setUsername", UsernameAnswer, access, "POST", [phoneNumberId, "username"], { body }),
      deleteUsername: (access, phoneNumberId) =>
        call("MessagingNetwork.deleteUsername", SuccessAnswer, access, "DELETE", [phoneNumberId, "username"]),
      usernameSuggestions: (access, phoneNumberId) =>
        call("MessagingNetwork.usernameSuggestions", UsernameSuggestions, access, "GET", [
          phoneNumberId,
          "username_suggestions"
        ]),

      getPhoneNumber: (access, phoneNumberId, options) =>
        call("MessagingNetwork.getPhoneNumber", PhoneNumberFacts, access, "GET", [phoneNumberId], {
          query: { fields: (options?.fields ?? PhoneNumberFields).join(",") }
        }),
      listPhoneNumbers: (access, businessAccountId) =>
        call("MessagingNetwork.listPhoneNumbers", PhoneNumberPage, access, "GET", [businessAccountId, "phone_numbers"], {
          query: { fields: PhoneNumberFields.join(",") }
        }),
      getHealthStatus: (access, phoneNumberId) =>
        call("MessagingNetwork.getHealthStatus", HealthStatusAnswer, access, "GET", [phoneNumberId], {
          query: { fields: "health_status" }
        }),
      listSubscribedApps: (access, businessAccountId) =>
        call("MessagingNetwork.listSubscribedApps", SubscribedApps, access, "GET", [businessAccountId, "subscribed_apps"]),
      subscribeApp: (access, businessAccountId, options) =>
        call("MessagingNetwork.subscribeApp", SuccessAnswer, access, "POST", [businessAccountId, "subscribed_apps"], {
          body: {
            ...(options?.overrideCallbackUri !== undefined ? { override_callback_uri: options.overrideCallbackUri } : {}),
            ...(options?.verifyToken !== undefined ? { verify_token: options.verifyToken } : {})
          }
        }),
      unsubscribeApp: (access, businessAccountId) =>
        call("MessagingNetwork.unsubscribeApp", SuccessAnswer, access, "DELETE", [businessAccountId, "subscribed_apps"]),
      requestDisplayName: (access, phoneNumberId, newDisplayName) =>
        call("MessagingNetwork.requestDisplayName", SuccessAnswer, access, "POST", [phoneNumberId], {
          body: { new_display_name: newDisplayName }
        }),
      releaseNumber: (access, phoneNumberId) =>
        call("MessagingNetwork.releaseNumber", SuccessAnswer, access, "POST", [phoneNumberId, "deregister"], { body: {} }),

      exchangeSignupCode: (exchange) =>
        Effect.flatMap(urlOf({ version: exchange.version }, ["oauth", "access_token"]), (url) =>
          execute(
            "MessagingNetwork.exchangeSignupCode",
            undefined,
            HttpClientRequest.get(url).pipe(
              // The secret stays `Redacted` in the request, so an inspected or traced request does not show it.
              HttpClientRequest.setUrlParams({
                client_id: exchange.appId,
                client_secret: exchange.appSecret,
                code: exchange.code,
                redirect_uri: exchange.redirectUri
              }),
              HttpClientRequest.acceptJson
            ),
            json(SignupToken)
          )),

      forward: (access, { body, contentType, method, path, query }) =>
        Effect.flatMap(urlOf(access, path.split("/").filter((s) => s.length > 0)), (url) => {
          const request = HttpClientRequest.make(method)(url).pipe(
            HttpClientRequest.setUrlParams(new URLSearchParams(query)),
            HttpClientRequest.acceptJson
          )
          return execute<Uint8Array>(
            "MessagingNetwork.forward",
            access,
            body === undefined || body.byteLength === 0
              ? request
              : HttpClientRequest.bodyUint8Array(request, body, contentType ?? "application/json"),
            undefined
          )
        })
    })
  })

/** The adapter as a layer over the `HttpClient` the caller provides (`FetchHttpClient.layer`, `NodeHttpClient`...). */
export const layer = (options: CloudApiOptions): Layer.Layer<MessagingNetwork, never, HttpClient.HttpClient> =>
  Layer.effect(MessagingNetwork, make(options))

/** `PARLEY_UPSTREAM_URL`, defaulting to the real network's Graph host. */
export const UpstreamUrl = Config.String("PARLEY_UPSTREAM_URL").pipe(Config.withDefault(DefaultBaseUrl))

/** The adapter with its base from `PARLEY_UPSTREAM_URL`. */
export const layerConfig: Layer.Layer<MessagingNetwork, Config.ConfigError, HttpClient.HttpClient> = Layer.effect(
  MessagingNetwork,
  Effect.gen(function*() {
    return yield* make({ baseUrl: yield* UpstreamUrl })
  })
)

/** A redacted token, for callers holding a plain string (tests, the simulator bootstrap). */
export const token = (value: string): Redacted.Redacted<string> => Redacted.make(value)
