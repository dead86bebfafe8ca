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
  SETUP_PAGE_PATH,
  SIMULATED_SIGNUP_PATH,
  Simulator,
  type SignupBusiness,
  type SetupLinkRecord,
  THEME_COLORS,
  type ThemeConfig,
  UpstreamSettings
} from "@parley/core"
import { Effect, Layer, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse, UrlParams } from "effect/http"
import { formatDate, type PageLanguage, pageLanguage, type SetupText, texts } from "./SetupText.ts"

/** What the setup pages serve (the host's 405 answers name them). */
export const ROUTES = [
  { method: "GET", path: `${SETUP_PAGE_PATH}/:token` },
  { method: "GET", path: `${SETUP_PAGE_PATH}/:token/callback` },
  { method: "GET", path: SIMULATED_SIGNUP_PATH },
  { method: "POST", path: SIMULATED_SIGNUP_PATH }
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

const page = (options: {
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

const redirect = (location: string) => HttpServerResponse.redirect(location, { status: 303, headers: securityHeaders })

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

const resultPage = (result: OnboardingResult, token: string, lang: PageLanguage) => {
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
    ? `<div class="actions"><a class="button" href="${escapeHtml(`${SETUP_PAGE_PATH}/${token}`)}">${escapeHtml(t.tryAgain)}</a></div>`
    : ""
  return page({
    lang,
    title: t.failedTitle,
    theme: link.theme_config,
    body: `<h1>${escapeHtml(t.failedTitle)}</h1><p class="alert" role="alert">${escapeHtml(t.errors[outcome.code])}</p>${retry}`
  })
}

const queryOf = (request: HttpServerRequest.HttpServerRequest): URLSearchParams =>
  Option.match(HttpServerRequest.toURL(request), { onNone: () => new URLSearchParams(), onSome: (url) => url.searchParams })

const given = (query: URLSearchParams, key: string) => query.get(key) ?? undefined

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
        return resultPage(result.value, token, languageOf(result.value.link, request))
      })
    )
  })
)

// ---------------------------------------------------------------------------------------------
// The simulated network's dialog

interface DialogRequest {
  readonly redirectUri: string
  readonly state: string
  readonly connectionTypes: ReadonlyArray<string>
  readonly countries: ReadonlyArray<string>
  readonly lang: PageLanguage
}

const dialogRequest = (values: (key: string) => string | undefined, publicUrl: string): DialogRequest | undefined => {
  const redirectUri = values("redirect_uri") ?? ""
  // Only this host's setup pages: the dialog never sends a code anywhere else.
  const setupBase = `${publicUrl.replace(/\/+$/, "")}${SETUP_PAGE_PATH}/`
  if (!redirectUri.startsWith(setupBase) || !URL.canParse(redirectUri)) return undefined
  const list = (key: string) => (values(key) ?? "").split(",").map((v) => v.trim()).filter((v) => v !== "")
  return {
    redirectUri,
    state: values("state") ?? "",
    connectionTypes: list("connection_types"),
    countries: values("provision") === "1" ? list("countries") : [],
    lang: pageLanguage(values("lang") ?? "en", undefined)
  }
}

const hidden = (name: string, value: string) => `<input type="hidden" name="${name}" value="${escapeHtml(value)}">`

const dialogPage = (
  catalogue: ReadonlyArray<SignupBusiness>,
  request: DialogRequest,
  problem: string | undefined
) => {
  const t: SetupText = texts[request.lang]
  const offered = (coexistence: boolean) =>
    request.connectionTypes.length === 0 || request.connectionTypes.includes(coexistence ? "coexistence" : "dedicated")
  const named = (name: string) => Object.hasOwn(t.catalogueNames, name) ? t.catalogueNames[name]! : name
  const choices: Array<string> = []
  for (const business of catalogue) {
    for (const n of business.numbers) {
      if (!offered(n.coexistence)) continue
      choices.push(`${business.id}:${n.phoneNumberId}|${named(business.name)} — ${n.displayPhoneNumber} (${named(n.verifiedName)}, ${
        n.coexistence ? t.coexistence : t.dedicated
      })`)
    }
    if (business.outcome === "ok" && offered(false)) {
      for (const country of request.countries) {
        choices.push(`${business.id}:new:${country}|${named(business.name)} — ${t.newNumber(country)}`)
      }
    }
  }
  const radios = choices.map((choice, i) => {
    const [value = "", label = ""] = choice.split("|")
    return `<label class="choice"><input type="radio" name="choice" id="choice-${i}" value="${escapeHtml(value)}">` +
      `<span>${escapeHtml(label)}</span></label>`
  }).join("")
  return page({
    lang: request.lang,
    title: t.dialogTitle,
    theme: {},
    body: `<h1>${escapeHtml(t.dialogTitle)}</h1><p class="note">${escapeHtml(t.dialogNote)}</p>` +
      (problem !== undefined ? `<p class="alert" role="alert">${escapeHtml(problem)}</p>` : "") +
      `<form method="post" action="${SIMULATED_SIGNUP_PATH}">` +
      hidden("redirect_uri", request.redirectUri) + hidden("state", request.state) +
      hidden("connection_types", request.connectionTypes.join(",")) +
      hidden("provision", request.countries.length > 0 ? "1" : "0") + hidden("countries", request.countries.join(",")) +
      hidden("lang", request.lang) +
      `<label for="email">${escapeHtml(t.email)}</label><input type="email" id="email" name="email" autocomplete="email">` +
      `<label for="password">${escapeHtml(t.password)}</label>` +
      `<input type="password" id="password" name="password" autocomplete="current-password">` +
      `<fieldset><legend>${escapeHtml(t.chooseNumber)}</legend>${radios}</fieldset>` +
      `<div class="actions"><button class="button" type="submit" name="action" value="connect">${escapeHtml(t.connect)}</button>` +
      `<button class="button secondary" type="submit" name="action" value="cancel">${escapeHtml(t.cancel)}</button></div>` +
      `</form>`
  })
}

