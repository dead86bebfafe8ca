/**
 * A read-through cache of what rarely changes, kept true across processes:
 * every signal on `changes` (a store's change notifications, from any
 * process sharing it) drops everything, this process's writers call `forget`
 * once a change is done, and entries expire as a backstop.
 */
import { Clock, Effect, type Scope, Stream } from "effect"

export interface SignalledCache<K, V> {
  readonly get: (key: K) => Effect.Effect<V>
  /** Drops everything remembered: call it once a change is done. */
  readonly forget: Effect.Effect<void>
}

export const make = <K, V>(options: {
  readonly lookup: (key: K) => Effect.Effect<V>
  /** The entry a key is remembered under. */
  readonly keyOf: (key: K) => string
  readonly changes: Stream.Stream<void>
  readonly ttlMs: number
  readonly max: number
  /** Which answers to remember; default all. */
  readonly remember?: ((value: V) => boolean) | undefined
}): Effect.Effect<SignalledCache<K, V>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const entries = new Map<string, { readonly value: V; readonly until: number }>()
    let generation = 0
    const forget = Effect.sync(() => {
      entries.clear()
      generation++
    })
    yield* Effect.forkScoped(Stream.runForEach(options.changes, () => forget))

    const read = (key: K, entry: string, now: number) =>
      Effect.gen(function*() {
        const seen = generation
        const value = yield* options.lookup(key)
        // A change signalled during the read may not be in it: do not remember it then.
        if (seen === generation && (options.remember?.(value) ?? true)) {
          if (entries.size >= options.max) entries.delete(entries.keys().next().value!)
          entries.set(entry, { value, until: now + options.ttlMs })
        }
        return value
      })

    // A hit (every authenticated request's key) is one read of the clock, no generator.
    const get = (key: K) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const entry = options.keyOf(key)
        const cached = entries.get(entry)
        return cached !== undefined && cached.until > now ? Effect.succeed(cached.value) : read(key, entry, now)
      })

    return { get, forget }
  })
