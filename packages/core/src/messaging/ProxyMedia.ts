/**
 * The proxy's media routes (decisions 4.10, 7.4, 8.3): uploads checked
 * against the network's limits and remembered with their business account,
 * the network's media URL with a service-hosted `download_url` (a signed,
 * short-lived token any host with the same key accepts), deletes, and the kept
 * copies of inbound media.
 */
import { Clock, Effect, Option, Predicate, Redacted } from "effect"
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto"
import { FunctionSecretKey } from "../shared/SecretCipher.ts"
import { MediaRepo } from "./MessagingRepo.ts"
import { MessagingNetwork, type NetworkAccess, type NetworkAnswer, type NetworkError, rawAnswer } from "../network/MessagingNetwork.ts"
import type { StoredMedia } from "./Message.ts"
import { Messaging } from "./Messaging.ts"
import type { MessageConfigRecord } from "./numbers/MessageConfig.ts"
import { makeProxyAccounts } from "./ProxyAccounts.ts"
import {
  answered,
  json,
  networkStyleError,
  orUnreachable,
  ownNumberOf,
  parseJson,
  type ProxyAnswer,
  refuse,
  unknownObject
} from "./ProxyAnswers.ts"
import { checkMedia } from "../network/Media.ts"

/** How long a `download_url` works (spec: 4 minutes). */
export const MEDIA_DOWNLOAD_TTL_MS = 4 * 60 * 1000

export interface ProxyMedia {
  /** `POST /<phone_number_id>/media`: the file checked against the network's limits (8.3), then uploaded. */
  readonly uploadMedia: (
    projectId: string,
    phoneNumberId: string,
    file: { readonly bytes: Uint8Array; readonly mimeType: string; readonly filename: string },
    version?: string | undefined
  ) => Effect.Effect<ProxyAnswer>
  /**
   * `GET /<media_id>[?phone_number_id=]`: the network's media URL result plus a service-hosted `download_url`. Without
   * `phone_number_id` (optional, as at the network) the media is looked for in each business account of the project.
   */
  readonly mediaUrl: (
    projectId: string,
    mediaId: string,
    phoneNumberId: string | undefined,
    downloadBase: string,
    version?: string | undefined
  ) => Effect.Effect<ProxyAnswer>
  /** `DELETE /<media_id>[?phone_number_id=]`, the number optional as for the read. */
  readonly deleteMedia: (
    projectId: string,
    mediaId: string,
    phoneNumberId: string | undefined,
    version?: string | undefined
  ) => Effect.Effect<ProxyAnswer>
  /** The download behind a `download_url` token: the bytes and their type, or a refusal. */
  readonly download: (token: string) => Effect.Effect<ProxyAnswer>
  /** The kept copy of a message's media (`ext.media_url`), with its bytes, when it is the project's. */
  readonly keptMedia: (projectId: string, id: string) => Effect.Effect<Option.Option<StoredMedia>>
}

/** The network answered the media read with something that is not its media object (the id is a template, ...). */
const isNotMedia = (error: NetworkError): boolean =>
  error._tag === "NetworkUnavailable" && error.reason === "UnexpectedAnswer" && error.status !== undefined &&
  error.status >= 200 && error.status < 300

