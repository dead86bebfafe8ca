/**
 * The setup link's page in real Chromium: a customer connects a number with
 * the keyboard through the simulated network's dialog, and each failure of
 * decisions 2.13 comes back to the link's failure address with its
 * `error_code`. Saves the page in English and Spanish to `docs/images`.
 */
import { Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Effect, Exit, Layer, Scope } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { Browser, Page } from "playwright-core"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { browserAvailable, launchBrowser } from "./browser.ts"
import { type MessagingHost, startMessagingHost } from "./messaging.support.ts"
import { type Receiver, startReceiver } from "./receiver.ts"

const images = Path.join(import.meta.dirname, "../../../docs/images")

let host: MessagingHost
let receiver: Receiver
let browser: Browser
let scope: Scope.Closeable

beforeAll(async () => {
  scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    receiver = yield* startReceiver
    host = yield* startMessagingHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer))
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  if (browserAvailable) browser = await launchBrowser()
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await Effect.runPromise(Scope.close(scope, Exit.void))
})

const theme = {
  primary_color: "#5b21b6",
  primary_foreground_color: "#ffffff",
  background_color: "#f5f3ff",
  card_color: "#ffffff",
  text_color: "#1e1b4b",
  border_color: "#ddd6fe"
}

const newLink = async (setupLink: Record<string, unknown>) => {
  const customer = await host.request("POST", "/platform/v1/customers", { body: { customer: { name: "Shop" } } })
  const res = await host.request("POST", `/platform/v1/customers/${customer.body.data.id}/setup_links`, {
    body: { setup_link: setupLink }
  })
  assert.strictEqual(res.status, 201, res.text)
  return res.body.data as { readonly id: string; readonly url: string; readonly customer_id: string }
}

/** A fresh page that records every request leaving the host (the receiver stands for the project's site). */
const openPage = async () => {
  const page = await browser.newPage({ viewport: { width: 900, height: 900 } })
  const outside: Array<string> = []
  page.on("request", (r) => {
    if (!r.url().startsWith(host.url) && !r.url().startsWith(receiver.url)) outside.push(r.url())
  })
  return { page, outside }
}

/** Leaves the link's page for the dialog with the keyboard: the button is the first thing Tab reaches. */
const startWithKeyboard = async (page: Page) => {
  await page.keyboard.press("Tab")
  const focused = await page.evaluate(() => document.activeElement?.textContent ?? "")
  assert.strictEqual(focused, "Continue to log in")
  await Promise.all([page.waitForURL(/\/simulator\/signup/), page.keyboard.press("Enter")])
}

const logIn = async (page: Page) => {
  await page.getByLabel("Email").fill("owner@shop.example")
  await page.getByLabel("Password").fill("correct horse")
}

