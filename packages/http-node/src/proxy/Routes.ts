/**
 * The messaging proxy on HTTP (decisions 4.10): `{proxy_url}` is `/proxy`,
 * optionally followed by a version segment `vNN.N` that is forwarded to the
 * network as given. Every request is served raw by one pass-through
 * (`dispatch`), so bodies reach the network and come back byte for byte
 * (toolchain: HTTP pass-through): the documented routes of the contract
 * (`MessagingProxyApi`, `ProxyHandlers`) and every other `/proxy/*` path. Authentication is the API key of decisions 5
 * (`X-API-Key` or `Authorization: Bearer`); a failure answers
 * 401 `{ "error": "Invalid API key" }`.
 *
 * Served: `POST /<phone_number_id>/messages` (send and mark read),
 * `GET /<phone_number_id>/messages[/<message_id>]` and
 * `GET /<phone_number_id>/conversations[/<conversation_id>]`,
 * `GET /<phone_number_id>/contacts[/<wa_id>]`, `GET /<id>` (a number's fields, a
 * template, media, ...), media (`POST /<phone_number_id>/media`,
 * `GET`/`DELETE /<media_id>[?phone_number_id=]`,
 * and the token-carrying `GET /proxy/media_download/<token>` behind `download_url`),
 * templates, a business account's `phone_numbers` and `subscribed_apps`, block
 * users, usernames and interactive form metadata (`POST /<flow_id>`).
 * Any other request on a number of the project's (business profile, settings,
 * ...) is forwarded to the network unchanged with the number's token.
 */
import {
  ApiRateLimits,
  invalidParameter,
  MessagingProxy,
  ParleyApi,
  Projects,
  PROXY_METHODS,
  type ProxyAnswer,
  PublicUrl,
  unknownObject,
  unsupportedMethod
} from "@parley/core"
import { ByteSize, Effect, Layer, Option } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { HttpIncomingMessage, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { presentedKey } from "../handlers/Authentication.ts"
import { Readiness, unknownKey } from "../Readiness.ts"
import { admitRequest } from "../RateLimited.ts"
import { setApiKey, setProjectId } from "../RequestInfo.ts"

export const PROXY_PREFIX = "/proxy"

/** Send envelopes are small JSON documents; media goes through `/media`. */
export const MAX_SEND_BODY_BYTES = 1024 * 1024

const VERSION = /^v\d+\.\d+$/

const errorResponse = (status: number, error: string) => HttpServerResponse.jsonUnsafe({ error }, { status })

const answer = (a: ProxyAnswer) =>
  HttpServerResponse.uint8Array(a.body, {
    status: a.status,
    ...(a.contentType !== "" ? { contentType: a.contentType } : {})
  })

/** The path after `/proxy`, split into the version segment (if any) and the rest. */
export const splitPath = (pathname: string): { readonly version: string | undefined; readonly segments: ReadonlyArray<string> } => {
  const rest = pathname.slice(PROXY_PREFIX.length).split("/").filter((s) => s.length > 0).map((s) => {
    try {
      return decodeURIComponent(s)
    } catch {
      return s
    }
  })
  if (rest.length > 0 && VERSION.test(rest[0]!)) return { version: rest[0], segments: rest.slice(1) }
  return { version: undefined, segments: rest }
}

/** The network takes documents up to 100 MB (decisions 8.3); the multipart framing needs a little more. */
export const MAX_MEDIA_BODY_BYTES = 100 * 1024 * 1024 + 1024 * 1024

/** Path segment of the service-hosted media downloads: `/proxy/media_download/<token>` (no API key). */
export const DOWNLOAD_SEGMENT = "media_download"

const readBody = (request: HttpServerRequest.HttpServerRequest, limit: number) =>
  request.arrayBuffer.pipe(
    Effect.map((buffer) => new Uint8Array(buffer)),
    Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(limit))
  )