export const makeProxyMedia = Effect.gen(function*() {
  const messaging = yield* Messaging
  const network = yield* MessagingNetwork
  const media = yield* MediaRepo
  const number = messaging.numberOf
  const ownNumber = ownNumberOf(number)
  const projectAccounts = yield* makeProxyAccounts

  const keptMedia = (projectId: string, id: string) => media.find(projectId, id)

  // download_url tokens: HMAC-signed (project, number, media, expiry), so any host process with the same
  // PARLEY_SECRET_KEY accepts them; without that key, a random key of this process.
  const configured = yield* FunctionSecretKey
  const tokenKey = configured !== undefined
    ? createHmac("sha256", Redacted.value(configured)).update("parley/proxy/media-download").digest()
    : randomBytes(32)
  const sign = (payload: string) => createHmac("sha256", tokenKey).update(payload).digest("base64url")
  const issueToken = (claims: { readonly p: string; readonly n: string; readonly m: string; readonly e: number }) => {
    const payload = Buffer.from(JSON.stringify(claims), "utf8").toString("base64url")
    return `${payload}.${sign(payload)}`
  }
  const readToken = (token: string) => {
    const [payload, mac] = token.split(".")
    if (payload === undefined || mac === undefined) return undefined
    const expected = Buffer.from(sign(payload))
    const given = Buffer.from(mac)
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined
    try {
      const claims: unknown = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"))
      if (!Predicate.isObject(claims)) return undefined
      const { e, m, n, p } = claims
      return typeof p === "string" && typeof n === "string" && typeof m === "string" && typeof e === "number"
        ? { p, n, m, e }
        : undefined
    } catch {
      return undefined
    }
  }

  /**
   * The network's "object does not exist" (code 100, subcode 33, which it answers with 400): a media id the project
   * does not have is answered as every other id that is not the project's (decisions 4.10: 404, code 100).
   */
  const notThere = (error: NetworkError) =>
    error._tag === "NetworkRefused" && error.error.code === 100 && error.error.error_subcode === 33

  const mediaNumber = (projectId: string, phoneNumberId: string, mediaId: string) =>
    number(projectId, phoneNumberId).pipe(
      Effect.flatMap(Option.match({ onNone: () => refuse(unknownObject(mediaId)), onSome: Effect.succeed }))
    )

  /**
   * `call` for the media: with `phone_number_id`, as that number of the project (the network also checks the media is
   * the number's); without it, as each business account of the project until one knows the media.
   */
  const onMedia = <A>(
    projectId: string,
    mediaId: string,
    phoneNumberId: string | undefined,
    call: (config: MessageConfigRecord) => Effect.Effect<NetworkAnswer<A>, NetworkError>
  ) =>
    Effect.gen(function*() {
      const found = phoneNumberId !== undefined
        ? yield* mediaNumber(projectId, phoneNumberId, mediaId).pipe(
          Effect.flatMap((config) => Effect.map(Effect.result(call(config)), (outcome) => ({ config, outcome })))
        )
        : Option.getOrUndefined(yield* projectAccounts.findAcross(projectId, call))
      // The network answered with something that is not media (a template, a number): the id names no media.
      if (found === undefined || (found.outcome._tag === "Failure" && (isNotMedia(found.outcome.failure) || notThere(found.outcome.failure)))) {
        return yield* refuse(unknownObject(mediaId))
      }
      return found
    })

  const uploadMedia = (
    projectId: string,
    phoneNumberId: string,
    file: { readonly bytes: Uint8Array; readonly mimeType: string; readonly filename: string },
    version?: string | undefined
  ) =>
    answered(Effect.gen(function*() {
      const config = yield* ownNumber(projectId, phoneNumberId)
      const checked = checkMedia(file.mimeType, file.bytes)
      if (typeof checked !== "string") {
        return networkStyleError(400, 131053, "(#131053) Media upload error", { details: checked.details })
      }
      const answer = yield* orUnreachable(
        rawAnswer(network.uploadMedia({ accessToken: config.access_token, version }, phoneNumberId, file))
      )
      // Remembered so a send through another business account's number is refused (decisions 7.4).
      const uploaded = answer.status === 200 ? parseJson(answer.body) : undefined
      if (Predicate.isObject(uploaded) && typeof uploaded["id"] === "string") {
        yield* media.recordUpload({
          network_media_id: uploaded["id"],
          project_id: projectId,
          msg_config_id: config.id,
          business_account_id: config.business_account_id,
          created_at: new Date(yield* Clock.currentTimeMillis).toISOString()
        })
      }
      return answer
    }))

  const mediaUrl = (
    projectId: string,
    mediaId: string,
    phoneNumberId: string | undefined,
    downloadBase: string,
    version?: string | undefined
  ) =>
    answered(Effect.gen(function*() {
      const { config, outcome } = yield* onMedia(projectId, mediaId, phoneNumberId, (config) =>
        network.getMedia({ accessToken: config.access_token, version }, mediaId, { phoneNumberId }))
      if (outcome._tag === "Failure") return yield* orUnreachable(rawAnswer(Effect.fail(outcome.failure)))
      const body = parseJson(outcome.success.body)
      const expires = (yield* Clock.currentTimeMillis) + MEDIA_DOWNLOAD_TTL_MS
      const token = issueToken({ p: projectId, n: config.phone_number_id, m: mediaId, e: expires })
      const info = outcome.success.value
      return json(200, {
        ...(Predicate.isObject(body) ? body : {}),
        id: info.id,
        url: info.url,
        mime_type: info.mime_type,
        sha256: info.sha256,
        file_size: String(info.file_size),
        download_url: `${downloadBase}${token}`,
        download_url_expires_at: new Date(expires).toISOString()
      })
    }))

  const deleteMedia = (projectId: string, mediaId: string, phoneNumberId: string | undefined, version?: string | undefined) =>
    answered(Effect.gen(function*() {
      // Only media is deleted here: the id is read as media first (by the number, or the account that knows it).
      const { config, outcome } = yield* onMedia(projectId, mediaId, phoneNumberId, (config) =>
        network.getMedia({ accessToken: config.access_token, version }, mediaId, { phoneNumberId }))
      if (outcome._tag === "Failure") return yield* orUnreachable(rawAnswer(Effect.fail(outcome.failure)))
      const deleted = yield* Effect.result(
        network.deleteMedia({ accessToken: config.access_token, version }, mediaId, { phoneNumberId: config.phone_number_id })
      )
      if (deleted._tag === "Failure" && notThere(deleted.failure)) return unknownObject(mediaId)
      return yield* orUnreachable(rawAnswer(deleted._tag === "Failure" ? Effect.fail(deleted.failure) : Effect.succeed(deleted.success)))
    }))

  const download = (token: string) =>
    answered(Effect.gen(function*() {
      const claims = readToken(token)
      const now = yield* Clock.currentTimeMillis
      if (claims === undefined || claims.e <= now) {
        return yield* refuse(networkStyleError(404, 100, "(#100) The download link is invalid or has expired", {
          details: "Ask GET /<media_id>?phone_number_id=<phone_number_id> for a new download_url"
        }))
      }
      const config = yield* mediaNumber(claims.p, claims.n, claims.m)
      const access: NetworkAccess = { accessToken: config.access_token }
      // The link was issued once the network showed the media to this number's account (to the number itself when
      // the read named it): the account's token is the credential now.
      const info = yield* Effect.result(network.getMedia(access, claims.m))
      if (info._tag === "Failure") return yield* orUnreachable(rawAnswer(Effect.fail(info.failure)))
      const bytes = yield* Effect.result(network.downloadMedia(access, info.success.value.url))
      if (bytes._tag === "Failure") return yield* orUnreachable(rawAnswer(Effect.fail(bytes.failure)))
      return { status: 200, contentType: info.success.value.mime_type, body: bytes.success.value } satisfies ProxyAnswer
    }))

  return { uploadMedia, mediaUrl, deleteMedia, download, keptMedia } satisfies ProxyMedia
})
