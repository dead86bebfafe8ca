/**
 * The general per-key limit with two hosts on one PostgreSQL database (two Parley hosts in this process, each with
 * its own pool, over real HTTP): requests of one key spread over both are admitted at most `limit` times a window in
 * all and refused at most one leased share early (`leaseSize` per other host), while the store is written once per
 * share, not per request (decisions "Rate limits without a write per request").
 */
import { NodeHttpServer } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Ids, leaseSize, Projects } from "@parley/core"
import { layerFromUrl, layerJobQueue, layerStorage } from "@parley/store-pg"
import { ConfigProvider, Context, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { SqlClient } from "effect/sql"
import * as Http from "node:http"
import { freshDatabase } from "../../store-pg/test/pg.ts"
import * as Host from "../src/Host.ts"

const KEY = "pk_test_ratelimit_hosts_0123456789ab"
const LIMIT = 1_000

const startHost = (url: string) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(
      Host.serve({ publicUrl: "http://127.0.0.1", workers: false }).pipe(
        Layer.provideMerge(NodeHttpServer.layer(Http.createServer, { port: 0, host: "127.0.0.1" })),
        Layer.provideMerge(Layer.mergeAll(layerStorage, layerJobQueue(), Ids.layer)),
        Layer.provideMerge(layerFromUrl(url)),
        Layer.provide(ConfigProvider.layerAdd(ConfigProvider.fromUnknown({ PARLEY_RATE_LIMIT_PER_MINUTE: String(LIMIT) }), {
          asPrimary: true
        }))
      )
    )
    const base = yield* HttpServer.addressFormattedWith(Effect.succeed).pipe(Effect.provideContext(context))
    return { base, context }
  })

describe("the general limit with two hosts on one database (postgres)", () => {
  it.live("holds within one leased share per other host, writing the store once per share", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabase
      const a = yield* startHost(url)
      const b = yield* startHost(url)
      const projects = Context.get(a.context, Projects)
      const project = yield* projects.create("Limited")
      yield* projects.createKey(project.id, "test", KEY)

      // 1,500 requests of one key, alternating between the hosts, 16 at a time.
      const bases = [a.base, b.base]
      let issued = 0
      const statuses: Array<{ readonly status: number; readonly reset: string }> = []
      yield* Effect.promise(() =>
        Promise.all(Array.from({ length: 16 }, async () => {
          while (issued < 1_500) {
            const base = bases[issued++ % 2]!
            const res = await fetch(`${base}/platform/v1/customers`, { headers: { "x-api-key": KEY } })
            await res.arrayBuffer()
            statuses.push({ status: res.status, reset: res.headers.get("x-ratelimit-reset") ?? "none" })
          }
        }))
      )
      assert.strictEqual(statuses.length, 1_500)
      assert.isTrue(statuses.every((s) => s.status === 200 || s.status === 429), JSON.stringify(statuses.slice(0, 5)))
      // Per window (the reset header names it): never past the limit; where anything was refused, at most a share early.
      const share = leaseSize(LIMIT)
      const windows = new Map<string, { admitted: number; refused: number }>()
      for (const s of statuses) {
        const w = windows.get(s.reset) ?? { admitted: 0, refused: 0 }
        if (s.status === 200) w.admitted++
        else w.refused++
        windows.set(s.reset, w)
      }
      let refusedSomewhere = false
      for (const [reset, w] of windows) {
        assert.isAtMost(w.admitted, LIMIT, `window ending ${reset}`)
        if (w.refused > 0) {
          refusedSomewhere = true
          assert.isAtLeast(w.admitted, LIMIT - share, `window ending ${reset}`)
        }
      }
      assert.isTrue(refusedSomewhere || windows.size > 1)

      // The store counted the shares granted: never past the limit, at least what was admitted, and at most the
      // hosts' last shares more.
      const sql = Context.get(a.context, SqlClient.SqlClient)
      const rows = yield* sql<{ readonly count: number; readonly reset: number }>`
        SELECT count, extract(epoch FROM window_start)::integer + 60 AS reset FROM rate_limits WHERE key LIKE 'api:%'`
      assert.strictEqual(rows.length, windows.size)
      for (const row of rows) {
        const admitted = windows.get(String(row.reset))?.admitted ?? 0
        assert.isAtMost(row.count, LIMIT)
        assert.isAtLeast(row.count, admitted)
        assert.isAtMost(row.count - admitted, 2 * share)
      }
    }).pipe(Effect.scoped), 120_000)
})