/** `messaging_product`, `file` and optional `type` of a multipart upload, read with the platform's form parser. */
const readUpload = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const bytes = yield* readBody(request, MAX_MEDIA_BODY_BYTES)
    const contentType = request.headers["content-type"] ?? ""
    const form = yield* Effect.promise(() =>
      new Response(bytes as BodyInit, { headers: { "content-type": contentType } }).formData().catch(() => undefined)
    )
    if (form === undefined) return undefined
    const file = form.get("file")
    if (file === null || typeof file === "string") return { product: form.get("messaging_product"), file: undefined }
    const type = form.get("type")
    return {
      product: form.get("messaging_product"),
      file: {
        bytes: new Uint8Array(yield* Effect.promise(() => file.arrayBuffer())),
        mimeType: typeof type === "string" && type.trim() !== "" ? type.trim() : file.type || "application/octet-stream",
        filename: file.name || "file"
      }
    }
  })

const dispatch = (
  projects: Projects["Service"],
  limits: ApiRateLimits["Service"],
  proxy: MessagingProxy["Service"],
  publicUrl: string,
  readiness: Readiness["Service"]
) =>
(request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const url = new URL(request.url, "http://proxy.invalid")
    const { segments, version } = splitPath(url.pathname)
    const method = request.method
    const base = publicUrl.endsWith("/") ? publicUrl : `${publicUrl}/`
    // The request's own absolute address (public URL, version segment and filters kept): lists link their pages here.
    // Made only by the routes that link pages, not for every send.
    const location = () => new URL(url.pathname.replace(/^\/+/, "") + url.search, base)
    // The download link carries its own token: no API key (spec "Authentication").
    if (method === "GET" && version === undefined && segments.length === 2 && segments[0] === DOWNLOAD_SEGMENT) {
      return answer(yield* proxy.download(segments[1]!))
    }
    const key = presentedKey(request)
    if (key === null || key === undefined) return errorResponse(401, "Invalid API key")
    const principal = yield* projects.authenticate(key).pipe(Effect.option)
    if (principal._tag === "None") return yield* unknownKey(readiness, Effect.succeed(errorResponse(401, "Invalid API key")))
    const projectId = principal.value.project.id
    setProjectId(request, projectId)
    setApiKey(request, principal.value.apiKey)
    const refused = yield* admitRequest(limits, principal.value)
    if (Option.isSome(refused)) return refused.value
    // A method the network does not serve is refused here, not forwarded for a 400 (issue 29 §4).
    if (!(PROXY_METHODS as ReadonlyArray<string>).includes(method)) {
      return answer(unsupportedMethod(method)).pipe(HttpServerResponse.setHeader("allow", PROXY_METHODS.join(", ")))
    }
    // Dot segments (`%2e%2e` too) name no object of the network's; resolved into its address they would name another
    // one. The URL parser has already resolved them in `url`, so the path as sent is what shows them.
    const sent = request.url.split("?", 1)[0]!.split("/").map((s) => s.replace(/%2e/gi, "."))
    if (!url.pathname.startsWith(PROXY_PREFIX) || [...segments, ...sent].some((s) => s === "." || s === "..")) {
      return answer(invalidParameter(400, "Unsupported request: the path names no object"))
    }

    if (segments.length === 2 && segments[1] === "messages" && method === "POST") {
      const body = yield* readBody(request, MAX_SEND_BODY_BYTES)
      return answer(yield* proxy.send(projectId, segments[0]!, body, version))
    }
    if (segments.length === 2 && segments[1] === "media" && method === "POST") {
      const owned = yield* proxy.number(projectId, segments[0]!)
      if (owned._tag === "None") return answer(unknownObject(segments[0]!))
      const upload = yield* readUpload(request)
      if (upload === undefined) return answer(invalidParameter(400, "The body must be multipart/form-data"))
      if (typeof upload.product !== "string" || upload.product === "") {
        return answer(invalidParameter(400, "The parameter messaging_product is required."))
      }
      if (upload.file === undefined) return answer(invalidParameter(400, "The parameter file is required."))
      return answer(yield* proxy.uploadMedia(projectId, segments[0]!, upload.file, version))
    }
    if (segments.length === 1 && method === "POST") {
      const body = yield* readBody(request, MAX_SEND_BODY_BYTES)
      return answer(yield* proxy.flowMetadata(projectId, segments[0]!, body, version))
    }
    if (segments.length === 1 && (method === "GET" || method === "DELETE")) {
      const phoneNumberId = url.searchParams.get("phone_number_id") ?? undefined
      const downloadBase = `${base}proxy/${DOWNLOAD_SEGMENT}/`
      if (method === "DELETE") return answer(yield* proxy.deleteMedia(projectId, segments[0]!, phoneNumberId, version))
      // A media read names its number; any other id is a number, a template, media, ... of the project's.
      return answer(
        phoneNumberId !== undefined
          ? yield* proxy.mediaUrl(projectId, segments[0]!, phoneNumberId, downloadBase, version)
          : yield* proxy.readObject(projectId, segments[0]!, url.searchParams, downloadBase, version)
      )
    }
    if (segments.length >= 2 && segments[1] === "message_templates") {
      const [waba, , templateId] = segments as [string, string, string | undefined]
      const q = (name: string) => url.searchParams.get(name) ?? undefined
      if (segments.length === 3 && method === "GET") return answer(yield* proxy.getTemplate(projectId, waba, templateId!, version))
      if (segments.length === 2 && method === "GET") return answer(yield* proxy.listTemplates(projectId, waba, url.searchParams, location(), version))
      if (segments.length === 2 && method === "POST") {
        const body = yield* readBody(request, MAX_SEND_BODY_BYTES)
        return answer(yield* proxy.saveTemplate(projectId, waba, q("hsm_id"), body, version))
      }
      if (segments.length === 2 && method === "DELETE") {
        return answer(yield* proxy.deleteTemplate(projectId, waba, { name: q("name"), hsmId: q("hsm_id") }, version))
      }
    }
    if (segments.length === 2 && segments[1] === "phone_numbers" && method === "GET") {
      return answer(yield* proxy.accountNumbers(projectId, segments[0]!, url.searchParams, location(), version))
    }
    if (segments.length === 2 && segments[1] === "subscribed_apps") {
      return answer(yield* proxy.subscribedApps(projectId, segments[0]!, method, version))
    }
    if (segments.length === 2 && segments[1] === "block_users" && (method === "GET" || method === "POST" || method === "DELETE")) {
      const body = method === "GET" ? new Uint8Array() : yield* readBody(request, MAX_SEND_BODY_BYTES)
      return answer(yield* proxy.blockUsers(projectId, segments[0]!, method, url.searchParams, location(), body, version))
    }
    if (segments.length === 2 && segments[1] === "username" && (method === "GET" || method === "POST" || method === "DELETE")) {
      const body = method === "POST" ? yield* readBody(request, MAX_SEND_BODY_BYTES) : new Uint8Array()
      return answer(yield* proxy.username(projectId, segments[0]!, method, body, version))
    }
    if (segments.length === 2 && segments[1] === "username_suggestions" && method === "GET") {
      return answer(yield* proxy.username(projectId, segments[0]!, "SUGGEST", new Uint8Array(), version))
    }
    if (method === "GET" && segments.length >= 2 && segments.length <= 3) {
      const [pnid, collection, id] = segments as [string, string, string | undefined]
      const query = url.searchParams
      if (collection === "messages") {
        return answer(
          id === undefined
            ? yield* proxy.listMessages(projectId, pnid, query, location())
            : yield* proxy.getMessage(projectId, pnid, id, query)
        )
      }
      if (collection === "contacts") {
        return answer(
          id === undefined
            ? yield* proxy.listContacts(projectId, pnid, query, location())
            : yield* proxy.getContact(projectId, pnid, id)
        )
      }
      if (collection === "conversations") {
        return answer(
          id === undefined
            ? yield* proxy.listConversations(projectId, pnid, query, location())
            : yield* proxy.getConversation(projectId, pnid, id, query)
        )
      }
    }
    if (segments.length >= 1) {
      // An id the project does not hold answers 404 before anything else (decisions 4.10), even before its body is read.
      const owned = yield* proxy.number(projectId, segments[0]!)
      if (owned._tag === "None") return answer(unknownObject(segments[0]!))
      // Any other edge of the number goes to the network as is.
      const body = method === "POST" || method === "DELETE" ? yield* readBody(request, MAX_SEND_BODY_BYTES) : undefined
      return answer(
        yield* proxy.forward(
          projectId,
          segments[0]!,
          method,
          segments.slice(1),
          url.searchParams,
          location(),
          body,
          request.headers["content-type"],
          version
        )
      )
    }
    return answer(invalidParameter(400, "Unsupported request: the path names no object"))
  }).pipe(
    Effect.catchTag("HttpServerError", (e) =>
      Effect.succeed(
        e.reason._tag === "RequestParseError" && e.reason.reason === "BodyTooLarge"
          ? errorResponse(413, "Request body too large")
          : errorResponse(400, "Request body could not be read")
      ))
  )

