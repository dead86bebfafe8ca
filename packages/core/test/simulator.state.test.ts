import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { type InboundRecord, SimState } from "../src/simulators/network/Model.ts"

const received = (id: string, userId: string, receivedAt: number, phoneNumberId = "pn1"): InboundRecord => ({
  id,
  phoneNumberId,
  contact: { waId: userId, userId },
  receivedAt,
  read: false
})

describe("simulator state: inbound messages read", () => {
  it.effect("a mark-read reads the pair's messages up to it, and no other pair's", () =>
    Effect.sync(() => {
      const state = new SimState("secret")
      state.durable = true
      const messages = [
        received("a1", "a", 1),
        received("b1", "b", 2),
        received("a2", "a", 3),
        received("a1-other-number", "a", 2, "pn2"),
        received("a3", "a", 5)
      ]
      for (const m of messages) state.keepInbound(m)
      state.markInboundRead(state.inbound.get("a2")!)
      const read = [...state.inbound.values()].filter((m) => m.read).map((m) => m.id)
      assert.deepStrictEqual(read, ["a1", "a2"])
      assert.deepStrictEqual([...state.changed.get("inbound")!], ["a1", "a2"])
      // Read messages are not visited again; a later one reads the rest.
      state.markInboundRead(state.inbound.get("a3")!)
      assert.deepStrictEqual([...state.inbound.values()].filter((m) => m.read).map((m) => m.id), ["a1", "a2", "a3"])
      assert.deepStrictEqual([...state.changed.get("inbound")!], ["a1", "a2", "a3"])
    }))

  it.effect("a message forgotten or restored read is not read again", () =>
    Effect.sync(() => {
      const state = new SimState("secret")
      state.keepInbound(received("a1", "a", 1))
      state.keepInbound({ ...received("a2", "a", 2), read: true })
      state.keepInbound(received("a3", "a", 3))
      state.dropInbound("a1")
      state.durable = true
      state.markInboundRead(state.inbound.get("a3")!)
      assert.isFalse(state.inbound.has("a1"))
      assert.deepStrictEqual([...state.changed.get("inbound")!], ["a3"])
    }))
})
