/**
 * Where service ids come from. A port so tests can make ids predictable; the
 * live layer uses the platform's cryptographic uuid v4.
 */
import { Context, Effect, Layer } from "effect"

export class Ids extends Context.Service<Ids, {
  readonly uuid: Effect.Effect<string>
}>()("@parley/core/shared/Ids") {
  static readonly layer = Layer.succeed(Ids, Ids.of({ uuid: Effect.sync(() => crypto.randomUUID()) }))

  /** Sequential, readable uuids (`00000000-0000-4000-8000-000000000001`, ...) for tests. */
  static readonly layerSequential = Layer.sync(Ids, () => {
    let n = 0
    return Ids.of({
      uuid: Effect.sync(() => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, "0")}`)
    })
  })
}
