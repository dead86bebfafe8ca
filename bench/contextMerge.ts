/**
 * What effect's `Context.merge` costs per request as `HttpApiBuilder` does it (every handler runs under
 * `Effect.provideContext(<its group's build context>)`): a request context of `serve` services with the request's
 * own few added on top, merged with a group's context, for a host's sizes (155 services on the bench host) and
 * narrow ones. docs/decisions.md "The authenticated GET by inclusive time".
 *
 *   node --conditions=@parley/source bench/contextMerge.ts
 */
import { Context } from "effect"

const services = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => Context.Service<object>(`${prefix}/${i}`))
const contextOf = (keys: ReadonlyArray<Context.Service<object, object>>) =>
  Context.makeUnsafe<never>(new Map(keys.map((k) => [k.key, {}])), { maxDepth: 32 })

const host = services("service", 160)
const perRequest = services("request", 6)
const handlers = services("group", 12)
const requestOn = (serve: Context.Context<never>) =>
  perRequest.reduce((context, key) => Context.add(context, key, {}), serve as Context.Context<unknown>)

const cases = [
  { label: "request context 160 + 6, group 172", serve: contextOf(host), group: contextOf([...host, ...handlers]) },
  { label: "request context 15 + 6, group 172", serve: contextOf(host.slice(0, 15)), group: contextOf([...host, ...handlers]) },
  { label: "request context 160 + 6, group 20", serve: contextOf(host), group: contextOf([...host.slice(0, 8), ...handlers]) },
  { label: "request context 15 + 6, group 20", serve: contextOf(host.slice(0, 15)), group: contextOf([...host.slice(0, 8), ...handlers]) },
  { label: "request context 15 + 6, no merge", serve: contextOf(host.slice(0, 15)), group: Context.empty() }
]

const N = 100_000
let sink = 0
for (let round = 0; round < 3; round++) {
  for (const { label, serve, group } of cases) {
    for (let i = 0; i < N / 5; i++) sink += Context.merge(requestOn(serve), group).mapUnsafe.size
    const start = process.hrtime.bigint()
    for (let i = 0; i < N; i++) sink += Context.merge(requestOn(serve), group).mapUnsafe.size
    console.log(`  ${label.padEnd(40)} ${(Number(process.hrtime.bigint() - start) / N / 1000).toFixed(1)} µs per merge`)
  }
}
if (sink === 0) console.log("(nothing merged)")
