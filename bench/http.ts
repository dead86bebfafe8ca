/**
 * Authenticated `GET /platform/v1/workflows/<id>` through Parley (Postgres
 * storage, real HTTP) against a bare `node:http` server answering the same
 * JSON bytes, measured in the same run with the same load generator.
 */
import { Effect } from "effect"
import * as Http from "node:http"
import { startBenchHost } from "./host.ts"
import { load, type LoadResult } from "./load.ts"

export interface HttpBenchResult {
  readonly parley: LoadResult
  readonly bare: LoadResult
  readonly ratio: number
}

const KEY = "pk_bench_0123456789abcdef0123456789"

export const benchHttp = (options: { readonly durationMs: number; readonly connections: number }) =>
  Effect.gen(function*() {
    const { url, context } = yield* startBenchHost(KEY)
    const headers = { "x-api-key": KEY, "content-type": "application/json" }
    const created = yield* Effect.promise(() =>
      fetch(`${url}/platform/v1/workflows`, { method: "POST", headers, body: JSON.stringify({ workflow: { name: "Bench" } }) })
        .then((r) => r.json() as Promise<{ data: { id: string } }>)
    )
    const target = `${url}/platform/v1/workflows/${created.data.id}`
    const body = yield* Effect.promise(() => fetch(target, { headers }).then((r) => r.text()))

    const bare = Http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
      res.end(body)
    })
    yield* Effect.acquireRelease(
      Effect.promise(() => new Promise<void>((resolve) => bare.listen(0, "127.0.0.1", resolve))),
      () => Effect.promise(() => new Promise<void>((resolve) => bare.close(() => resolve())))
    )
    const address = bare.address() as { port: number }
    const bareUrl = `http://127.0.0.1:${address.port}/platform/v1/workflows/${created.data.id}`

    const run = (u: string) => Effect.promise(() => load({ url: u, headers: { "x-api-key": KEY }, ...options }))
    // Warm both up (JIT, connection pools) before measuring.
    yield* run(target).pipe(Effect.andThen(run(bareUrl)))
    const parley = yield* run(target)
    const bareResult = yield* run(bareUrl)
    return { parley, bare: bareResult, ratio: parley.rps / bareResult.rps } satisfies HttpBenchResult
  }).pipe(Effect.scoped)
