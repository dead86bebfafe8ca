/**
 * The embedded inbox in real Chromium (issue 20 §1): find a conversation by search, reply, watch the reply reach
 * `read` without reloading, resume a handoff; both languages and modes render. With `PARLEY_UPDATE_SCREENSHOTS=1`
 * the screenshots are written to `docs/images/inbox-<language>-<mode>.png` (and `inbox-en-handoff.png`).
 */
import { Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Effect, Layer } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { assert, describe, it } from "vitest"
import { background, browserAvailable, DARK, LIGHT, launchBrowser, screenshot } from "./browser.ts"
import { eventually, hostForSuite, type MessagingHost } from "./messaging.support.ts"

let host: MessagingHost
let pnid: string
hostForSuite(Effect.succeed(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)), (h, p) => {
  host = h
  pnid = p
})

const writeIn = async (from: string, profile_name: string, body: string) => {
  const res = await host.request("POST", "/sandbox/inbound", {
    body: { phone_number_id: pnid, from, profile_name, message: { type: "text", text: { body } } }
  })
  assert.strictEqual(res.status, 202, res.text)
}

/** Waits until every inbound message of the number has been routed, so a trigger made next cannot take it. */
const routed = () =>
  eventually("inbound messages routed", async () => {
    const res = await host.request("GET", `/platform/v1/msg/messages?phone_number_id=${pnid}&direction=inbound`)
    return res.body.data.length > 0 && res.body.data.every((m: any) => m.ext.processing_status === "completed")
  })

const handoffWorkflow = async () => {
  const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({ id, position: { x: 0, y: 0 }, data: { node_type, config } })
  const definition = {
    nodes: [node("start", "start"), node("human", "handoff", { reason: "Asked for a person", context_data: { order: "A-1009", priority: "high" } }), node("back", "send_text", { message: "Back to the bot" })],
    edges: [{ source: "start", target: "human" }, { source: "human", target: "back" }]
  }
  const workflow = (await host.request("POST", "/platform/v1/workflows", { body: { workflow: { name: "Handoff", status: "draft", definition } } })).body.data
  await host.request("POST", `/platform/v1/workflows/${workflow.id}/triggers`, { body: { trigger: { trigger_type: "inbound_message", phone_number_id: pnid } } })
  await host.request("PATCH", `/platform/v1/workflows/${workflow.id}`, { body: { workflow: { status: "active", message_debounce_seconds: 0 } } })
}

