import { Simulator, UpstreamSettings } from "@parley/core"
import { Context, Effect, Option, References } from "effect"
import { SqlClient } from "effect/sql"
import { startBenchHost } from "./host.ts"
const KEY = "pk_bench_broadcast_0123456789abcdef"
const N = Number(process.env.N ?? 5000)
const prog = Effect.gen(function*() {
  const { context, url, postgresPid } = yield* startBenchHost(KEY)
  const fs = yield* Effect.promise(() => import("node:fs"))
  const pgCpu = () => { let t = 0; for (const d of fs.readdirSync("/proc")) { if (!/^\d+$/.test(d)) continue; try { const f = fs.readFileSync(`/proc/${d}/stat`, "utf8").split(") ")[1]!.split(" "); const pid = Number(d); if (pid === postgresPid || Number(f[1]) === postgresPid) t += Number(f[11]) + Number(f[12]) } catch {} } return t * 10 }
  const sql = Context.get(context, SqlClient.SqlClient)
  const simulator = Option.getOrThrow(Context.get(context, UpstreamSettings).simulator) as Simulator.NetworkSimulator["Service"]
  yield* simulator.updateNumber("100000000000001", { throughputPerSecond: 1000, messagingLimitTier: "TIER_UNLIMITED" })
  const request = (method: string, path: string, body?: unknown) => Effect.promise(async () => {
    const res = await fetch(`${url}${path}`, { method, headers: { "x-api-key": KEY, ...(body === undefined ? {} : { "content-type": "application/json" }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
    const text = await res.text(); if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`); return JSON.parse(text)
  })
  yield* request("POST", "/platform/v1/msg/phone_numbers", { msg_config: { phone_number_id: "100000000000001", business_account_id: "200000000000001", access_token: "parley-simulator-token" } })
  const created = yield* request("POST", `/proxy/200000000000001/message_templates`, { name: "bench_sale", category: "MARKETING", language: "en_US", components: [{ type: "BODY", text: "Hi {{1}}, the sale is on!", example: { body_text: [["Ada"]] } }] })
  yield* simulator.setTemplateStatus(created.id, "APPROVED")
  const templates = yield* request("GET", "/platform/v1/msg/templates?name=bench_sale&status=approved")
  const b = yield* request("POST", "/platform/v1/msg/broadcasts", { msg_broadcast: { name: "Bench", phone_number_id: "100000000000001", msg_template_id: templates.data[0].id } })
  const id = b.data.id
  for (let call = 0; call < N / 1000; call++) yield* request("POST", `/platform/v1/msg/broadcasts/${id}/recipients`, { recipients: Array.from({ length: 1000 }, (_, i) => ({ phone_number: `1${String(5_550_000_000 + call * 1000 + i)}`, template_parameters: [`r${i}`] })) })
  const snap = () => sql<any>`select relname, n_tup_ins + n_tup_upd + n_tup_del as w, n_tup_ins i, n_tup_upd u, n_tup_del d, seq_scan + coalesce(idx_scan,0) as r from pg_stat_all_tables where schemaname not in ('pg_catalog','information_schema','pg_toast')`
  const db = () => sql<any>`select xact_commit, tup_returned, tup_fetched from pg_stat_database where datname = current_database()`
  yield* Effect.ignore(sql`create extension if not exists pg_stat_statements`)
  yield* Effect.ignore(sql`select pg_stat_statements_reset()`)
  yield* sql`select pg_stat_clear_snapshot()`
  const s0 = yield* snap(); const d0 = yield* db()
  const inspector = yield* Effect.promise(() => import("node:inspector"))
  const session = new inspector.Session(); session.connect()
  const post = (m: string, p?: object) => Effect.promise(() => new Promise<any>((res, rej) => session.post(m, p as any, (e: any, r: any) => e ? rej(e) : res(r))))
  if (process.env.ALLOC) yield* post("HeapProfiler.startSampling", { samplingInterval: 32768, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
  const cpu0 = process.cpuUsage(); const pg0 = pgCpu(); const t0 = Date.now()
  yield* request("POST", `/platform/v1/msg/broadcasts/${id}/send`)
  for (;;) { yield* Effect.sleep("1 second"); const f = (yield* request("GET", `/platform/v1/msg/broadcasts/${id}`)).data; const mu = process.memoryUsage(); console.log(`sent ${f.sent_count} rss ${(mu.rss/1048576).toFixed(0)} heapUsed ${(mu.heapUsed/1048576).toFixed(0)} heapTotal ${(mu.heapTotal/1048576).toFixed(0)} external ${(mu.external/1048576).toFixed(0)} ab ${(mu.arrayBuffers/1048576).toFixed(0)}`); if (f.status !== "sending") { console.log(f.status, f.sent_count, (Date.parse(f.completed_at) - Date.parse(f.started_at)) / 1000, "s"); break } }
  yield* Effect.sleep("3 seconds")
  if (process.env.ALLOC) { const prof = yield* post("HeapProfiler.stopSampling"); (yield* Effect.promise(() => import("node:fs"))).writeFileSync("/tmp/prof/alloc.json", JSON.stringify(prof.profile)) }
  if (process.env.SNAP) { (globalThis as any).gc?.(); const v8 = yield* Effect.promise(() => import("node:v8")); console.log("snapshot", v8.writeHeapSnapshot("/tmp/prof/end.heapsnapshot")) }
  const cpu = process.cpuUsage(cpu0); const pg1 = pgCpu(); const el = Date.now() - t0
  yield* sql`select pg_stat_clear_snapshot()`
  const s1 = yield* snap(); const d1 = yield* db()
  console.log(`pg cpu per send ${((pg1 - pg0) / N).toFixed(2)} ms`); console.log(`node cpu per send ${((cpu.user + cpu.system) / 1000 / N).toFixed(2)} ms, elapsed ${el} ms; commits/send ${((Number(d1[0].xact_commit) - Number(d0[0].xact_commit)) / N).toFixed(2)}`)
  const before = new Map(s0.map((r: any) => [r.relname, r]))
  const rows = s1.map((r: any) => { const o: any = before.get(r.relname) ?? { i: 0, u: 0, d: 0, r: 0 }; return { t: r.relname, ins: (Number(r.i) - Number(o.i)) / N, upd: (Number(r.u) - Number(o.u)) / N, del: (Number(r.d) - Number(o.d)) / N, scans: (Number(r.r) - Number(o.r)) / N } }).filter((r: any) => r.ins + r.upd + r.del + r.scans > 0.01).sort((a: any, b: any) => (b.ins + b.upd + b.del + b.scans) - (a.ins + a.upd + a.del + a.scans))
  const ss = yield* sql<any>`select calls, total_exec_time, rows, left(regexp_replace(query, '[[:space:]]+', ' ', 'g'), 160) q from pg_stat_statements order by total_exec_time desc limit 45`.pipe(Effect.orElseSucceed(() => []))
  for (const r of ss) console.log((Number(r.calls) / N).toFixed(2).padStart(6), "/send", (Number(r.total_exec_time) / N * 1000).toFixed(0).padStart(5), "us/send", r.q)
  const tot = yield* sql<any>`select sum(calls) c, sum(total_exec_time) t from pg_stat_statements`.pipe(Effect.orElseSucceed(() => [{ c: 0, t: 0 }]))
  console.log("statements/send", Number(tot[0].c) / N, "exec ms/send", Number(tot[0].t) / N)
  for (const r of yield* sql<any>`select name, count(*)::int n from pgboss.job group by name order by 2 desc`) console.log("job", r.name, (r.n / N).toFixed(2))
  yield* sql.withTransaction(Effect.gen(function*() {
  yield* sql`set local plan_cache_mode = force_generic_plan`
  yield* sql.unsafe(`prepare c1(text, text[]) as SELECT * FROM msg_contacts WHERE project_id = $1 AND wa_id = ANY($2) AND wa_id IS NOT NULL`)
  yield* sql.unsafe(`prepare c2(text, text[]) as SELECT * FROM msg_conversations WHERE project_id = $1 AND id = ANY($2)`)
  const pid = (yield* sql<any>`select project_id from msg_contacts limit 1`)[0].project_id
  const was = (yield* sql<any>`select wa_id from msg_contacts limit 7`).map((r: any) => r.wa_id)
  const cids = (yield* sql<any>`select id from msg_conversations limit 7`).map((r: any) => r.id)
  for (const r of yield* sql.unsafe<any>(`explain analyze execute c1('${pid}', '{${was.join(",")}}')`)) console.log(r["QUERY PLAN"])
  for (const r of yield* sql.unsafe<any>(`explain analyze execute c2('${pid}', '{${cids.join(",")}}')`)) console.log(r["QUERY PLAN"])
  yield* sql.unsafe(`prepare c3(text, text[]) as SELECT c.* FROM unnest($2::text[]) AS k(wa_id) JOIN msg_contacts c ON c.project_id = $1 AND c.wa_id = k.wa_id AND c.wa_id IS NOT NULL`)
  yield* sql.unsafe(`prepare c4(text, text[]) as SELECT c.* FROM unnest($2::text[]) AS k(wa_id) CROSS JOIN LATERAL (SELECT * FROM msg_contacts WHERE project_id = $1 AND wa_id = k.wa_id AND wa_id IS NOT NULL) c`)
  for (const r of yield* sql.unsafe<any>(`explain analyze execute c3('${pid}', '{${was.join(",")}}')`)) console.log(r["QUERY PLAN"])
  for (const r of yield* sql.unsafe<any>(`explain analyze execute c4('${pid}', '{${was.join(",")}}')`)) console.log(r["QUERY PLAN"])
  yield* sql.unsafe("deallocate all")
  }))
  for (const r of yield* sql<any>`select relname, last_autoanalyze, n_live_tup from pg_stat_user_tables where relname in ('msg_contacts','msg_conversations','msg_messages','msg_broadcast_recipients')`) console.log("analyze", r.relname, r.last_autoanalyze, r.n_live_tup)
  for (const r of rows) console.log(r.t.padEnd(32), "ins", r.ins.toFixed(2), "upd", r.upd.toFixed(2), "del", r.del.toFixed(2), "scans", r.scans.toFixed(2))
}).pipe(Effect.scoped, Effect.provideService(References.MinimumLogLevel, "Warn"))
Effect.runPromise(prog).catch((e) => { console.error(e); process.exitCode = 1 })
