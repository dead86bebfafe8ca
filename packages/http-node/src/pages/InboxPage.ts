/**
 * The embedded inbox's page (issue 20 §1, decisions 2.17): the HTML shell at `/embed/<token>`, the bundle built
 * from `packages/http-node/inbox` under `/inbox/assets/`, and the media of a thread at `/inbox/v1/media/<message id>`.
 * The shell and its headers are every embedded page's (`EmbedPage.ts`).
 */
import { Inbox, InboxEmbeds } from "@parley/core"
import { Effect } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { embedPage, jsonError } from "./EmbedPage.ts"

const page = embedPage({
  page: "inbox",
  path: "/embed/:token",
  assetsHref: "../inbox/assets/",
  assetsPath: "/inbox/assets/:name",
  refused: {
    title: "Inbox",
    en: "This inbox link is not valid or has expired.",
    es: "Este enlace de bandeja no es válido o ha caducado."
  }
})

export const routes = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const embeds = yield* InboxEmbeds
    const inbox = yield* Inbox
    yield* page.register(router, (token) => Effect.option(Effect.map(embeds.authenticate(token), (s) => s.embed)))

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
export const ROUTES = [...page.routes, { method: "GET", path: "/inbox/v1/media/:id" }]
