/**
 * `POST /msg/media` (decisions 4.8, 8.3): fetches a file from a URL the
 * caller gives and uploads it to the network for one of the project's numbers,
 * answering the network's media id.
 *
 * The fetch is SSRF-safe: every hop (the source and each redirect, at most
 * 5) goes through `WebhookHttp.fetch`, which refuses private, loopback and
 * link-local addresses after resolving the name and connects to the address
 * it checked; only http(s) hops are followed. The declared type is the
 * caller's `mime_type`, else the source's `Content-Type`; the body is read up
 * to that type's limit (the largest, 100 MB, when there is none) and never
 * held past it. The bytes' signature must agree with that type; the network's
 * type and size limits then apply (413 over them). The upload is the proxy's
 * own (`ProxyMedia.uploadMedia`): the same checks, and the media remembered
 * with its business account.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { createHash } from "node:crypto"
import type { Principal } from "../projects/Projects.ts"
import { MessageConfigsRepo } from "./numbers/MessageConfigsRepo.ts"
import { MessagingNetwork } from "../network/MessagingNetwork.ts"
import { WebhookHttp, type WebhookHttpBytes, type WebhookHttpError, type WebhookHttpFetch } from "../ports/WebhookHttp.ts"
import { BadGateway, BadRequest, Forbidden, type NotFound, notFound, PayloadTooLarge } from "../shared/ApiError.ts"
import { Ids } from "../shared/Ids.ts"
import { WebhookSettings } from "../shared/OutboundSettings.ts"
import { makeProxyMedia } from "./ProxyMedia.ts"
import { essence, maxMediaBytes, mediaLimit } from "../network/Media.ts"

/** `media_ingest` (decisions 4.8). */
export const MediaIngestInput = Schema.Struct({
  phone_number_id: Schema.String,
  source: Schema.String,
  /** `upstream_media` (default): a media id for sends; `upstream_resumable_asset`: a handle for template headers. */
  delivery: Schema.optionalKey(Schema.Literals(["upstream_media", "upstream_resumable_asset"])),
  filename: Schema.optionalKey(Schema.NullOr(Schema.String)),
  mime_type: Schema.optionalKey(Schema.NullOr(Schema.String))
})
export type MediaIngestInput = typeof MediaIngestInput.Type

export const MediaIngestResult = Schema.Struct({
  ingest_id: Schema.String,
  target: Schema.Union([
    Schema.Struct({ kind: Schema.Literal("upstream_media"), media_id: Schema.String }),
    Schema.Struct({ kind: Schema.Literal("upstream_resumable_asset"), handle: Schema.String })
  ]),
  resource: Schema.Struct({
    filename: Schema.String,
    mime_type: Schema.String,
    size_bytes: Schema.Number,
    sha256: Schema.String,
    source_url: Schema.String
  })
})
export type MediaIngestResult = typeof MediaIngestResult.Type

/** Redirects followed from the source; one more is refused. */
export const MEDIA_INGEST_MAX_REDIRECTS = 5
/** Each hop's whole exchange. */
export const MEDIA_INGEST_HOP_TIMEOUT_MS = 30_000

const REDIRECTS = new Set([301, 302, 303, 307, 308])

/**
 * The family of a file by its first bytes (its signature); undefined when it has none this service knows (text,
 * most other documents).
 */
export const sniffFamily = (bytes: Uint8Array): string | undefined => {
  const ascii = (from: number, to: number) => Buffer.from(bytes.subarray(from, to)).toString("latin1")
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "jpeg"
  if (ascii(0, 8) === "\x89PNG\r\n\x1a\n") return "png"
  if (ascii(0, 4) === "RIFF" && ascii(8, 12) === "WEBP") return "webp"
  if (ascii(0, 5) === "%PDF-") return "pdf"
  if (ascii(0, 4) === "OggS") return "ogg"
  if (ascii(0, 5) === "#!AMR") return "amr"
  if (ascii(4, 8) === "ftyp") return "isobmff"
  if (ascii(0, 3) === "ID3") return "mp3"
  if (bytes[0] === 0xff && bytes[1] !== undefined && (bytes[1] & 0xe0) === 0xe0) {
    // An MPEG audio frame: layer bits 00 are an AAC ADTS stream, anything else MP3.
    return (bytes[1] & 0x06) === 0 ? "aac" : "mp3"
  }
  if (ascii(0, 4) === "PK\x03\x04") return "zip"
  if (bytes[0] === 0xd0 && bytes[1] === 0xcf && bytes[2] === 0x11 && bytes[3] === 0xe0) return "ole"
  return undefined
}

