/**
 * What the host's embeddable pages share (the inbox at `/embed/<token>`, the workflow viewer at `/viewer/<token>`):
 * their bundles built from `packages/http-node/{inbox,viewer}` (`npm run build:inbox`, run by `npm install`) with
 * content-hashed names, the HTML shell answered only for a valid token, and the headers that keep it on the host:
 * `default-src 'self'`, `frame-ancestors` from the embed's `allowed_origins`, `Referrer-Policy: no-referrer`.
 */
import { Effect, Option, Schema } from "effect"
import { existsSync, readFileSync } from "node:fs"
import { HttpRouter, HttpServerResponse } from "effect/http"

/** `dist-inbox/` of this package, seen from the source (`src/pages/`) or from the bundled `dist/`. */
const DIST = [new URL("../../dist-inbox/", import.meta.url), new URL("../dist-inbox/", import.meta.url)]
  .find((dir) => existsSync(new URL("manifest.json", dir))) ?? new URL("../../dist-inbox/", import.meta.url)

const Bundle = Schema.Struct({ js: Schema.String, css: Schema.String })
type Bundle = typeof Bundle.Type
const Manifest = Schema.Record(Schema.String, Bundle)

/** The built bundles' hashed file names by page, read once; empty when `npm run build:inbox` has not run. */
const manifest: Readonly<Record<string, Bundle>> = existsSync(new URL("manifest.json", DIST))
  ? Option.getOrElse(Schema.decodeUnknownOption(Schema.fromJsonString(Manifest))(readFileSync(new URL("manifest.json", DIST), "utf8")), () => ({}))
  : {}

export type PageName = "inbox" | "viewer"

/** A page's bundle and its files' bytes; none when it is not built. */
const bundleOf = (page: PageName) =>
  Option.map(Option.fromNullishOr(manifest[page]), (bundle) => ({
    bundle,
    files: new Map([
      [bundle.js, { bytes: readFileSync(new URL(bundle.js, DIST)), type: "text/javascript; charset=utf-8" }],
      [bundle.css, { bytes: readFileSync(new URL(bundle.css, DIST)), type: "text/css; charset=utf-8" }]
    ])
  }))

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

/** `frame-ancestors` lists the allowed origins; an empty list means any page may frame it. */
const contentSecurityPolicy = (allowedOrigins: ReadonlyArray<string>) =>
  [...basePolicy, `frame-ancestors ${allowedOrigins.length === 0 ? "*" : allowedOrigins.join(" ")}`].join("; ")

const pageHeaders = {
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff"
}

export const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[c]!)

export const jsonError = (status: number, error: string) => HttpServerResponse.jsonUnsafe({ error }, { status })

/** What a page needs of its embed to answer its shell. */
export interface PageEmbed {
  readonly name: string
  readonly language: string
  readonly default_mode: string
  readonly allowed_origins: ReadonlyArray<string>
}

export interface EmbedPageOptions {
  readonly page: PageName
  /** The shell's path pattern (`/embed/:token`); its assets are at `assetsPath` relative to it. */
  readonly path: HttpRouter.PathInput
  /** Where the shell's relative links find the assets (`../inbox/assets/`, `assets/`). */
  readonly assetsHref: string
  /** The route serving the assets (`/inbox/assets/:name`). */
  readonly assetsPath: HttpRouter.PathInput
  /** The shell's body when the token is refused, in English and Spanish. */
  readonly refused: { readonly title: string; readonly en: string; readonly es: string }
}

const shell = (bundle: Bundle, assetsHref: string, embed: PageEmbed) => `<!doctype html>
<html lang="${escapeHtml(embed.language)}" data-mode="${escapeHtml(embed.default_mode)}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(embed.name)}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${assetsHref}${bundle.css}">
<script type="module" src="${assetsHref}${bundle.js}"></script>
</head>
<body><div id="app"></div></body>
</html>`

/** The shell route and the assets route of one page; `routes` lists them for the host's 405 answers. */
export const embedPage = (options: EmbedPageOptions) => {
  const built = bundleOf(options.page)
  const refusedPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(options.refused.title)}</title></head>
<body><p>${escapeHtml(options.refused.en)}</p><p lang="es">${escapeHtml(options.refused.es)}</p></body></html>`

  /** Adds both routes; `open` answers the embed a token opens, or none. */
  const register = (router: HttpRouter.HttpRouter, open: (token: string) => Effect.Effect<Option.Option<PageEmbed>>) =>
    Effect.gen(function*() {
      yield* router.add(
        "GET",
        options.path,
        Effect.gen(function*() {
          const embed = yield* open((yield* HttpRouter.params)["token"] ?? "")
          if (Option.isNone(embed)) {
            return HttpServerResponse.text(refusedPage, {
              status: 401,
              contentType: "text/html; charset=utf-8",
              headers: { ...pageHeaders, "content-security-policy": "default-src 'none'" }
            })
          }
          if (Option.isNone(built)) return jsonError(503, `The ${options.page} page is not built: run npm run build:inbox`)
          return HttpServerResponse.text(shell(built.value.bundle, options.assetsHref, embed.value), {
            contentType: "text/html; charset=utf-8",
            headers: { ...pageHeaders, "content-security-policy": contentSecurityPolicy(embed.value.allowed_origins) }
          })
        })
      )
      yield* router.add(
        "GET",
        options.assetsPath,
        Effect.gen(function*() {
          const name = (yield* HttpRouter.params)["name"] ?? ""
          const asset = Option.isSome(built) ? built.value.files.get(name) : undefined
          if (asset === undefined) return jsonError(404, "Not found")
          // Names carry the content hash: a new build is a new name.
          return HttpServerResponse.uint8Array(asset.bytes, {
            contentType: asset.type,
            headers: { "cache-control": "public, max-age=31536000, immutable", "x-content-type-options": "nosniff" }
          })
        })
      )
    })

  return {
    register,
    routes: [{ method: "GET", path: options.path }, { method: "GET", path: options.assetsPath }]
  }
}
