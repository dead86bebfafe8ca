/**
 * The setup link's page (`/setup/<token>`), the callback the signup dialog
 * returns to (`/setup/<token>/callback`) and, in simulator mode, the
 * simulated network's signup dialog (`/simulator/signup`). Translation only:
 * `Onboarding` decides, these routes render its answers as server-side HTML
 * (inline CSS, no script, no external asset) or redirect.
 */
import {
  isHexColor,
  Onboarding,
  type OnboardingResult,
  type OnboardingStart,
  PublicUrl,
  publicUrlOf,
  SETUP_PAGE_PATH,
  type SetupLinkRecord,
  THEME_COLORS,
  type ThemeConfig
} from "@parley/core"
import { Effect, Layer, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse, UrlParams } from "effect/http"
import { formatDate, type PageLanguage, pageLanguage, type SetupText, texts } from "./SetupText.ts"

/** What the setup pages serve (the host's 405 answers name them). */
export const ROUTES = [
  { method: "GET", path: `${SETUP_PAGE_PATH}/:token` },
  { method: "GET", path: `${SETUP_PAGE_PATH}/:token/callback` }
] as const

/** Text for HTML content and attribute values. */
export const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" })[c]!)

const defaultTheme: Readonly<Record<typeof THEME_COLORS[number], string>> = {
  primary_color: "#1f6f50",
  primary_foreground_color: "#ffffff",
  background_color: "#f4f6f5",
  text_color: "#17211c",
  muted_text_color: "#4d5a53",
  card_color: "#ffffff",
  muted_color: "#e8eeeb",
  border_color: "#c9d3ce",
  secondary_color: "#e8eeeb",
  secondary_foreground_color: "#17211c",
  destructive_color: "#b42318",
  destructive_foreground_color: "#ffffff"
}

/** Custom properties of the theme; colours are checked again here, so nothing but `#RRGGBB` reaches the style sheet. */
const themeCss = (theme: ThemeConfig): string =>
  THEME_COLORS.map((key) => {
    const given = theme[key]
    return `--${key.replace(/_/g, "-")}:${isHexColor(given) ? given : defaultTheme[key]};`
  }).join("")

const styles = `
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--background-color);color:var(--text-color)}
main{max-width:34rem;margin:2.5rem auto;padding:0 1rem}
.card{background:var(--card-color);border:1px solid var(--border-color);border-radius:12px;padding:1.75rem}
h1{font-size:1.5rem;line-height:1.25;margin:0 0 .75rem}
p,li{color:var(--text-color)}
.muted{color:var(--muted-text-color);font-size:.9rem}
ol{padding-left:1.25rem}
.button{display:inline-block;border:0;border-radius:8px;padding:.7rem 1.2rem;font:inherit;font-weight:600;cursor:pointer;text-decoration:none;background:var(--primary-color);color:var(--primary-foreground-color)}
.button.secondary{background:var(--secondary-color);color:var(--secondary-foreground-color);border:1px solid var(--border-color)}
.button:focus-visible,input:focus-visible{outline:3px solid var(--text-color);outline-offset:2px}
.alert{border-radius:8px;padding:.75rem 1rem;background:var(--destructive-color);color:var(--destructive-foreground-color)}
.note{border-radius:8px;padding:.5rem .75rem;background:var(--muted-color);color:var(--text-color);font-size:.9rem}
label{display:block;font-weight:600;margin:.75rem 0 .25rem}
input[type=email],input[type=password]{width:100%;padding:.55rem .6rem;border:1px solid var(--border-color);border-radius:6px;font:inherit;background:var(--card-color);color:var(--text-color)}
fieldset{border:1px solid var(--border-color);border-radius:8px;margin:1rem 0;padding:.5rem 1rem 1rem}
legend{font-weight:600;padding:0 .25rem}
.choice{display:flex;gap:.5rem;align-items:flex-start;font-weight:400;margin:.5rem 0}
.actions{display:flex;gap:.75rem;flex-wrap:wrap;margin-top:1.25rem}
`

/** No script, no frames, nothing fetched from anywhere: only the inline style sheet. */
const securityHeaders = {
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
  "x-content-type-options": "nosniff"
}

export const page = (options: {
  readonly lang: PageLanguage
  readonly title: string
  readonly theme: ThemeConfig
  readonly body: string
  readonly status?: number
}) =>
  HttpServerResponse.text(
    `<!doctype html><html lang="${options.lang}"><head><meta charset="utf-8">` +
      `<meta name="viewport" content="width=device-width, initial-scale=1">` +
      `<title>${escapeHtml(options.title)}</title><style>:root{${themeCss(options.theme)}}${styles}</style></head>` +
      `<body><main><div class="card">${options.body}</div></main></body></html>`,
    { status: options.status ?? 200, contentType: "text/html; charset=utf-8", headers: securityHeaders }
  )

export const redirect = (location: string) => HttpServerResponse.redirect(location, { status: 303, headers: securityHeaders })

const languageOf = (link: SetupLinkRecord | undefined, request: HttpServerRequest.HttpServerRequest) =>
  pageLanguage(link?.language, request.headers["accept-language"])