/** The family a declared type's bytes must have; undefined for types without a signature (anything goes). */
const familyOf = (type: string): string | undefined => {
  if (type === "image/jpeg") return "jpeg"
  if (type === "image/png") return "png"
  if (type === "image/webp") return "webp"
  if (type === "application/pdf") return "pdf"
  if (type === "audio/ogg") return "ogg"
  if (type === "audio/amr") return "amr"
  if (type === "audio/mpeg") return "mp3"
  if (type === "audio/aac") return "aac"
  if (type === "video/mp4" || type === "video/3gpp" || type === "audio/mp4") return "isobmff"
  if (type.startsWith("application/vnd.openxmlformats-officedocument.")) return "zip"
  if (["application/msword", "application/vnd.ms-excel", "application/vnd.ms-powerpoint"].includes(type)) return "ole"
  if (type.startsWith("text/")) return "none"
  return undefined
}

const badSource = (message: string) =>
  new BadRequest({ error: `media_ingest.source ${message}`, details: [{ path: "media_ingest.source", message }] })

const fetchFailure = (error: WebhookHttpError) =>
  error.reason === "private_address"
    ? new Forbidden({
      error: "media_ingest.source resolves to a private, loopback or link-local address",
      code: "private_address",
      details: [{ path: "media_ingest.source", message: "resolves to a private address" }]
    })
    : badSource(`could not be fetched: ${error.message}`)

const unsupported = (type: string) =>
  new BadRequest({
    error: `media_ingest.mime_type ${type} is not a type the network accepts`,
    details: [{ path: "media_ingest.mime_type", message: "unsupported type" }]
  })

const headerType = (headers: Readonly<Record<string, string>>) => {
  const header = headers["content-type"]
  return header === undefined || header.trim() === "" ? undefined : essence(header)
}

/**
 * The most bytes worth reading for a type: its limit (a sticker's animated one, the larger), the largest the network
 * takes when the type is unknown or not taken at all (then refused after).
 */
const capOf = (type: string | undefined) =>
  type === undefined
    ? maxMediaBytes
    : type === "image/webp"
    ? 500 * 1024
    : mediaLimit(type, new Uint8Array())?.limit ?? maxMediaBytes

const httpUrl = (value: string) => URL.canParse(value) && ["http:", "https:"].includes(new URL(value).protocol)

/** The last path segment, percent-decoded without ever throwing (bytes that are not UTF-8 become U+FFFD). */
const filenameOf = (url: string) => {
  const segment = new URL(url).pathname.split("/").pop() ?? ""
  const bytes = segment.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
  const name = Buffer.from(bytes, "latin1").toString("utf8")
  return name.trim() === "" ? "file" : name
}

