/**
 * The media the simulated network keeps: uploads (`POST /<pnid>/media`, kept 30 days; a contact's media 7 days),
 * their facts and a signed download URL valid 5 minutes (`GET /<media id>`), the download itself
 * (`GET /attachments/?mid=&ext=&hash=`, bearer only), and the resumable uploads whose handles template header
 * examples take (`POST /app/uploads`, then `POST /upload:<id>`). `Media.ts` holds the types and sizes it takes.
 */
import { createHmac } from "node:crypto"
import { MessagingProduct } from "../../network/NetworkObjects.ts"
import { checkMedia } from "../../network/Media.ts"
import { authenticate, isSimError } from "./Access.ts"
import {
  DAY_MS,
  fail,
  type MediaRecord,
  type NumberRecord,
  numericId,
  ok,
  type Outcome,
  type RequestContext,
  sha256Hex,
  type SimState
} from "./Model.ts"
import { simError, unknownObject } from "../../network/ErrorCodes.ts"
import type { SimRequest } from "./Protocol.ts"

const MEDIA_TTL_MS = 30 * DAY_MS
export const INBOUND_MEDIA_TTL_MS = 7 * DAY_MS
const MEDIA_URL_TTL_MS = 5 * 60 * 1000

const mediaHash = (state: SimState, id: string, expires: number) =>
  createHmac("sha256", state.urlSecret).update(`${id}.${expires}`).digest("base64url").slice(0, 22)

export const usableMedia = (state: SimState, id: string, now: number): MediaRecord | undefined => {
  const media = state.media.get(id)
  return media !== undefined && !media.deleted && media.expiresAt > now ? media : undefined
}

export const upload = (state: SimState, ctx: RequestContext, number: NumberRecord, request: SimRequest): Outcome => {
  if (request.body._tag !== "Form") return fail(simError(100, "The parameter file is required."))
  const product = request.body.fields["messaging_product"]
  if (product === undefined) return fail(simError(100, "The parameter messaging_product is required."))
  if (product !== MessagingProduct) return fail(simError(100, `Param messaging_product must be ${MessagingProduct}`))
  const file = request.body.files.find((f) => f.key === "file")
  if (file === undefined) return fail(simError(100, "The parameter file is required."))
  const mimeType = request.body.fields["type"] ?? file.contentType
  const kind = checkMedia(mimeType, file.bytes)
  if (isSimError(kind)) return fail(kind)
  const media: MediaRecord = {
    id: numericId(ctx.uuid),
    businessAccountId: number.businessAccountId,
    phoneNumberId: number.phoneNumberId,
    bytes: file.bytes,
    mimeType,
    filename: file.filename.length > 0 ? file.filename : undefined,
    sha256: sha256Hex(file.bytes),
    expiresAt: ctx.now + MEDIA_TTL_MS,
    deleted: false
  }
  for (const [id, stored] of state.media) {
    if (stored.deleted || stored.expiresAt <= ctx.now) {
      state.media.delete(id)
      state.touch("media", id)
    }
  }
  state.media.set(media.id, media)
  state.touch("media", media.id)
  return ok({ id: media.id })
}

export const mediaInfo = (state: SimState, ctx: RequestContext, media: MediaRecord) => {
  const expires = Math.floor((ctx.now + MEDIA_URL_TTL_MS) / 1000)
  const params = new URLSearchParams({ mid: media.id, ext: String(expires), hash: mediaHash(state, media.id, expires) })
  return {
    messaging_product: MessagingProduct,
    url: `${ctx.baseUrl}/attachments/?${params.toString()}`,
    mime_type: media.mimeType,
    sha256: media.sha256,
    file_size: media.bytes.byteLength,
    id: media.id
  }
}

export const download = (state: SimState, ctx: RequestContext, request: SimRequest): Outcome => {
  const auth = authenticate(state, request.authorization)
  if (isSimError(auth)) return fail(auth)
  const { ext, hash, mid } = request.query
  const gone = fail(simError(100, "URL signature expired or invalid", { status: 404 }))
  if (mid === undefined || ext === undefined || hash === undefined) return gone
  const expires = Number(ext)
  if (!Number.isInteger(expires) || expires * 1000 <= ctx.now || mediaHash(state, mid, expires) !== hash) return gone
  const media = usableMedia(state, mid, ctx.now)
  if (media === undefined || media.businessAccountId !== auth.businessAccountId) return gone
  return { status: 200, bytes: { contentType: media.mimeType, body: media.bytes }, followups: [] }
}

// Resumable uploads (the handles template header examples take)

export const openUploadSession = (state: SimState, ctx: RequestContext, accountId: string, request: SimRequest): Outcome => {
  const length = Number(request.query["file_length"])
  const type = request.query["file_type"]
  if (!Number.isInteger(length) || length <= 0) return fail(simError(100, "Param file_length must be a positive integer"))
  if (type === undefined || type.trim() === "") return fail(simError(100, "The parameter file_type is required."))
  const checked = checkMedia(type, new Uint8Array(1))
  if (isSimError(checked)) return fail(checked)
  const id = `upload:${ctx.uuid}`
  state.uploadSessions.set(id, { businessAccountId: accountId, fileLength: length, fileType: type })
  return ok({ id })
}

export const uploadAsset = (state: SimState, ctx: RequestContext, accountId: string, id: string, request: SimRequest): Outcome => {
  const session = state.uploadSessions.get(id)
  if (session === undefined || session.businessAccountId !== accountId) return fail(unknownObject("POST", id))
  if (request.body._tag !== "Bytes") return fail(simError(100, "The upload must carry the file's bytes"))
  const bytes = request.body.bytes
  if (bytes.byteLength !== session.fileLength) {
    return fail(simError(100, `The upload has ${bytes.byteLength} bytes; the session was opened for ${session.fileLength}`))
  }
  const checked = checkMedia(session.fileType, bytes)
  if (isSimError(checked)) return fail(checked)
  state.uploadSessions.delete(id)
  return ok({ h: `4::${Buffer.from(`${session.fileType}:${ctx.uuid}`).toString("base64url")}` })
}
