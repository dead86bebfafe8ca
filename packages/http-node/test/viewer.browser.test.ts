/**
 * The embedded workflow viewer in real Chromium (issue 31 §3), opened from a created embed's URL: the README's
 * order bot drawn from its definition (positions all zero: the layered layout), a node chosen from the keyboard and
 * edited with its problem drawn on it, a finished run's path and timeline, a test run followed live to its end, both
 * languages and modes, and every request on the host's origin. With `PARLEY_UPDATE_SCREENSHOTS=1` the screenshots
 * are written to `docs/images/viewer-*.png`.
 */
import { Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Layer } from "effect"
import type { Page } from "playwright-core"
import { assert, describe, it } from "vitest"
import { background, browserAvailable, DARK, LIGHT, launchBrowser, screenshot } from "./browser.ts"
import { createOrderBot, type OrderBotHost, orderBotHostForSuite, runOrderBot } from "./viewer.support.ts"

let bot: OrderBotHost
orderBotHostForSuite(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer), (h) => void (bot = h))

describe.skipIf(!browserAvailable)("workflow viewer in Chromium", () => {
  it("draws the order bot, edits a node with its problem shown on it, shows a finished run's path and events, follows a test run live", async () => {
    const workflowId = await createOrderBot(bot)
    const executionId = await runOrderBot(bot, workflowId, "15557654321")
    const created = await bot.host.request("POST", "/platform/v1/workflow_embeds", {
      body: { workflow_embed: { scope_type: "workflow", scope_id: workflowId, access: "edit", default_mode: "light" } }
    })
    assert.strictEqual(created.status, 201, created.text)
    const embedUrl: string = created.body.data.embed_url

    const browser = await launchBrowser()
    try {
      const requests: Array<string> = []
      const errors: Array<string> = []
      const watch = (page: Page) => {
        page.on("request", (request) => requests.push(request.url()))
        page.on("pageerror", (error) => errors.push(error.message))
        page.on("console", (message) => message.type() === "error" && errors.push(message.text()))
        page.on("response", (answer) => answer.status() >= 400 && errors.push(`${answer.status()} ${answer.url()}`))
      }
      const page = await browser.newPage({ viewport: { width: 1440, height: 820 } })
      watch(page)
      const response = await page.goto(embedUrl, { waitUntil: "load" })
      assert.strictEqual(response?.status(), 200)
      await page.getByRole("heading", { name: "Order bot" }).waitFor()

      // The graph: every node with its type and name, laid out left to right from the start, labelled edges.
      const graph = page.getByRole("group", { name: "Graph of Order bot" })
      for (const id of ["start", "hi", "ask", "route", "status", "human"]) await graph.locator(`[data-node="${id}"]`).waitFor()
      await graph.getByRole("button", { name: /^Decide \(decide\), node route/ }).waitFor()
      const x = async (id: string) => Number((await graph.locator(`[data-node="${id}"]`).getAttribute("transform"))!.match(/translate\(([\d.]+)/)![1])
      assert.isBelow(await x("start"), await x("hi"))
      assert.isBelow(await x("ask"), await x("route"))
      assert.isBelow(await x("route"), await x("status"))
      assert.strictEqual(await x("status"), await x("human"))
      assert.deepStrictEqual(await graph.locator(".edge-label text").allTextContents(), ["yes", "no"])
      await page.getByText("The definition is valid.").waitFor()
      await background(page, LIGHT)
      await screenshot(page, "viewer-en-graph-light")

      // From the keyboard: Tab to the greeting, Enter opens it; emptying its configuration draws the problem on it.
      await graph.locator('[data-node="start"]').focus()
      await page.keyboard.press("Tab")
      await page.keyboard.press("Enter")
      const panel = page.getByRole("region", { name: "Node hi" })
      await panel.waitFor()
      const config = panel.getByRole("textbox", { name: "Configuration (JSON)" })
      const original = await config.inputValue()
      assert.include(original, "Your order status?")
      await config.fill("{}")
      await graph.locator('[data-node="hi"].problem').waitFor()
      await page.getByRole("region", { name: "Problems" }).getByText(/nodes\.hi\.config\.message/).waitFor()
      await screenshot(page, "viewer-en-problem")
      await config.fill(original)
      await page.getByText("The definition is valid.").waitFor()
      assert.strictEqual(await graph.locator(".node.problem").count(), 0)

      // The finished run: its path over the graph, its timeline.
      await page.getByRole("button", { name: "Executions", exact: true }).click()
      await page.locator(`button.run-item[data-status="ended"]`).first().click()
      await page.getByRole("status").getByText("Ended").waitFor()
      assert.include(page.url(), `run=${executionId}`)
      const run = page.getByRole("group", { name: `Execution ${executionId}` })
      await run.locator('[data-node="status"].visited').waitFor()
      for (const id of ["start", "hi", "ask", "route", "status"]) assert.strictEqual(await run.locator(`[data-node="${id}"].visited`).count(), 1, id)
      assert.strictEqual(await run.locator('[data-node="human"].visited').count(), 0)
      assert.strictEqual(await run.locator(".edge.taken").count(), 4)
      assert.strictEqual(await run.locator('.edge.taken[data-target="status"]').count(), 1)
      const timeline = page.getByRole("list", { name: "Timeline" })
      await timeline.locator('[data-type="execution_ended"]').waitFor()
      await timeline.locator('[data-type="user_input_received"] .event-summary').getByText("“yes please”").waitFor()
      await timeline.locator('[data-type="decision_evaluated"]').first().waitFor()
      await screenshot(page, "viewer-en-run-light")
      await page.getByRole("combobox", { name: "Appearance" }).selectOption("dark")
      await background(page, DARK)
      await screenshot(page, "viewer-en-run-dark")

      // A test run from the page on the sandbox number, followed live: it waits for the answer, then ends.
      await page.getByRole("button", { name: "Executions", exact: true }).click()
      await page.getByRole("textbox", { name: "Contact phone number" }).fill("+1 555 765 4321")
      await page.getByRole("button", { name: /^Start on / }).click()
      const live = page.locator('[data-node="ask"].current')
      await live.waitFor({ timeout: 15_000 })
      await page.getByText("Waiting: wait_for_response").waitFor()
      await bot.host.request("POST", "/sandbox/inbound", {
        body: { phone_number_id: bot.pnid, from: "15557654321", profile_name: "Bo", message: { type: "text", text: { body: "no thanks" } } }
      })
      await page.locator('[data-node="human"].visited').waitFor({ timeout: 15_000 })
      await page.getByRole("status").getByText(/Handoff|Ended|Waiting/).waitFor()

      // Spanish from the address, light and dark.
      const spanish = await browser.newPage({ viewport: { width: 1440, height: 820 } })
      watch(spanish)
      await spanish.goto(`${embedUrl}?lang=es&run=${executionId}`, { waitUntil: "load" })
      await spanish.getByRole("list", { name: "Cronología" }).locator('[data-type="execution_ended"]').waitFor()
      await spanish.getByRole("status").getByText("Finalizada").waitFor()
      await background(spanish, LIGHT)
      await screenshot(spanish, "viewer-es-run-light")
      await spanish.getByRole("button", { name: "Grafo" }).click()
      await spanish.getByText("La definición es válida.").waitFor()
      await spanish.getByRole("combobox", { name: "Apariencia" }).selectOption("dark")
      await background(spanish, DARK)
      await screenshot(spanish, "viewer-es-graph-dark")

      // Every request stayed on the host's origin.
      const foreign = requests.filter((url) => !url.startsWith(`${bot.host.url}/`))
      assert.deepStrictEqual(foreign, [])
      assert.isTrue(requests.some((url) => url.startsWith(`${bot.host.url}/viewer/v1/`)))
      assert.deepStrictEqual(errors, [])
    } finally {
      await browser.close()
    }
  }, 120_000)
})
