/**
 * The simulated network's signup dialog, which a host in simulator mode serves where the real network's embedded
 * signup would open (`SIMULATED_SIGNUP_PATH`): a login (any account), a number of the simulated catalogue or a new
 * one, then back to the setup page with a one-time code, or the network's refusal.
 */
import { PublicUrl, SETUP_PAGE_PATH, SIMULATED_SIGNUP_PATH } from "@parley/core"
import { type SignupBusiness, Simulator } from "@parley/core/simulators"
import { Effect, Layer, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse, UrlParams } from "effect/http"
import { escapeHtml, given, page, queryOf, redirect } from "../pages/SetupPages.ts"
import { type PageLanguage, pageLanguage, type SetupText, texts } from "../pages/SetupText.ts"

/** What the dialog serves (the host's 405 answers name them). */
export const ROUTES = [
  { method: "GET", path: SIMULATED_SIGNUP_PATH },
  { method: "POST", path: SIMULATED_SIGNUP_PATH }
] as const

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
      // Posted back to the dialog's own address, relative to it, so an embedder's path prefix stays.
      `<form method="post" action="${SIMULATED_SIGNUP_PATH.slice(SIMULATED_SIGNUP_PATH.lastIndexOf("/") + 1)}">` +
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

/** The dialog, when a network simulator runs in this host. */
export const routes: Layer.Layer<never, never, HttpRouter.HttpRouter> = Layer.unwrap(
  Effect.map(Effect.serviceOption(Simulator.NetworkSimulator), Option.match({ onNone: () => Layer.empty, onSome: dialogRoutes }))
)