/** Filename for `Content-Disposition`: ASCII fallback plus the UTF-8 form (RFC 6266). */
const disposition = (filename: string) => {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, "_")
  return `inline; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`
}

/** `GET /platform/v1/msg/media/<id>/content`: the kept copy behind `ext.media_url` (X-API-Key), byte for byte. */
const keptMedia = (
  projects: Projects["Service"],
  limits: ApiRateLimits["Service"],
  proxy: MessagingProxy["Service"],
  readiness: Readiness["Service"]
) =>
(request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const key = presentedKey(request)
    if (key === null || key === undefined) return errorResponse(401, "Invalid API key")
    const principal = yield* projects.authenticate(key).pipe(Effect.option)
    if (principal._tag === "None") return yield* unknownKey(readiness, Effect.succeed(errorResponse(401, "Invalid API key")))
    setProjectId(request, principal.value.project.id)
    setApiKey(request, principal.value.apiKey)
    const refused = yield* admitRequest(limits, principal.value)
    if (Option.isSome(refused)) return refused.value
    const id = (yield* HttpRouter.params)["media_id"] ?? ""
    const found = yield* proxy.keptMedia(principal.value.project.id, id)
    if (found._tag === "None") return errorResponse(404, "Media not found")
    return HttpServerResponse.uint8Array(found.value.bytes, {
      status: 200,
      contentType: found.value.content_type,
      headers: { "content-disposition": disposition(found.value.filename), "cache-control": "private, no-store" }
    })
  })

