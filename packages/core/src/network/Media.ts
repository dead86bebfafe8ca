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
  image: "image/png",
  video: "video/mp4",
  audio: "audio/ogg",
  document: "application/pdf",
  sticker: "image/webp"
}

/**
 * The bytes of a placeholder file of `kind`. Images and stickers are real pictures (a 96×64 PNG landscape, a 1×1
 * WebP), so a sandbox image renders where it is shown (the inbox, a browser); the other kinds are a line of text
 * under their content type, which nothing in Parley decodes.
 */
export const placeholderBytes = (kind: MediaKind): Uint8Array =>
  kind === "image"
    ? Buffer.from(PLACEHOLDER_PNG, "base64")
    : kind === "sticker"
    ? Buffer.from(PLACEHOLDER_WEBP, "base64")
    : new TextEncoder().encode(`simulated ${kind} sent by a contact`)

const PLACEHOLDER_PNG = "iVBORw0KGgoAAAANSUhEUgAAAGAAAABACAIAAABqVuVZAAABg0lEQVR42u3VXSsDYBwF8PPBdr1rH0dCSVJaSpKSpCSFZnnN27wsryGWNQshcnO+gStqJTfOtv9KPTr1u3n+F8+pc3PQOU8T0LVAE9C9SBPQm6cJ6FuiCegv0AQMLNMEDK7QBAyt8h/4KHf8ps2fkVtn6kQ7de18juENJq1hO3Xh/zGyyXQ12U5dLAKjW0xUS+3UBVIwts1EBQoKpGB8l4kKFBRIwUSRiQoUFEjB5B4TFSgokIKpAyYqUFAgBdOHTFSgoEAKZkpMVKCgQApmj5ioQEGBFMwdM10ttROLwPwpk9ZkO+H/sXjG1DVsp53PkT/nPyDaafNnFC5oAlYuaQLWrmgCNq5pAjZvaAJ2yjQBxVuagP0KTUCpShNwdEcTcFKjCTi7pwm4eKAJuHqkCbh+ogkoP9MEVF5oAqqvNAG1N5qAh3eagGwu+y3Tk/n59PHrCBehj3AR+ggXoY9wEfoIF6GPcBH66Jn3zHvmPfOeec+8Z94z75l3O555z7xn/u+Pn8D8Uy3U2qWNAAAAAElFTkSuQmCC"
const PLACEHOLDER_WEBP = "UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA=="