export class MediaIngest extends Context.Service<MediaIngest, {
  readonly ingest: (
    principal: Principal,
    input: MediaIngestInput
  ) => Effect.Effect<MediaIngestResult, BadRequest | Forbidden | NotFound | PayloadTooLarge | BadGateway>
}>()("@parley/core/messaging/MediaIngest") {
  static readonly layer = Layer.effect(
    MediaIngest,
    Effect.gen(function*() {
      const configs = yield* MessageConfigsRepo
      const http = yield* WebhookHttp
      const settings = yield* WebhookSettings
      const proxyMedia = yield* makeProxyMedia
      const ids = yield* Ids
      const network = yield* MessagingNetwork

      const refusedUpload = (msgConfigId: string, status: number | undefined) =>
        Effect.logWarning("The network refused an ingested upload").pipe(
          Effect.annotateLogs({ status: status ?? "no answer", msg_config_id: msgConfigId }),
          Effect.andThen(Effect.fail(
            new BadGateway({
              error: status === undefined
                ? "The messaging network could not be reached"
                : `The network refused the upload (HTTP ${status})`,
              code: "upstream_error"
            })
          ))
        )

      /** The source, redirects followed hop by hop, each one checked again. */
      const download = Effect.fnUntraced(function*(source: string, maxBodyBytes: WebhookHttpFetch["maxBodyBytes"]) {
        let url = source
        for (let hop = 0; hop <= MEDIA_INGEST_MAX_REDIRECTS; hop++) {
          const answer: WebhookHttpBytes = yield* http.fetch({
            url,
            timeoutMs: MEDIA_INGEST_HOP_TIMEOUT_MS,
            allowPrivate: settings.allowPrivateUrls,
            maxBodyBytes
          }).pipe(Effect.mapError(fetchFailure))
          const location = answer.headers["location"]
          if (!REDIRECTS.has(answer.status) || location === undefined) return { answer, url }
          if (!URL.canParse(location, url)) return yield* badSource(`redirected to an invalid address`)
          const next = new URL(location, url).toString()
          if (!httpUrl(next)) return yield* badSource(`redirected to a non-http(s) address`)
          url = next
        }
        return yield* badSource(`redirected more than ${MEDIA_INGEST_MAX_REDIRECTS} times`)
      })

      const ingest = Effect.fn("MediaIngest.ingest")(function*(principal: Principal, input: MediaIngestInput) {
        const found = yield* configs.findByPhoneNumberId(input.phone_number_id)
        if (Option.isNone(found) || found.value.project_id !== principal.project.id) return yield* notFound("Phone number", input.phone_number_id)
        const config = found.value
        if (config.kind === "sandbox") {
          return yield* new Forbidden({ error: "Media ingest is not available on sandbox numbers", code: "sandbox" })
        }
        if (!httpUrl(input.source)) return yield* badSource("must be an http(s) URL")
        const given = input.mime_type === undefined || input.mime_type === null || input.mime_type.trim() === ""
          ? undefined
          : essence(input.mime_type)
        if (given !== undefined && mediaLimit(given, new Uint8Array()) === undefined) return yield* unsupported(given)
        // Read no further than the declared type (the caller's, else the answer's Content-Type) may be.
        const { answer, url } = yield* download(input.source, (headers) => capOf(given ?? headerType(headers)))
        if (answer.status < 200 || answer.status > 299) return yield* badSource(`answered HTTP ${answer.status}`)
        const sniffed = sniffFamily(answer.body)
        const type = given ?? headerType(answer.headers) ?? "application/octet-stream"
        const expected = familyOf(type)
        if (expected !== undefined && expected !== (sniffed ?? "none")) {
          return yield* new BadRequest({
            error: `media_ingest.source content does not match its type ${type}`,
            code: "type_mismatch",
            details: [{ path: "media_ingest.mime_type", message: `the bytes are not ${type}` }]
          })
        }
        const allowed = mediaLimit(type, answer.body)
        if (allowed === undefined) return yield* unsupported(type)
        if (answer.truncated || answer.body.byteLength > allowed.limit) {
          return yield* new PayloadTooLarge({
            error: `media_ingest.source is larger than the ${allowed.limit} bytes a ${allowed.kind} may have`
          })
        }
        if (answer.body.byteLength === 0) return yield* badSource("answered an empty file")
        const filename = input.filename !== undefined && input.filename !== null && input.filename.trim() !== ""
          ? input.filename.trim()
          : filenameOf(url)
        const file = { bytes: answer.body, mimeType: type, filename }
        const target = input.delivery === "upstream_resumable_asset"
          ? yield* network.uploadAsset({ accessToken: config.access_token }, file).pipe(
            Effect.map((uploaded) => ({ kind: "upstream_resumable_asset" as const, handle: uploaded.value.h })),
            Effect.catch((error) => refusedUpload(config.id, error._tag === "NetworkRefused" ? error.status : undefined))
          )
          : yield* proxyMedia.uploadMedia(principal.project.id, config.phone_number_id, file).pipe(
            Effect.flatMap((uploaded) => {
              const body = uploaded.status === 200
                ? Schema.decodeUnknownOption(Schema.fromJsonString(Schema.Struct({ id: Schema.String })))(
                  Buffer.from(uploaded.body).toString("utf8")
                )
                : Option.none()
              return Option.isSome(body)
                ? Effect.succeed({ kind: "upstream_media" as const, media_id: body.value.id })
                : refusedUpload(config.id, uploaded.status)
            })
          )
        return {
          ingest_id: yield* ids.uuid,
          target,
          resource: {
            filename,
            mime_type: type,
            size_bytes: answer.body.byteLength,
            sha256: createHash("sha256").update(answer.body).digest("hex"),
            source_url: input.source
          }
        } satisfies MediaIngestResult
      })

      return MediaIngest.of({ ingest })
    })
  )
}