const withQuery = (base: string, query: ReadonlyArray<readonly [string, string]>) => {
  const url = new URL(base)
  for (const [key, value] of query) url.searchParams.set(key, value)
  return url.toString()
}

const badDialogRequest = HttpServerResponse.jsonUnsafe({ error: "redirect_uri must be a setup page of this host" }, {
  status: 400
})

const dialogRoutes = (simulator: Simulator.NetworkSimulator["Service"]) =>
  HttpRouter.use((router) =>
    Effect.gen(function*() {
      yield* router.add(
        "GET",
        SIMULATED_SIGNUP_PATH,
        Effect.gen(function*() {
          const query = queryOf(yield* HttpServerRequest.HttpServerRequest)
          const request = dialogRequest((key) => given(query, key), yield* PublicUrl)
          return request === undefined ? badDialogRequest : dialogPage(simulator.signupCatalogue, request, undefined)
        })
      )
      yield* router.add(
        "POST",
        SIMULATED_SIGNUP_PATH,
        Effect.gen(function*() {
          const form = yield* (yield* HttpServerRequest.HttpServerRequest).urlParamsBody.pipe(
            Effect.orElseSucceed(() => UrlParams.empty)
          )
          const value = (key: string) => Option.getOrUndefined(UrlParams.getFirst(form, key))
          const request = dialogRequest(value, yield* PublicUrl)
          if (request === undefined) return badDialogRequest
          const back = (query: ReadonlyArray<readonly [string, string]>) =>
            redirect(withQuery(request.redirectUri, [...query, ["state", request.state]]))
          if (value("action") !== "connect") return back([["error", "access_denied"]])
          // The simulated login takes any account, but not an empty one.
          if ((value("email") ?? "").trim() === "" || (value("password") ?? "") === "") {
            return dialogPage(simulator.signupCatalogue, request, texts[request.lang].logInFirst)
          }
          const [businessAccountId = "", phoneNumberId = "", country] = (value("choice") ?? "").split(":")
          if (businessAccountId === "" || phoneNumberId === "") {
            return dialogPage(simulator.signupCatalogue, request, texts[request.lang].chooseFirst)
          }
          const answer = yield* simulator.authorizeSignup(
            phoneNumberId === "new" ? { businessAccountId, provisionCountry: country } : { businessAccountId, phoneNumberId }
          ).pipe(Effect.option)
          if (Option.isNone(answer)) return dialogPage(simulator.signupCatalogue, request, texts[request.lang].chooseFirst)
          const granted = answer.value
          if (granted._tag === "Refused") return back([["error", granted.reason]])
          return back([
            ["code", granted.code],
            ["waba_id", granted.businessAccountId],
            ["phone_number_id", granted.phoneNumberId],
            ...(granted.provisioned ? [["provisioned", "true"] as const] : [])
          ])
        })
      )
    })
  )

/** The setup pages, and the simulated dialog when the host runs on the simulator. */
export const routes: Layer.Layer<never, never, HttpRouter.HttpRouter | Onboarding | UpstreamSettings> = Layer.mergeAll(
  linkRoutes,
  Layer.unwrap(Effect.map(Effect.service(UpstreamSettings), (settings) =>
    Option.match(settings.simulator, { onNone: () => Layer.empty, onSome: dialogRoutes })))
)
