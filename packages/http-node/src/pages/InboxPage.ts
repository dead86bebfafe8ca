/**
 * The embedded inbox's page (issue 20 §1, decisions 2.17): the HTML shell at `/embed/<token>`, the bundle built
 * from `packages/http-node/inbox` (`npm run build:inbox`, run by `npm install`) under `/inbox/assets/`, and the
 * media of a thread at `/inbox/v1/media/<message id>`. The shell is answered only for a valid token, with
 * `frame-ancestors` from the embed's `allowed_origins` and a `default-src 'self'` policy; the token stays in the
 * page's own requests (`Referrer-Policy: no-referrer`, no external assets).
 */
import { Inbox, InboxEmbeds, type InboxEmbedRecord } from "@parley/core"
import { Effect, Option, Schema } from "effect"
import { existsSync, readFileSync } from "node:fs"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"

/** `dist-inbox/` of this package, seen from the source (`src/pages/`) or from the bundled `dist/`. */
const DIST = [new URL("../../dist-inbox/", import.meta.url), new URL("../dist-inbox/", import.meta.url)]
  .find((dir) => existsSync(new URL("manifest.json", dir))) ?? new URL("../../dist-inbox/", import.meta.url)

const Manifest = Schema.Struct({ js: Schema.String, css: Schema.String })
type Manifest = typeof Manifest.Type

/** The built bundle's hashed file names, read once; none when `npm run build:inbox` has not run. */
const manifest: Option.Option<Manifest> = existsSync(new URL("manifest.json", DIST))
  ? Schema.decodeUnknownOption(Schema.fromJsonString(Manifest))(readFileSync(new URL("manifest.json", DIST), "utf8"))
  : Option.none()

const assets = new Map<string, { readonly bytes: Uint8Array; readonly type: string }>()
for (const m of Option.toArray(manifest)) {
  for (const [name, type] of [[m.js, "text/javascript; charset=utf-8"], [m.css, "text/css; charset=utf-8"]] as const) {
    assets.set(name, { bytes: readFileSync(new URL(name, DIST)), type })
  }
}

const basePolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob: data:",
  "media-src 'self' blob:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'"
]

/** `frame-ancestors` lists the allowed origins; an empty list means any page may frame the inbox. */
const contentSecurityPolicy = (embed: Pick<InboxEmbedRecord, "allowed_origins">) =>
  [...basePolicy, `frame-ancestors ${embed.allowed_origins.length === 0 ? "*" : embed.allowed_origins.join(" ")}`].join("; ")

const pageHeaders = {
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff"
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[c]!)

const shell = (m: Manifest, embed: InboxEmbedRecord) => `<!doctype html>
<html lang="${embed.language}" data-mode="${embed.default_mode}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(embed.name)}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="../inbox/assets/${m.css}">
<script type="module" src="../inbox/assets/${m.js}"></script>
</head>
<body><div id="app"></div></body>
</html>`

const refusedPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Inbox</title></head>
<body><p>This inbox link is not valid or has expired.</p><p lang="es">Este enlace de bandeja no es válido o ha caducado.</p></body></html>`

const jsonError = (status: number, error: string) => HttpServerResponse.jsonUnsafe({ error }, { status })

export const routes = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const embeds = yield* InboxEmbeds
    const inbox = yield* Inbox

    yield* router.add(
      "GET",
      "/embed/:token",
      Effect.gen(function*() {
        const token = (yield* HttpRouter.params)["token"] ?? ""
        const session = yield* Effect.option(embeds.authenticate(token))
        if (Option.isNone(session)) {
          return HttpServerResponse.text(refusedPage, {
            status: 401,
            contentType: "text/html; charset=utf-8",
            headers: { ...pageHeaders, "content-security-policy": "default-src 'none'" }
          })
        }
        if (Option.isNone(manifest)) return jsonError(503, "The inbox page is not built: run npm run build:inbox")
        return HttpServerResponse.text(shell(manifest.value, session.value.embed), {
          contentType: "text/html; charset=utf-8",
          headers: { ...pageHeaders, "content-security-policy": contentSecurityPolicy(session.value.embed) }
        })
      })
    )

    yield* router.add(
      "GET",
      "/inbox/assets/:name",
      Effect.gen(function*() {
        const asset = assets.get((yield* HttpRouter.params)["name"] ?? "")
        if (asset === undefined) return jsonError(404, "Not found")
        // Names carry the content hash: a new build is a new name.
        return HttpServerResponse.uint8Array(asset.bytes, {
          contentType: asset.type,
          headers: { "cache-control": "public, max-age=31536000, immutable", "x-content-type-options": "nosniff" }
        })
      })
    )

    yield* router.add(
      "GET",
      "/inbox/v1/media/:id",
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const session = yield* embeds.authenticate(request.headers["x-inbox-token"] ?? "")
        const media = yield* inbox.media(session, (yield* HttpRouter.params)["id"] ?? "")
        return HttpServerResponse.uint8Array(media.bytes, {
          contentType: media.content_type,
          headers: { "cache-control": "private, no-store", "x-content-type-options": "nosniff" }
        })
      }).pipe(Effect.catchTags({
        Unauthorized: (e) => Effect.succeed(jsonError(401, e.error)),
        NotFound: (e) => Effect.succeed(jsonError(404, e.error))
      }))
    )
  })
)

/** What the page routes serve (the host's 405 answers name them). */
export const ROUTES = [
  { method: "GET", path: "/embed/:token" },
  { method: "GET", path: "/inbox/assets/:name" },
  { method: "GET", path: "/inbox/v1/media/:id" }
]
