/**
 * The network's media rules (decisions §8.3): which types it takes and how
 * big each may be. Image, video and audio accept only their listed formats;
 * stickers are WEBP (100 KB static, 500 KB animated); anything else is a
 * document (100 MB). A refusal is a 131053.
 */
import { type SimError, simError } from "./ErrorCodes.ts"

const KB = 1024
const MB = 1024 * 1024

export type MediaKind = "image" | "video" | "audio" | "document" | "sticker"

const formats: ReadonlyArray<readonly [MediaKind, ReadonlyArray<string>, number]> = [
  ["image", ["image/jpeg", "image/png"], 5 * MB],
  ["video", ["video/mp4", "video/3gpp"], 16 * MB],
  ["audio", ["audio/aac", "audio/amr", "audio/mpeg", "audio/mp4", "audio/ogg"], 16 * MB]
]

/** The largest upload the network takes at all (a document). */
export const maxMediaBytes = 100 * MB

/** The type part of a MIME type, lowercase, without parameters (`audio/ogg; codecs=opus` → `audio/ogg`). */
export const essence = (mimeType: string): string => mimeType.split(";")[0]!.trim().toLowerCase()

/** An animated WEBP carries an `ANIM` chunk. */
const isAnimatedWebp = (bytes: Uint8Array): boolean =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).includes("ANIM")

const human = (bytes: number) => bytes >= MB ? `${bytes / MB} MB` : `${bytes / KB} KB`

/**
 * The kind of media the network makes of an upload of `mimeType` and the most bytes it may have (a sticker's
 * limit depends on whether the bytes are animated); undefined when the network takes no such type.
 */
export const mediaLimit = (mimeType: string, bytes: Uint8Array): { readonly kind: MediaKind; readonly limit: number } | undefined => {
  const type = essence(mimeType)
  if (type === "image/webp") return { kind: "sticker", limit: isAnimatedWebp(bytes) ? 500 * KB : 100 * KB }
  for (const [kind, types, limit] of formats) {
    if (!type.startsWith(`${kind}/`)) continue
    return types.includes(type) ? { kind, limit } : undefined
  }
  return { kind: "document", limit: maxMediaBytes }
}

/** The kind of media the network makes of an upload, or the 131053 it answers. */
export const checkMedia = (mimeType: string, bytes: Uint8Array): MediaKind | SimError => {
  const type = essence(mimeType)
  if (bytes.byteLength === 0) return simError(131053, "The uploaded file is empty")
  const allowed = mediaLimit(type, bytes)
  if (allowed === undefined) {
    const [kind, types] = formats.find(([kind]) => type.startsWith(`${kind}/`))!
    return simError(131053, `Unsupported ${kind} type ${type}; accepted: ${types.join(", ")}`)
  }
  if (bytes.byteLength <= allowed.limit) return allowed.kind
  return allowed.kind === "sticker"
    ? simError(131053, `Sticker file size ${bytes.byteLength} bytes exceeds the maximum of ${human(allowed.limit)}`)
    : simError(131053, `${allowed.kind} file size ${bytes.byteLength} bytes exceeds the maximum of ${human(allowed.limit)}`)
}

/** The content type a media of `kind` gets when a simulated contact sends one without bytes. */
export const placeholderMime: Readonly<Record<MediaKind, string>> = {
  image: "image/jpeg",
  video: "video/mp4",
  audio: "audio/ogg",
  document: "application/pdf",
  sticker: "image/webp"
}