describe.skipIf(!browserAvailable)("embedded inbox in Chromium", () => {
  it("finds a conversation by search, replies and sees it read live, resumes a handoff; renders both languages and modes", async () => {
    await writeIn("15550002001", "Olga Browser", "Hi, I need help with invoice 77")
    await writeIn("15550002002", "Pablo Browser", "¿Tienen envío a Valencia?")
    await routed()
    await handoffWorkflow()
    await writeIn("15550002003", "Hana Handoff", "Can I talk to a person?")

    const created = await host.request("POST", "/platform/v1/inbox_embeds", {
      body: { inbox_embed: { scope_type: "phone_number", scope_id: pnid, name: "Support desk", default_mode: "light", assigned_user_name: "Bea", assigned_user_id: "agent-1" } }
    })
    assert.strictEqual(created.status, 201, created.text)
    const { token, embed_url: embedUrl } = created.body.data

    const browser = await launchBrowser()
    try {
      const page = await browser.newPage({ viewport: { width: 1200, height: 760 } })
      const requests: Array<string> = []
      page.on("request", (request) => requests.push(request.url()))
      const errors: Array<string> = []
      page.on("pageerror", (error) => errors.push(error.message))
      page.on("console", (message) => message.type() === "error" && errors.push(message.text()))
      page.on("response", (answer) => answer.status() >= 400 && errors.push(`${answer.status()} ${answer.url()}`))

      const response = await page.goto(embedUrl, { waitUntil: "load" })
      assert.strictEqual(response?.status(), 200)
      await page.getByRole("heading", { name: /Support desk/ }).waitFor()

      // Find the conversation by search, open it: its message shows and is marked read.
      await page.getByRole("searchbox", { name: "Search" }).fill("invoice 77")
      const olga = page.locator("button.conversation", { hasText: "Olga Browser" })
      await olga.waitFor()
      await page.waitForFunction(() => document.querySelectorAll("button.conversation").length === 1, undefined, { timeout: 5_000 })
      assert.include(page.url(), "search=invoice+77")
      await olga.click()
      const messages = page.getByRole("region", { name: "Messages" })
      await messages.getByText("Hi, I need help with invoice 77").waitFor()
      await eventually("the contact's message is marked read", async () => {
        const thread = await host.request("GET", `/platform/v1/msg/messages?phone_number_id=${pnid}&phone_number=15550002001&direction=inbound`)
        return thread.body.data[0]?.ext.status === "read"
      })

      // Reply from the keyboard; the reply's ticks move to read without a reload.
      const composer = page.getByRole("textbox", { name: "Reply" })
      await composer.fill("Invoice 77 is paid, thanks!")
      await composer.press("Enter")
      const reply = page.locator("li.message.outbound", { hasText: "Invoice 77 is paid, thanks!" })
      await reply.waitFor()
      await reply.getByText("Sent by Bea").waitFor()
      await page.locator("li.message.outbound[data-status=read]", { hasText: "Invoice 77 is paid" }).waitFor({ timeout: 15_000 })
      await background(page, LIGHT)
      await screenshot(page, "inbox-en-light")

      // Dark mode, and the system mode following the browser's scheme.
      await page.getByRole("combobox", { name: "Appearance" }).selectOption("dark")
      await background(page, DARK)
      await screenshot(page, "inbox-en-dark")
      await page.emulateMedia({ colorScheme: "dark" })
      await page.getByRole("combobox", { name: "Appearance" }).selectOption("system")
      await background(page, DARK)
      await page.emulateMedia({ colorScheme: "light" })
      await background(page, LIGHT)

      // The handoff: listed under its filter with the reason, resumed; the workflow's next message arrives live.
      await page.getByRole("searchbox", { name: "Search" }).fill("")
      await page.getByRole("checkbox", { name: "Handoff" }).check()
      const hana = page.locator("button.conversation", { hasText: "Hana Handoff" })
      await hana.waitFor({ timeout: 15_000 })
      await hana.click()
      await page.getByText("Why: Asked for a person").waitFor()
      await page.getByRole("status").getByText("A-1009").waitFor()
      await screenshot(page, "inbox-en-handoff")
      await page.getByRole("button", { name: "Resume automation" }).click()
      await messages.getByText("Back to the bot").waitFor({ timeout: 15_000 })
      assert.strictEqual(await page.getByText("Why: Asked for a person").count(), 0)

      // Spanish from the address (overriding the token's English), light and dark.
      const spanish = await browser.newPage({ viewport: { width: 1200, height: 760 } })
      spanish.on("request", (request) => requests.push(request.url()))
      await spanish.goto(`${embedUrl}?lang=es&search=Valencia`, { waitUntil: "load" })
      await spanish.locator("button.conversation", { hasText: "Pablo Browser" }).click()
      await spanish.getByRole("region", { name: "Mensajes" }).getByText("¿Tienen envío a Valencia?").waitFor()
      await spanish.getByRole("button", { name: "Finalizar conversación" }).waitFor()
      await spanish.getByRole("textbox", { name: "Respuesta" }).waitFor()
      await spanish.locator("button.conversation .badge.unread").waitFor({ state: "detached" })
      await background(spanish, LIGHT)
      await screenshot(spanish, "inbox-es-light")
      await spanish.getByRole("combobox", { name: "Apariencia" }).selectOption("dark")
      await background(spanish, DARK)
      await screenshot(spanish, "inbox-es-dark")

      // Every request stayed on the host, and the token went only to it.
      const foreign = requests.filter((url) => !url.startsWith(host.url))
      assert.deepStrictEqual(foreign, [])
      assert.isTrue(requests.some((url) => url.startsWith(`${host.url}/inbox/v1/`)))
      assert.deepStrictEqual(errors, [])
      assert.isString(token)
    } finally {
      await browser.close()
    }
  }, 90_000)

  it("can be framed only by its allowed origins (the inbox and the workflow viewer)", async () => {
    // A host page on another origin (another port) that frames whatever address it is given.
    const parent = createServer((request, response) => {
      const target = new URL(request.url ?? "/", "http://x").searchParams.get("src") ?? ""
      response.writeHead(200, { "content-type": "text/html" })
      response.end(`<!doctype html><title>host app</title><iframe id="inbox" src="${target.replace(/"/g, "&quot;")}" width="900" height="600"></iframe>`)
    })
    await new Promise<void>((resolve) => parent.listen(0, "127.0.0.1", resolve))
    const origin = `http://127.0.0.1:${(parent.address() as AddressInfo).port}`
    const browser = await launchBrowser()
    try {
      // The inbox and the workflow viewer share the page shell and its headers: both are checked.
      for (const kind of ["inbox_embed", "workflow_embed"]) {
        const embed = async (allowed_origins: Array<string>) =>
          (await host.request("POST", `/platform/v1/${kind}s`, { body: { [kind]: { scope_type: "project", name: "Framed", allowed_origins } } }))
            .body.data.embed_url as string
        const page = await browser.newPage()
        await page.goto(`${origin}/?src=${encodeURIComponent(await embed([origin]))}`)
        await page.frameLocator("#inbox").getByRole("heading", { name: /Framed/ }).waitFor()

        const refused = await browser.newPage()
        const blocked = new Promise<void>((resolve) =>
          refused.on("console", (message) => message.text().includes("frame-ancestors") && resolve()))
        await refused.goto(`${origin}/?src=${encodeURIComponent(await embed(["https://elsewhere.example"]))}`)
        await blocked
        assert.strictEqual(await refused.frameLocator("#inbox").getByRole("heading").count(), 0, kind)
      }
    } finally {
      await browser.close()
      await new Promise<void>((resolve) => parent.close(() => resolve()))
    }
  }, 60_000)
})
