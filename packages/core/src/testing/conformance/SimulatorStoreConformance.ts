/**
 * The behaviour every `SimulatorStore` adapter owes, written once and run
 * against each adapter. `store` must build an empty store each time it is
 * built: every test builds its own.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { type SimChanges, type SimDelivery, SimulatorStore } from "../../ports/SimulatorStore.ts"

const none: SimChanges = { put: [], remove: [], delivered: [], forgotten: [] }
const changes = (partial: Partial<SimChanges>): SimChanges => ({ ...none, ...partial })

const delivery = (id: string, phoneNumberId = "pn-1", text = id): SimDelivery => ({
  id,
  phoneNumberId,
  record: { id, type: "text", envelope: { text: { body: text } } },
  raw: new TextEncoder().encode(JSON.stringify({ text: { body: text } }))
})

/** Every byte value, so no encoding on the way can go unnoticed. */
const allBytes = Uint8Array.from({ length: 256 }, (_, i) => i)

export const simulatorStoreConformance = <E>(name: string, store: Layer.Layer<SimulatorStore, E>): void =>
  describe(name, () => {
    const run = <A, E2>(effect: Effect.Effect<A, E2, SimulatorStore>) =>
      Effect.provide(effect, Layer.fresh(store)) as Effect.Effect<A, E2 | E>

    it.live("an empty store loads nothing", () =>
      run(Effect.gen(function*() {
        const loaded = yield* (yield* SimulatorStore).load
        assert.deepStrictEqual(loaded, { objects: [], deliveries: [] })
      })))

    it.live("keeps objects by kind and key, in the order they were first written, with their bytes", () =>
      run(Effect.gen(function*() {
        const sim = yield* SimulatorStore
        yield* sim.save(changes({
          put: [
            { kind: "number", key: "100", value: { verifiedName: "Acme", tiers: ["TIER_1K"], nested: { a: null } } },
            { kind: "window", key: "100|US.1", value: 1_700_000_000_000 },
            { kind: "media", key: "m1", value: { mimeType: "image/png" }, bytes: allBytes },
            // The same key in another kind is another object; keys may hold any text.
            { kind: "number", key: "pn|ünïcode\u0001", value: "text with \u0000 inside" }
          ]
        }))
        yield* sim.save(changes({
          put: [{ kind: "window", key: "100|US.1", value: 1_700_000_001_000 }],
          remove: [{ kind: "number", key: "pn|ünïcode\u0001" }, { kind: "number", key: "absent" }]
        }))
        yield* sim.save(changes({ put: [{ kind: "account", key: "100", value: { subscription: {} } }] }))
        const { objects } = yield* sim.load
        assert.deepStrictEqual(objects.map((o) => [o.kind, o.key, o.value]), [
          ["number", "100", { verifiedName: "Acme", tiers: ["TIER_1K"], nested: { a: null } }],
          // Replaced, in its first place.
          ["window", "100|US.1", 1_700_000_001_000],
          ["media", "m1", { mimeType: "image/png" }],
          ["account", "100", { subscription: {} }]
        ])
        assert.deepStrictEqual(objects[2]!.bytes, allBytes)
        assert.isUndefined(objects[0]!.bytes)
      })))

    it.live("answers values that are copies, not the objects it was given", () =>
      run(Effect.gen(function*() {
        const sim = yield* SimulatorStore
        const value = { status: "PENDING" }
        yield* sim.save(changes({ put: [{ kind: "template", key: "t1", value }] }))
        value.status = "APPROVED"
        const { objects } = yield* sim.load
        assert.deepStrictEqual(objects[0]!.value, { status: "PENDING" })
      })))

    it.live("keeps the outboxes in the order deliveries were appended, raw bytes exact", () =>
      run(Effect.gen(function*() {
        const sim = yield* SimulatorStore
        yield* sim.save(changes({ delivered: [delivery("w1"), delivery("w2", "pn-2")] }))
        yield* sim.save(changes({
          delivered: [delivery("w3"), { ...delivery("w4"), raw: allBytes }, delivery("w5", "pn-1", "nul \u0000 inside")]
        }))
        const { deliveries } = yield* sim.load
        assert.deepStrictEqual(deliveries.map((d) => [d.id, d.phoneNumberId]), [
          ["w1", "pn-1"],
          ["w2", "pn-2"],
          ["w3", "pn-1"],
          ["w4", "pn-1"],
          ["w5", "pn-1"]
        ])
        assert.deepStrictEqual(deliveries[0], delivery("w1"))
        assert.deepStrictEqual(deliveries[3]!.raw, allBytes)
        assert.deepStrictEqual(deliveries[4], delivery("w5", "pn-1", "nul \u0000 inside"))
      })))

    it.live("forgets the deliveries named, and a delivery appended twice is kept once", () =>
      run(Effect.gen(function*() {
        const sim = yield* SimulatorStore
        yield* sim.save(changes({ delivered: [delivery("w1"), delivery("w2"), delivery("w3")] }))
        yield* sim.save(changes({ delivered: [delivery("w4"), delivery("w2")], forgotten: ["w1", "unknown"] }))
        // Appended and forgotten in one save: never there.
        yield* sim.save(changes({ delivered: [delivery("w5"), delivery("w6")], forgotten: ["w5", "w3"] }))
        const { deliveries } = yield* sim.load
        assert.deepStrictEqual(deliveries.map((d) => d.id), ["w2", "w4", "w6"])
      })))

    it.live("applies a save of thousands of objects and deliveries at once", () =>
      run(Effect.gen(function*() {
        const sim = yield* SimulatorStore
        const count = 2_000
        yield* sim.save(changes({
          put: Array.from({ length: count }, (_, i) => ({ kind: "window", key: `pn|US.${i}`, value: i })),
          delivered: Array.from({ length: count }, (_, i) => delivery(`w${i}`))
        }))
        yield* sim.save(changes({ forgotten: Array.from({ length: count / 2 }, (_, i) => `w${i}`) }))
        const { deliveries, objects } = yield* sim.load
        assert.strictEqual(objects.length, count)
        assert.strictEqual(objects[count - 1]!.value, count - 1)
        assert.strictEqual(deliveries.length, count / 2)
        assert.strictEqual(deliveries[0]!.id, `w${count / 2}`)
      })))

    it.live("an empty save changes nothing", () =>
      run(Effect.gen(function*() {
        const sim = yield* SimulatorStore
        yield* sim.save(changes({ put: [{ kind: "token", key: "t", value: { expired: false } }] }))
        yield* sim.save(none)
        const loaded = yield* sim.load
        assert.strictEqual(loaded.objects.length, 1)
        assert.strictEqual(loaded.deliveries.length, 0)
      })))
  })