/**
 * The documented proxy endpoints (`MessagingProxyApi`): each is served by the same pass-through as every other
 * `{proxy_url}` request, so the contract adds documentation and client methods, never a second behaviour.
 */
export const ProxyHandlers = HttpApiBuilder.group(
  ParleyApi,
  "proxy",
  Effect.fn(function*(handlers) {
    const handler = dispatch(yield* Projects, yield* ApiRateLimits, yield* MessagingProxy, yield* PublicUrl, yield* Readiness)
    const raw = ({ request }: { readonly request: HttpServerRequest.HttpServerRequest }) => handler(request)
    return handlers
      .handleRaw("send", raw)
      .handleRaw("listMessages", raw)
      .handleRaw("getMessage", raw)
      .handleRaw("listConversations", raw)
      .handleRaw("getConversation", raw)
      .handleRaw("listContacts", raw)
      .handleRaw("getMedia", raw)
      .handleRaw("deleteMedia", raw)
      .handleRaw("listTemplates", raw)
      .handleRaw("createTemplate", raw)
      .handleRaw("deleteTemplate", raw)
      .handleRaw("getTemplate", raw)
      .handleRaw("uploadMedia", raw)
      .handleRaw("listBlockedUsers", raw)
      .handleRaw("blockUsers", raw)
      .handleRaw("unblockUsers", raw)
      .handleRaw("getUsername", raw)
      .handleRaw("setUsername", raw)
      .handleRaw("deleteUsername", raw)
      .handleRaw("usernameSuggestions", raw)
      .handleRaw("updateFlowMetadata", raw)
  })
)

/** Every other proxy route, and the kept inbound media; needs `Projects`, `ApiRateLimits` and `MessagingProxy`. */
export const routes: Layer.Layer<never, never, HttpRouter.HttpRouter | Projects | ApiRateLimits | MessagingProxy | Readiness> = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const handler = dispatch(yield* Projects, yield* ApiRateLimits, yield* MessagingProxy, yield* PublicUrl, yield* Readiness)
    yield* router.add("*", "/proxy/*", handler)
    yield* router.add("GET", "/platform/v1/msg/media/:media_id/content", keptMedia(yield* Projects, yield* ApiRateLimits, yield* MessagingProxy, yield* Readiness))
  })
)
