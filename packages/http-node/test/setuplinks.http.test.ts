/**
 * Setup links over real HTTP (memory ports, simulated network): the endpoints
 * on both surfaces with their refusals, the page's HTML (theme, language,
 * headers), and a whole onboarding through the simulated dialog's forms, down
 * to the redirect query, the connected number and the project webhook.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { eventually, type MessagingHost, startMessagingHost } from "./messaging.support.ts"
import { type Receiver, startReceiver } from "./receiver.ts"

let host: MessagingHost
let receiver: Receiver
let close: () => Promise<void>

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    receiver = yield* startReceiver
    host = yield* startMessagingHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer), {
      PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS: "true"
    })
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
}, 60_000)
afterAll(() => close())

const newCustomer = async (key?: string) => {
  const res = await host.request("POST", "/platform/v1/customers", {
    body: { customer: { name: "Shop" } },
    ...(key !== undefined ? { key } : {})
  })
  assert.strictEqual(res.status, 201, res.text)
  return res.body.data.id as string
}

const createLink = async (customerId: string, setupLink: Record<string, unknown> = {}) => {
  const res = await host.request("POST", `/platform/v1/customers/${customerId}/setup_links`, { body: { setup_link: setupLink } })
  assert.strictEqual(res.status, 201, res.text)
  return res.body.data
}

/** A GET that does not follow redirects. */
const visit = (url: string, headers: Record<string, string> = {}) => fetch(url, { redirect: "manual", headers })

const READ_KEYS = [
  "allowed_connection_types",
  "created_at",
  "customer_id",
  "error_code",
  "expires_at",
  "failure_redirect_url",
  "id",
  "language",
  "msg_setup_status",
  "phone_number_country_isos",
  "phone_number_id",
  "provision_phone_number",
  "reconnect_phone_number",
  "revoked_at",
  "status",
  "success_redirect_url",
  "theme_config",
  "updated_at",
  "upstream_billing_mode",
  "used_at"
]

