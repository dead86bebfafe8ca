/**
 * The embedded workflow and execution viewer's page (issue 31 §3): the HTML shell at
 * `/viewer/<token>` and the bundle built from `packages/http-node/viewer` under `/viewer/assets/`. The page calls
 * `/viewer/v1` (`ViewerApi`) with its token; shell and headers are every embedded page's (`EmbedPage.ts`).
 */
import { WorkflowEmbeds } from "@parley/core"
import { Effect } from "effect"
import { HttpRouter } from "effect/http"
import { embedPage } from "./EmbedPage.ts"

const page = embedPage({
  page: "viewer",
  path: "/viewer/:token",
  assetsHref: "assets/",
  assetsPath: "/viewer/assets/:name",
  refused: {
    title: "Workflows",
    en: "This workflow viewer link is not valid or has expired.",
    es: "Este enlace del visor de flujos no es válido o ha caducado."
  }
})

export const routes = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const embeds = yield* WorkflowEmbeds
    yield* page.register(router, (token) => Effect.option(Effect.map(embeds.authenticate(token), (s) => s.embed)))
  })
)

/** What the page routes serve (the host's 405 answers name them). */
export const ROUTES = page.routes