describe.skipIf(!browserAvailable)("setup link page", () => {
  it("connects a number with the keyboard and screenshots both languages", async () => {
    Fs.mkdirSync(images, { recursive: true })
    const link = await newLink({ theme_config: theme, language: "en" })
    const { outside, page } = await openPage()
    try {
      const response = await page.goto(link.url)
      assert.strictEqual(response?.status(), 200)
      await page.getByRole("heading", { name: "Connect your business number" }).waitFor()
      await page.screenshot({ path: Path.join(images, "setup-link-en.png"), fullPage: true })
      // The theme reached the button.
      const background = await page.getByRole("link", { name: "Continue to log in" }).evaluate((el) => getComputedStyle(el).backgroundColor)
      assert.strictEqual(background, "rgb(91, 33, 182)")

      await startWithKeyboard(page)
      await logIn(page)
      // Radio and buttons are reached and used by keyboard too.
      await page.getByLabel(/\+1 555-020-0011/).focus()
      await page.keyboard.press("Space")
      assert.isTrue(await page.getByLabel(/\+1 555-020-0011/).isChecked())
      await page.getByRole("button", { name: "Log in and connect" }).focus()
      await Promise.all([page.waitForURL(/\/callback/), page.keyboard.press("Enter")])
      await page.getByRole("heading", { name: "Your number is connected" }).waitFor()
      assert.include(await page.getByRole("status").textContent(), "+15550200011")
      const read = await host.request("GET", `/platform/v1/customers/${link.customer_id}/setup_links/${link.id}`)
      assert.strictEqual(read.body.data.status, "used")

      const es = await newLink({ theme_config: theme, language: "es", provision_phone_number: true, phone_number_country_isos: ["MX", "ES"] })
      await page.goto(es.url)
      await page.getByRole("heading", { name: "Conecta el número de tu empresa" }).waitFor()
      await page.screenshot({ path: Path.join(images, "setup-link-es.png"), fullPage: true })
      await page.getByRole("link", { name: "Continuar para iniciar sesión" }).click()
      await page.getByRole("heading", { name: "Inicia sesión en la red de mensajería" }).waitFor()
      await page.getByLabel("Correo electrónico").fill("duena@tienda.example")
      await page.getByLabel("Contraseña").fill("secreta")
      await page.getByLabel(/Un número nuevo en MX/).check()
      await page.getByRole("button", { name: "Iniciar sesión y conectar" }).click()
      await page.getByRole("heading", { name: "Tu número está conectado" }).waitFor()
      assert.match(await page.getByRole("status").textContent() ?? "", /\+52555/)
      assert.deepStrictEqual(outside, [], "no request leaves the host")
      assert.isTrue(Fs.statSync(Path.join(images, "setup-link-es.png")).size > 10_000)
    } finally {
      await page.close()
    }
  }, 60_000)

  it("sends each failure back to the failure address with its error_code", async () => {
    const failed = `${receiver.url}/failed`
    const link = await newLink({ failure_redirect_url: failed, success_redirect_url: `${receiver.url}/connected` })
    const { outside, page } = await openPage()
    const errorCode = () => new URL(page.url()).searchParams.get("error_code")
    const attempt = async (choose: () => Promise<void>, button = "Log in and connect") => {
      await page.goto(link.url)
      await page.getByRole("link", { name: "Continue to log in" }).click()
      await logIn(page)
      await choose()
      await Promise.all([page.waitForURL(`${failed}?**`), page.getByRole("button", { name: button }).click()])
      assert.strictEqual(new URL(page.url()).searchParams.get("setup_link_id"), link.id)
      return errorCode()
    }
    try {
      assert.strictEqual(await attempt(async () => {}, "Cancel"), "upstream_auth_failed")
      assert.strictEqual(await attempt(() => page.getByLabel(/Business at its account limit/).check()), "waba_limit_reached")
      assert.strictEqual(await attempt(() => page.getByLabel(/Demo Unverified/).check()), "phone_verification_failed")
      assert.strictEqual(await attempt(() => page.getByLabel(/Business that withdraws its grant/).check()), "token_exchange_failed")

      // After the failures the link still works; once used, it answers already_used.
      await page.goto(link.url)
      await page.getByRole("link", { name: "Continue to log in" }).click()
      await logIn(page)
      await page.getByLabel(/\+1 555-020-0012/).check()
      await Promise.all([page.waitForURL(`${receiver.url}/connected?**`), page.getByRole("button", { name: "Log in and connect" }).click()])
      assert.strictEqual(new URL(page.url()).searchParams.get("phone_number_id"), "300000000000012")
      await page.goto(link.url)
      assert.strictEqual(errorCode(), "already_used")

      // A revoked (or expired) link answers link_expired.
      const revoked = await newLink({ failure_redirect_url: failed })
      await host.request("PATCH", `/platform/v1/customers/${revoked.customer_id}/setup_links/${revoked.id}`, {
        body: { setup_link: { status: "revoked" } }
      })
      await page.goto(revoked.url)
      assert.strictEqual(errorCode(), "link_expired")
      assert.deepStrictEqual(outside, [])
    } finally {
      await page.close()
    }
  }, 60_000)
})