describe("setup links", () => {
  it("creates, lists on both surfaces, reads and revokes, with the token and url answered once", async () => {
    const customer = await newCustomer()
    const link = await createLink(customer, {
      success_redirect_url: "https://example.com/ok",
      theme_config: { primary_color: "#123456" },
      language: "es",
      upstream_billing_mode: "partner_managed"
    })
    assert.deepStrictEqual(Object.keys(link).sort(), [...READ_KEYS, "token", "url"].sort())
    assert.strictEqual(link.url, `${host.url}/setup/${link.token}`)
    assert.strictEqual(link.status, "active")
    assert.strictEqual(link.customer_id, customer)
    assert.strictEqual(Date.parse(link.expires_at) - Date.parse(link.created_at), 30 * 24 * 3600 * 1000)

    const second = await createLink(customer)
    for (const path of [`/platform/v1/customers/${customer}/setup_links`, `/api/v1/customers/${customer}/setup_links`]) {
      const list = await host.request("GET", `${path}?per_page=1`)
      assert.strictEqual(list.status, 200, list.text)
      assert.deepStrictEqual(list.body.meta, { page: 1, per_page: 1, total_pages: 2, total_count: 2 })
      assert.strictEqual(list.headers.get("x-total"), "2")
      assert.deepStrictEqual(list.body.data.map((l: any) => [l.id, l.status]), [[second.id, "active"]])
      assert.deepStrictEqual(Object.keys(list.body.data[0]).sort(), READ_KEYS)
      const page2 = await host.request("GET", `${path}?page=2&per_page=1`)
      assert.deepStrictEqual(page2.body.data.map((l: any) => [l.id, l.status]), [[link.id, "revoked"]])
    }
    const one = await host.request("GET", `/platform/v1/customers/${customer}/setup_links/${second.id}`)
    assert.strictEqual(one.status, 200)
    assert.notProperty(one.body.data, "token")

    const patched = await host.request("PATCH", `/platform/v1/customers/${customer}/setup_links/${second.id}`, {
      body: { setup_link: { failure_redirect_url: "https://example.com/no", theme_config: { text_color: "#010203" }, language: "en" } }
    })
    assert.strictEqual(patched.status, 200, patched.text)
    assert.strictEqual(patched.body.data.failure_redirect_url, "https://example.com/no")
    assert.deepStrictEqual(patched.body.data.theme_config, { text_color: "#010203" })
    const revoked = await host.request("PATCH", `/platform/v1/customers/${customer}/setup_links/${second.id}`, {
      body: { setup_link: { status: "revoked" } }
    })
    assert.strictEqual(revoked.body.data.status, "revoked")
    assert.isString(revoked.body.data.revoked_at)
    const again = await host.request("PATCH", `/platform/v1/customers/${customer}/setup_links/${second.id}`, {
      body: { setup_link: { language: "es" } }
    })
    assert.strictEqual(again.status, 422)
    assert.deepStrictEqual(Object.keys(again.body), ["error"])
  })

  it("refuses with the spec's statuses and error bodies", async () => {
    const customer = await newCustomer()
    const base = `/platform/v1/customers/${customer}/setup_links`
    const bad = await host.request("POST", base, { body: { setup_link: { theme_config: { primary_color: "red" } } } })
    assert.strictEqual(bad.status, 422)
    assert.deepStrictEqual(bad.body.details, [{ path: "setup_link.theme_config.primary_color", message: "must be a colour in #RRGGBB" }])
    assert.strictEqual((await host.request("POST", base, { body: { setup_link: { language: "de" } } })).status, 422)
    assert.strictEqual((await host.request("POST", base, { body: { setup_link: { reconnect_phone_number: "+15550100001" } } })).status, 422)
    assert.strictEqual((await host.request("POST", base, { body: {} })).status, 400, "missing envelope")
    assert.strictEqual((await host.request("POST", base, { raw: "{", headers: { "content-type": "application/json" } })).status, 400)
    const unknown = await host.request("POST", "/platform/v1/customers/nope/setup_links", { body: { setup_link: {} } })
    assert.deepStrictEqual([unknown.status, unknown.body], [404, { error: "Customer not found" }])
    assert.strictEqual((await host.request("GET", base, { key: host.otherKey })).status, 404, "another project's customer")
    assert.strictEqual((await host.request("GET", `/api/v1/customers/nope/setup_links`)).status, 404)
    assert.strictEqual((await host.request("GET", `${base}?per_page=101`)).status, 422)
    assert.strictEqual((await host.request("GET", base, { key: null })).status, 401)
    const link = await createLink(customer)
    const status = await host.request("PATCH", `${base}/${link.id}`, { body: { setup_link: { status: "active" } } })
    assert.strictEqual(status.status, 422)
    assert.strictEqual((await host.request("PATCH", `${base}/nope`, { body: { setup_link: {} } })).status, 404)
    assert.strictEqual((await host.request("GET", `${base}/${link.id}`, { key: host.otherKey })).status, 404)
  })

  it("serves the page themed, in the link's language or the browser's, without scripts or outside assets", async () => {
    const customer = await newCustomer()
    const es = await createLink(customer, { language: "es", theme_config: { primary_color: "#AA0011" } })
    const page = await visit(es.url)
    assert.strictEqual(page.status, 200)
    assert.match(page.headers.get("content-type") ?? "", /^text\/html/)
    assert.include(page.headers.get("content-security-policy") ?? "", "default-src 'none'")
    const html = await page.text()
    assert.include(html, `<html lang="es">`)
    assert.include(html, "Conecta el número de tu empresa")
    assert.include(html, "--primary-color:#aa0011;")
    assert.notMatch(html, /<script|<link|src=|https?:\/\/(?!127\.0\.0\.1)/)

    const browserChooses = await createLink(await newCustomer())
    const spanish = await (await visit(browserChooses.url, { "accept-language": "fr-FR, es;q=0.8, en;q=0.5" })).text()
    assert.include(spanish, `<html lang="es">`)
    const english = await (await visit(browserChooses.url, { "accept-language": "de" })).text()
    assert.include(english, `<html lang="en">`)
    assert.include(english, "Connect your business number")

    const missing = await visit(`${host.url}/setup/not-a-token`)
    assert.strictEqual(missing.status, 404)
    assert.include(await missing.text(), "Setup link not found")
    const wrongMethod = await fetch(es.url, { method: "DELETE" })
    assert.strictEqual(wrongMethod.status, 405)
  })

  it("walks the simulated dialog to a connected number, redirects with the exact query and notifies the project", async () => {
    const webhook = await host.request("POST", "/platform/v1/msg/webhooks", {
      body: { msg_webhook: { url: `${receiver.url}/numbers`, secret_key: "s3cret-s3cret", events: ["msg.phone_number.created"] } }
    })
    assert.strictEqual(webhook.status, 201, webhook.text)
    const customer = await newCustomer()
    const link = await createLink(customer, {
      success_redirect_url: "https://example.com/connected",
      failure_redirect_url: "https://example.com/failed",
      allowed_connection_types: ["dedicated"]
    })
    const html = await (await visit(link.url)).text()
    const dialogHref = /<a class="button" href="([^"]+)"/.exec(html)![1]!.replace(/&amp;/g, "&")
    const dialogUrl = new URL(dialogHref)
    assert.strictEqual(dialogUrl.origin + dialogUrl.pathname, `${host.url}/simulator/signup`)

    const dialog = await (await visit(dialogHref)).text()
    assert.include(dialog, "+1 555-020-0011")
    assert.notInclude(dialog, "+1 555-020-0012", "a coexistence number is not offered to a dedicated-only link")
    const form = new URLSearchParams()
    for (const [, name, value] of dialog.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
      form.set(name!, value!.replace(/&amp;/g, "&"))
    }
    const submit = (action: string, choice?: string, login = true) => {
      const body = new URLSearchParams(form)
      body.set("action", action)
      if (login) {
        body.set("email", "owner@shop.example")
        body.set("password", "secret")
      }
      if (choice !== undefined) body.set("choice", choice)
      return fetch(`${host.url}/simulator/signup`, { method: "POST", body, redirect: "manual" })
    }

    // Cancelling the login comes back as upstream_auth_failed.
    const cancelled = await submit("cancel")
    assert.strictEqual(cancelled.status, 303)
    const failed = await visit(cancelled.headers.get("location")!)
    assert.strictEqual(failed.headers.get("location"), `https://example.com/failed?setup_link_id=${link.id}&error_code=upstream_auth_failed`)

    // The simulated login needs an email and a password; without a number chosen the dialog asks again.
    const noLogin = await submit("connect", "300000000000001:300000000000011", false)
    assert.strictEqual(noLogin.status, 200)
    assert.include(await noLogin.text(), "Enter your email and password to log in.")
    const noChoice = await submit("connect")
    assert.include(await noChoice.text(), "Choose a phone number first.")

    const chosen = await submit("connect", "300000000000001:300000000000011")
    const callback = chosen.headers.get("location")!
    assert.isTrue(callback.startsWith(`${host.url}/setup/${link.token}/callback?`))
    const done = await visit(callback)
    assert.strictEqual(done.status, 303)
    assert.strictEqual(
      done.headers.get("location"),
      `https://example.com/connected?setup_link_id=${link.id}&status=completed&phone_number_id=300000000000011` +
        `&business_account_id=300000000000001&display_phone_number=%2B15550200011`
    )
    // Reloaded, the callback sends the customer to the same success address (not the failure one).
    const reloaded = await visit(callback)
    assert.strictEqual(reloaded.status, 303)
    assert.strictEqual(reloaded.headers.get("location"), done.headers.get("location"))
    const numbers = await host.request("GET", `/platform/v1/msg/phone_numbers?customer_id=${customer}`)
    assert.deepStrictEqual(numbers.body.data.map((n: any) => n.phone_number_id), ["300000000000011"])
    const read = await host.request("GET", `/platform/v1/customers/${customer}/setup_links/${link.id}`)
    assert.strictEqual(read.body.data.status, "used")
    assert.strictEqual(read.body.data.msg_setup_status, "completed")
    assert.strictEqual(read.body.data.phone_number_id, "300000000000011")

    const [delivery] = await receiver.received(1)
    assert.strictEqual(delivery!.headers["x-webhook-event"], "msg.phone_number.created")
    const payload = JSON.parse(delivery!.raw.toString("utf8"))
    assert.strictEqual(payload.phone_number_id, "300000000000011")
    assert.deepStrictEqual(payload.customer, { id: customer })

    // The used link's page sends the customer to the failure address.
    const spent = await visit(link.url)
    assert.strictEqual(spent.headers.get("location"), `https://example.com/failed?setup_link_id=${link.id}&error_code=already_used`)
    // The page's token and the dialog's code are credentials: no log line carries them.
    const code = new URL(callback).searchParams.get("code")!
    assert.isTrue(host.logs.some((line) => line.includes("/setup/:token/callback")))
    assert.isFalse(host.logs.some((line) => line.includes(link.token) || line.includes(code)))
    await eventually("the number is listed", async () =>
      (await host.request("GET", "/platform/v1/msg/phone_numbers/300000000000011")).status === 200)
  })

  it("in Spanish, names the simulated accounts in Spanish; the success page still says connected when reloaded", async () => {
    const customer = await newCustomer()
    const link = await createLink(customer, { language: "es", provision_phone_number: true, phone_number_country_isos: ["MX"] })
    const html = await (await visit(link.url)).text()
    const dialogHref = /<a class="button" href="([^"]+)"/.exec(html)![1]!.replace(/&amp;/g, "&")
    const dialog = await (await visit(dialogHref)).text()
    for (const name of ["Empresa de demostración", "Soporte de demostración", "Empresa en su límite de cuentas"]) {
      assert.include(dialog, name)
    }
    for (const name of ["Demo Business", "Demo Support", "Business at its account limit"]) assert.notInclude(dialog, name)
    const form = new URLSearchParams()
    for (const [, name, value] of dialog.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
      form.set(name!, value!.replace(/&amp;/g, "&"))
    }
    form.set("action", "connect")
    form.set("email", "owner@shop.example")
    form.set("password", "secret")
    form.set("choice", "300000000000001:new:MX")
    const chosen = await fetch(`${host.url}/simulator/signup`, { method: "POST", body: form, redirect: "manual" })
    const callback = chosen.headers.get("location")!
    const first = await visit(callback)
    assert.strictEqual(first.status, 200)
    const connected = await first.text()
    assert.include(connected, "<h1>Tu número está conectado</h1>")
    // A reload (or the browser restoring the tab) shows the same page, not a failure.
    for (let i = 0; i < 2; i++) {
      const again = await visit(callback)
      assert.strictEqual(again.status, 200)
      assert.strictEqual(await again.text(), connected)
    }
    // Only the number this link connected: another number's callback on the used link is still refused.
    const other = new URL(callback)
    other.searchParams.set("phone_number_id", "300000000000011")
    assert.notInclude(await (await visit(other.toString())).text(), "<h1>Tu número está conectado</h1>")
  })

  it("shows the outcome on the page when the link has no redirect, and refuses dialog redirects elsewhere", async () => {
    const customer = await newCustomer()
    const link = await createLink(customer, { language: "es" })
    const callback = `${host.url}/setup/${link.token}/callback`
    const failed = await visit(`${callback}?error=waba_limit_reached`)
    assert.strictEqual(failed.status, 200)
    const text = await failed.text()
    assert.include(text, "La empresa alcanzó su límite de cuentas de mensajería.")
    assert.include(text, `href="${link.url}"`, "the customer can try again (the link's own address)")
    const page = await (await visit(link.url)).text()
    assert.include(page, "El último intento no terminó")

    await host.request("PATCH", `/platform/v1/customers/${customer}/setup_links/${link.id}`, {
      body: { setup_link: { status: "revoked" } }
    })
    const ended = await visit(link.url)
    assert.strictEqual(ended.status, 410)
    assert.include(await ended.text(), "Este enlace de configuración caducó o fue reemplazado por uno más reciente.")

    const elsewhere = await visit(`${host.url}/simulator/signup?redirect_uri=${encodeURIComponent("https://evil.example/setup/x")}`)
    assert.strictEqual(elsewhere.status, 400)
  })
})
