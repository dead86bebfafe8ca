/**
 * The broadcast's send window (issue 30 §2): it narrows while sends take longer than their baseline (they queue inside
 * a saturated host, where replies would wait behind them), widens back once they do not, and stays wide for a network
 * that is slow but steady.
 */
import { assert, describe, it } from "@effect/vitest"
import { makeSendWindow } from "../src/broadcasts/SendWindow.ts"

const options = { max: 128, min: 8, tolerance: 2, slackMs: 5 }

/**
 * Feeds `rounds` windows' worth of sends taking `ms` each, the window's sends side by side (a round lasts one send);
 * the window after.
 */
const feed = (window: ReturnType<typeof makeSendWindow>, rounds: number, ms: (i: number) => number) => {
  for (let round = 0; round < rounds; round++) {
    const sends = window.limit()
    for (let i = 0; i < sends; i++) {
      now += ms(i) / sends
      window.observe(ms(i), now)
    }
  }
  return window.limit()
}
let now = 0

describe("SendWindow", () => {
  it("stays at its widest while sends take what they took", () => {
    const window = makeSendWindow(options)
    assert.strictEqual(feed(window, 20, () => 20), 128)
  })

  it("stays wide for a slow network: every send long, none longer than usual", () => {
    const window = makeSendWindow(options)
    assert.strictEqual(feed(window, 20, (i) => 400 + (i % 7) * 10), 128)
  })

  it("narrows while sends queue (take far longer than their baseline), then widens back", () => {
    const window = makeSendWindow(options)
    feed(window, 3, () => 20)
    const saturated = feed(window, 20, () => 400)
    assert.isAtMost(saturated, 16, `narrowed to ${saturated}`)
    assert.isAtLeast(saturated, 8)
    assert.strictEqual(feed(window, 40, () => 20), 128)
  })

  it("a clock that does not move (sends of 0 ms) keeps it wide", () => {
    const window = makeSendWindow(options)
    assert.strictEqual(feed(window, 10, () => 0), 128)
  })
})
