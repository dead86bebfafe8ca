/**
 * Where service ids come from. A port so tests can make ids predictable. The
 * live layer makes UUIDv7: time-ordered, so records created in the same
 * millisecond still list in creation order when their timestamps tie.
 */
import { Clock, Context, Effect, Layer } from "effect"
import { createHash } from "node:crypto"

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"))
const hex = (bytes: Uint8Array, from: number, to: number) => {
  let out = ""
  for (let i = from; i < to; i++) out += HEX[bytes[i]!]
  return out
}

/** Random bytes drawn a few kilobytes at a time: every stored record takes an id, and each draw has a cost. */
const randomPool = () => {
  const pool = new Uint8Array(4096)
  let used = pool.length
  return (n: number): Uint8Array => {
    if (used + n > pool.length) {
      crypto.getRandomValues(pool)
      used = 0
    }
    used += n
    return pool.subarray(used - n, used)
  }
}

/** RFC 9562 version 7: 48-bit Unix milliseconds, a 12-bit sequence within the millisecond, 62 random bits. */
const makeV7 = () => {
  let lastMs = -1
  let seq = 0
  const random = randomPool()
  const bytes = new Uint8Array(16)
  return (nowMs: number): string => {
    let ms = Math.max(nowMs, lastMs)
    if (ms === lastMs) {
      seq++
      // 4,096 ids in one millisecond: borrow the next one rather than repeat an order.
      if (seq > 0xfff) {
        ms++
        seq = 0
      }
    } else {
      seq = 0
    }
    lastMs = ms
    bytes.set(random(8), 8)
    for (let i = 0; i < 6; i++) bytes[i] = Math.floor(ms / 2 ** (8 * (5 - i))) & 0xff
    bytes[6] = 0x70 | ((seq >> 8) & 0x0f)
    bytes[7] = seq & 0xff
    bytes[8] = 0x80 | (bytes[8]! & 0x3f)
    return `${hex(bytes, 0, 4)}-${hex(bytes, 4, 6)}-${hex(bytes, 6, 8)}-${hex(bytes, 8, 10)}-${hex(bytes, 10, 16)}`
  }
}

/** Parley's namespace for name-based uuids. */
const NAMESPACE = Buffer.from("6f1d2c7e9a4b4e0f8a3d5b6c7d8e9f01", "hex")

/**
 * RFC 9562 version 5: the same name always gives the same uuid, so a key
 * derived from what it names survives a repeat of the work that derives it.
 */
export const nameUuid = (name: string): string => {
  const bytes = createHash("sha1").update(NAMESPACE).update(name).digest()
  bytes[6] = 0x50 | (bytes[6]! & 0x0f)
  bytes[8] = 0x80 | (bytes[8]! & 0x3f)
  return `${hex(bytes, 0, 4)}-${hex(bytes, 4, 6)}-${hex(bytes, 6, 8)}-${hex(bytes, 8, 10)}-${hex(bytes, 10, 16)}`
}

export class Ids extends Context.Service<Ids, {
  readonly uuid: Effect.Effect<string>
}>()("@parley/core/shared/Ids") {
  static readonly layer = Layer.sync(Ids, () => {
    const next = makeV7()
    return Ids.of({ uuid: Effect.map(Clock.currentTimeMillis, next) })
  })

  /** Sequential, readable uuids (`00000000-0000-4000-8000-000000000001`, ...) for tests. */
  static readonly layerSequential = Layer.sync(Ids, () => {
    let n = 0
    return Ids.of({
      uuid: Effect.sync(() => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, "0")}`)
    })
  })
}