const notFoundPage = (lang: PageLanguage) => {
  const t = texts[lang]
  return page({
    lang,
    title: t.notFoundTitle,
    theme: {},
    status: 404,
    body: `<h1>${escapeHtml(t.notFoundTitle)}</h1><p>${escapeHtml(t.notFound)}</p>`
  })
}

const displayNumber = (digits: string) => `+${digits}`

const linkPage = (start: OnboardingStart, lang: PageLanguage) => {
  const t = texts[lang]
  const { link } = start
  if (start.status !== "active") {
    const code = start.status === "used" ? "already_used" : "link_expired"
    return page({
      lang,
      title: t.endedTitle,
      theme: link.theme_config,
      status: 410,
      body: `<h1>${escapeHtml(t.endedTitle)}</h1><p>${escapeHtml(t.errors[code])}</p>`
    })
  }
  const previous = link.msg_setup_status === "failed" && link.error_code !== null
    ? `<p class="alert" role="alert">${escapeHtml(t.lastAttempt)} ${escapeHtml(t.errors[link.error_code])}</p>`
    : ""
  const details = [
    ...(link.reconnect_phone_number !== null ? [t.reconnect(displayNumber(link.reconnect_phone_number))] : []),
    ...(link.provision_phone_number ? [t.provision(link.phone_number_country_isos.join(", "))] : [])
  ]
  return page({
    lang,
    title: t.title,
    theme: link.theme_config,
    body: `<h1>${escapeHtml(t.title)}</h1>${previous}<p>${escapeHtml(t.intro)}</p>` +
      `<ol>${t.steps.map((s) => `<li>${escapeHtml(s)}</li>`).join("")}</ol>` +
      details.map((d) => `<p>${escapeHtml(d)}</p>`).join("") +
      `<div class="actions"><a class="button" href="${escapeHtml(start.dialogUrl)}">${escapeHtml(t.start)}</a></div>` +
      `<p class="muted">${escapeHtml(t.expires(formatDate(link.expires_at, lang)))}</p>`
  })
}

const resultPage = (result: OnboardingResult, token: string, lang: PageLanguage, publicUrl: string) => {
  const t = texts[lang]
  const { link, outcome } = result
  if (outcome._tag === "Connected") {
    return page({
      lang,
      title: t.connectedTitle,
      theme: link.theme_config,
      body: `<h1>${escapeHtml(t.connectedTitle)}</h1><p role="status">${
        escapeHtml(t.connected(displayNumber(outcome.config.display_phone_number_normalized)))
      }</p>`
    })
  }
  // A failed attempt leaves the link active: the customer can start again.
  const retry = link.status === "active"
    ? `<div class="actions"><a class="button" href="${escapeHtml(publicUrlOf(publicUrl, `${SETUP_PAGE_PATH}/${token}`).toString())}">${escapeHtml(t.tryAgain)}</a></div>`
    : ""
  return page({
    lang,
    title: t.failedTitle,
    theme: link.theme_config,
    body: `<h1>${escapeHtml(t.failedTitle)}</h1><p class="alert" role="alert">${escapeHtml(t.errors[outcome.code])}</p>${retry}`
  })
}

export const queryOf = (request: HttpServerRequest.HttpServerRequest): URLSearchParams =>
  Option.match(HttpServerRequest.toURL(request), { onNone: () => new URLSearchParams(), onSome: (url) => url.searchParams })

export const given = (query: URLSearchParams, key: string) => query.get(key) ?? undefined

const linkRoutes = HttpRouter.use((router) =>
  Effect.gen(function*() {
    const onboarding = yield* Onboarding
    yield* router.add(
      "GET",
      `${SETUP_PAGE_PATH}/:token`,
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const token = (yield* HttpRouter.params)["token"] ?? ""
        const start = yield* onboarding.start(token)
        if (Option.isNone(start)) return notFoundPage(languageOf(undefined, request))
        if (start.value.redirect !== null) return redirect(start.value.redirect)
        return linkPage(start.value, languageOf(start.value.link, request))
      })
    )
    yield* router.add(
      "GET",
      `${SETUP_PAGE_PATH}/:token/callback`,
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const token = (yield* HttpRouter.params)["token"] ?? ""
        const query = queryOf(request)
        const result = yield* onboarding.complete(token, {
          code: given(query, "code"),
          waba_id: given(query, "waba_id"),
          phone_number_id: given(query, "phone_number_id"),
          provisioned: given(query, "provisioned"),
          error: given(query, "error")
        })
        if (Option.isNone(result)) return notFoundPage(languageOf(undefined, request))
        if (result.value.redirect !== null) return redirect(result.value.redirect)
        return resultPage(result.value, token, languageOf(result.value.link, request), yield* PublicUrl)
      })
    )
  })
)

/** The setup pages (in simulator mode the host adds the simulated network's dialog: `simulators/SignupDialog.ts`). */
export const routes: Layer.Layer<never, never, HttpRouter.HttpRouter | Onboarding> = linkRoutes
