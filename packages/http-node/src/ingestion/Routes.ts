/**
 * Upstream webhook ingestion on HTTP (decisions 4.11):
 * `{platform_url}/msg/upstream/webhook` (the host's upstream app) and
 * `.../webhook/<msg_config_id>` (a customer's own app). GET answers the
 * handshake's challenge as `text/plain`; POST hands the raw bytes and
 * `X-Hub-Signature-256` to `UpstreamIngestion.receive` and answers 200 once
 * they are stored. Translation only: the checks live in core, where the
 * simulator's in-process sink reaches them too.
 */
import { MAX_UPSTREAM_BODY_BYTES, UpstreamIngestion } from "@parley/core"
import { ByteSize, Effect, Layer, Option } from "effect"
import { HttpIncomingMessage, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"

const PATH = "/platform/v1/msg/upstream/webhook"

const errorResponse = (status: number, error: string) => HttpServerResponse.jsonUnsafe({ error }, { status })

const handshake = (ingestion: UpstreamIngestion["Service"], withConfig: boolean) =>
(request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const configId = withConfig ? (yield* HttpRouter.params)["msg_config_id"] : undefined
    const query = Option.match(HttpServerRequest.toURL(request), {
      onNone: () => new URLSearchParams(),
      onSome: (url) => url.searchParams
    })
    const challenge = yield* ingestion.handshake({
      mode: query.get("hub.mode") ?? undefined,
      verifyToken: query.get("hub.verify_token") ?? undefined,
      challenge: query.get("hub.challenge") ?? undefined
    }, configId)
    return HttpServerResponse.text(challenge, { contentType: "text/plain" })
  }).pipe(Effect.catchTag("Forbidden", (e) => Effect.succeed(errorResponse(403, e.error))))

const receive = (ingestion: UpstreamIngestion["Service"], withConfig: boolean) =>
(request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const configId = withConfig ? (yield* HttpRouter.params)["msg_config_id"] : undefined
    const body = new Uint8Array(yield* request.arrayBuffer)
    yield* ingestion.receive(body, request.headers["x-hub-signature-256"], configId)
    return HttpServerResponse.empty({ status: 200 })
  }).pipe(
    Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(MAX_UPSTREAM_BODY_BYTES)),
    Effect.catchTags({
      Unauthorized: (e) => Effect.succeed(errorResponse(401, e.error)),
      NotFound: (e) => Effect.succeed(errorResponse(404, e.error)),
      HttpServerError: (e) =>
        Effect.succeed(
          e.reason._tag === "RequestParseError" && e.reason.reason === "BodyTooLarge"
            ? errorResponse(413, "Request body too large")
            : errorResponse(400, "Request body could not be read")
        )
    })
  )

/** What the ingestion routes serve (the host's 405 answers name them). */
export const ROUTES = [
  { method: "GET", path: PATH },
  { method: "GET", path: `${PATH}/:msg_config_id` },
  { method: "POST", path: PATH },
  { method: "POST", path: `${PATH}/:msg_config_id` }
] as const

/** The four ingestion routes; needs `UpstreamIngestion`. */
export const routes: Layer.Layer<never, never, HttpRouter.HttpRouter | UpstreamIngestion> = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const ingestion = yield* UpstreamIngestion
    yield* router.add("GET", PATH, handshake(ingestion, false))
    yield* router.add("GET", `${PATH}/:msg_config_id`, handshake(ingestion, true))
    yield* router.add("POST", PATH, receive(ingestion, false))
    yield* router.add("POST", `${PATH}/:msg_config_id`, receive(ingestion, true))
  })
)
