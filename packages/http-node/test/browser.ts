/**
 * Real Chromium for tests of the host's web pages (Debian's `chromium`,
 * driven by playwright-core). `.ci/run` installs it; on a machine without it
 * the browser tests are skipped with a note, except under CI where a missing
 * browser is a failure.
 */
import * as Fs from "node:fs"
import { type Browser, chromium, type Page } from "playwright-core"
import { assert } from "vitest"

const candidates = [process.env.PARLEY_CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser"]

export const chromiumPath = candidates.find((p): p is string => p !== undefined && p !== "" && Fs.existsSync(p))

/** Whether browser tests run here; under CI they always must. */
export const browserAvailable = chromiumPath !== undefined || process.env.CI === "true"

if (chromiumPath === undefined && process.env.CI !== "true") {
  console.warn("Chromium not found (install Debian's `chromium` or set PARLEY_CHROMIUM): browser tests skipped")
}

/** Launches headless Chromium with the flags this closed network needs; close it when done. */
export const launchBrowser = async (): Promise<Browser> => {
  if (chromiumPath === undefined) throw new Error("Chromium is not installed: run `apt-get install chromium`")
  // Playwright gives every launch a fresh, empty profile of its own.
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync"
    ]
  })
}

/**
 * A screenshot of the page that must show something; with `PARLEY_UPDATE_SCREENSHOTS=1` written to
 * `docs/images/<name>.png`.
 */
export const screenshot = async (page: Page, name: string) => {
  const bytes = await page.screenshot({ fullPage: false })
  assert.isAbove(bytes.length, 10_000, `${name} rendered something`)
  if (process.env.PARLEY_UPDATE_SCREENSHOTS === "1") {
    Fs.writeFileSync(new URL(`../../../docs/images/${name}.png`, import.meta.url), bytes)
  }
}

/** Waits until the page's background is `color` (the embedded pages' palette follows the mode after a render). */
export const background = (page: Page, color: string) =>
  page.waitForFunction((expected) => getComputedStyle(document.body).backgroundColor === expected, color, { timeout: 5_000 })

/** The embedded pages' backgrounds (`embed-ui/base.css`). */
export const DARK = "rgb(15, 20, 25)"
export const LIGHT = "rgb(246, 247, 249)"
