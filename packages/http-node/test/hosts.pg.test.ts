/**
 * Two host processes on one PostgreSQL database, as users scale out: two
 * real `main.ts` processes on different ports with the same `DATABASE_URL`
 * and host key, requests spread over both. Whatever one host does, the other
 * sees as if there were one host: each webhook delivery happens once and both
 * list it once, an execution started on one resumes on the other, the public
 * invoke rate limit is one limit, a key revoked by a third process (the CLI)
 * is refused by both at once, a function deployed on one serves from the
 * other, and a trigger created on one fires for events recorded on the other
 * within the trigger cache's bound. Last, a runaway function on one host
 * does not fail another function's invokes there (decisions: "Hardening: two
 * hosts, runaway functions").
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { emptyDatabase } from "../../store-pg/test/pg.ts"
import { startReceiver } from "./receiver.ts"
import { freePort, sleep } from "./process.support.ts"

const ROOT = Path.resolve(import.meta.dirname, "../../..")
const MAIN = Path.join(ROOT, "packages/http-node/src/main.ts")
const CLI = Path.join(ROOT, "packages/http-node/src/cli.ts")
const KEY = "pk_test_hosts_0123456789abcdef01234"
const PNID = "100000000000001"
/** The trigger cache's bound (`TriggerIndex`: 5 s), with room for a loaded machine. */
const TRIGGER_BOUND_MS = 5_000


interface Answer {
  readonly status: number
  readonly body: any
  readonly text: string
  readonly headers: Headers
}

const call = async (base: string, method: string, path: string, body?: unknown, key: string | null = KEY): Promise<Answer> => {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(key === null ? {} : { "x-api-key": key }), ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(20_000)
  })
  const text = await res.text()
  let parsed: unknown
  try {
    parsed = text.length > 0 ? JSON.parse(text) : undefined
  } catch {
    parsed = undefined
  }
  return { status: res.status, body: parsed, text, headers: res.headers }
}

const SECRET_KEY = "hosts-test-secret-key-0123456789"

const eventually = async <A>(what: string, check: () => Promise<A | undefined>, withinMs = 30_000): Promise<A> => {
  const deadline = Date.now() + withinMs
  while (true) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`still waiting for: ${what}`)
    await sleep(25)
  }
}

const parley = (databaseUrl: string, ...args: Array<string>) =>
  new Promise<string>((resolve, reject) =>
    ChildProcess.execFile(
      process.execPath,
      ["--conditions=@parley/source", CLI, ...args],
      // The hosts' secret key: what the CLI seals (project secrets), they open.
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: databaseUrl, PARLEY_LOG_LEVEL: "Warn", PARLEY_SECRET_KEY: SECRET_KEY } },
      (error, stdout, stderr) => (error === null ? resolve(stdout) : reject(new Error(`parley ${args.join(" ")}: ${stderr}`)))
    )
  )

interface Hosts {
  readonly a: string
  readonly b: string
  readonly stop: () => Promise<void>
}

/** Two host processes on `databaseUrl`, started at once (both run the migrations' lock and the bootstrap). */
const startHosts = async (databaseUrl: string): Promise<Hosts> => {
  const logFile = Path.join(Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-hosts-")), "hosts.log")
  const out = Fs.openSync(logFile, "a")
  const children: Array<ChildProcess.ChildProcess> = []
  const bases: Array<string> = []
  for (const name of ["a", "b"]) {
    const port = await freePort()
    bases.push(`http://127.0.0.1:${port}`)
    Fs.writeSync(out, `=== host ${name} on ${port} ===\n`)
    children.push(ChildProcess.spawn(process.execPath, ["--conditions=@parley/source", MAIN], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        HOST: "127.0.0.1",
        PORT: String(port),
        PARLEY_API_KEY: KEY,
        PARLEY_SECRET_KEY: SECRET_KEY,
        PARLEY_UPSTREAM: "simulator",
        PARLEY_UPSTREAM_APP_SECRET: "hosts-test-app-secret",
        PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS: "true",
        // The keyed invokes below send thousands a minute; the shared limit checked here is the public invoke one.
        PARLEY_RATE_LIMIT_PER_MINUTE: "1000000",
        PARLEY_LOG_LEVEL: "Warn"
      },
      stdio: ["ignore", out, out]
    }))
  }
  const stop = async () => {
    await Promise.all(children.map((child) =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve()
        const cut = setTimeout(() => child.kill("SIGKILL"), 10_000)
        child.once("exit", () => {
          clearTimeout(cut)
          resolve()
        })
        child.kill("SIGTERM")
      })
    ))
    Fs.closeSync(out)
  }
  try {
    for (const [i, base] of bases.entries()) {
      await eventually(`host ${i === 0 ? "a" : "b"} ready (log: ${logFile})`, async () => {
        if (children[i]!.exitCode !== null) throw new Error(`host ${i === 0 ? "a" : "b"} exited; see ${logFile}`)
        return (await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(1_000) }).then((r) => r.ok, () => false)) || undefined
      }, 60_000)
    }
  } catch (error) {
    await stop()
    throw error
  }
  return { a: bases[0]!, b: bases[1]!, stop }
}

const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({ id, position: { x: 0, y: 0 }, data: { node_type, config } })
const edge = (source: string, target: string) => ({ source, target })

describe("two host processes on one database (postgres)", () => {
  it.live("deliveries, executions, rate limits, keys, deploys and triggers behave as with one host; a runaway fails no other invoke", () =>
    Effect.gen(function*() {
      const databaseUrl = yield* emptyDatabase
      const receiver = yield* startReceiver
      const hosts = yield* Effect.acquireRelease(Effect.promise(() => startHosts(databaseUrl)), (h) => Effect.promise(h.stop))
      yield* Effect.promise(async () => {
        const { a, b } = hosts
        const both = [a, b]

        // ---- webhook deliveries: events recorded on both hosts, each delivered once, listed once by both ----
        const webhook = await call(a, "POST", "/platform/v1/msg/webhooks", {
          msg_webhook: { url: `${receiver.url}/events`, events: ["project.event"], secret_key: "hosts-webhook-secret" }
        })
        assert.strictEqual(webhook.status, 201, webhook.text)
        const emitted = await Promise.all(Array.from({ length: 30 }, async (_, i) => {
          const res = await call(both[i % 2]!, "POST", "/platform/v1/events", { name: "order.paid", properties: { i } })
          assert.strictEqual(res.status, 201, res.text)
          return res.body.data.id as string
        }))
        await receiver.received(emitted.length, 30_000)
        // Room for a duplicate to show up.
        await sleep(1_500)
        const byEvent = new Map<string, number>()
        for (const r of receiver.requests) {
          const id = JSON.parse(r.raw.toString("utf8")).data.id as string
          byEvent.set(id, (byEvent.get(id) ?? 0) + 1)
        }
        assert.deepStrictEqual([...byEvent.keys()].sort(), [...emitted].sort())
        assert.deepStrictEqual([...new Set(byEvent.values())], [1], "each event delivered exactly once")
        for (const base of both) {
          const listed = await eventually("every delivery recorded as delivered", async () => {
            const res = await call(base, "GET", `/platform/v1/webhook_deliveries?webhook_id=${webhook.body.data.id}&per_page=100`)
            assert.strictEqual(res.status, 200, res.text)
            const rows = res.body.data as Array<{ status: string }>
            return rows.length === emitted.length && rows.every((d) => d.status === "delivered") ? rows : undefined
          })
          assert.strictEqual(listed.length, emitted.length, "each delivery listed once")
        }

        // ---- executions: started on one host, resumed on the other ----
        const workflow = await call(a, "POST", "/platform/v1/workflows", {
          workflow: {
            name: "hosts reply",
            status: "active",
            definition: {
              nodes: [
                node("start", "start"),
                node("ask", "wait_for_response", { save_response_to: "answer" }),
                node("done", "set_variable", { variable_name: "seen", variable_value: "{{vars.answer}}" })
              ],
              edges: [edge("start", "ask"), edge("ask", "done")]
            }
          }
        })
        assert.strictEqual(workflow.status, 201, workflow.text)
        const phones = Array.from({ length: 6 }, (_, i) => `1555${String(8000000 + i)}`)
        for (const phone of phones) {
          const inbound = await call(a, "POST", "/sandbox/inbound", { phone_number_id: PNID, from: phone, message: { type: "text", text: { body: "hi" } } })
          assert.strictEqual(inbound.status, 202, inbound.text)
        }
        for (const phone of phones) {
          await eventually(`the conversation of ${phone}`, async () =>
            (await call(b, "GET", `/platform/v1/msg/conversations?phone_number=${phone}`)).body?.data?.length === 1 || undefined)
        }
        const runs = await Promise.all(phones.map(async (phone, i) => {
          const started = await call(both[i % 2]!, "POST", `/platform/v1/workflows/${workflow.body.data.id}/executions`, {
            workflow_execution: { phone_number: `+${phone}` }
          })
          assert.strictEqual(started.status, 202, started.text)
          return started.body.data.id as string
        }))
        await Promise.all(runs.map(async (id, i) => {
          const other = both[(i + 1) % 2]!
          await eventually(`execution ${id} waiting`, async () =>
            (await call(other, "GET", `/platform/v1/workflow_executions/${id}`)).body.data.status === "waiting" || undefined)
          const resumed = await call(other, "POST", `/platform/v1/workflow_executions/${id}/resume`, { message: { kind: "text", data: `yes ${i}` } })
          assert.strictEqual(resumed.status, 200, resumed.text)
          const ended = await eventually(`execution ${id} ended`, async () => {
            const res = await call(both[i % 2]!, "GET", `/platform/v1/workflow_executions/${id}`)
            return res.body.data.status === "ended" ? res.body.data : undefined
          })
          assert.strictEqual(ended.execution_context.vars.seen, `yes ${i}`)
        }))

        // ---- a function deployed on A serves from B; a redeploy on A too; one public rate limit for both ----
        const created = await call(a, "POST", "/platform/v1/functions", {
          function: { name: "Hosts", code: `async function handler() { return new Response("v1") }`, public_endpoint: true }
        })
        assert.strictEqual(created.status, 201, created.text)
        const fnId = created.body.data.id as string
        const deployOn = async (base: string) => {
          const res = await call(base, "POST", `/platform/v1/functions/${fnId}/deploy`)
          assert.strictEqual(res.status, 202, res.text)
          await eventually("deployed", async () => {
            const fn = (await call(base, "GET", `/platform/v1/functions/${fnId}`)).body.data
            if (fn.status === "failed") throw new Error(fn.last_deploy_error)
            return fn.status === "deployed" || undefined
          })
        }
        await deployOn(a)
        const first = await call(b, "POST", `/platform/v1/functions/${fnId}/invoke`)
        assert.deepStrictEqual([first.status, first.text], [200, "v1"])
        const patched = await call(a, "PATCH", `/platform/v1/functions/${fnId}`, {
          function: { code: `async function handler() { return new Response("v2") }` }
        })
        assert.strictEqual(patched.status, 200, patched.text)
        await deployOn(a)
        // B remembered v1's invocation target: the deploy's signal drops it (milliseconds, never the cache's 60 s).
        const invoked = [first]
        const second = await eventually("B serves the version deployed on A", async () => {
          const answer = await call(b, "POST", `/platform/v1/functions/${fnId}/invoke`)
          invoked.push(answer)
          return answer.text === "v2" ? answer : undefined
        }, 5_000)
        assert.strictEqual(second.status, 200)

        // Public invokes spread over both hosts until one is refused; every answer names its minute (reset), so a
        // run that crosses a minute boundary is still counted per window.
        const admittedBy = new Map<string, number>()
        // The invokes above count too: a public function's invokes are public, key or not.
        for (const res of invoked) {
          const reset = res.headers.get("x-ratelimit-reset") ?? "none"
          admittedBy.set(reset, (admittedBy.get(reset) ?? 0) + 1)
        }
        let refusedIn: string | undefined
        for (let sent = 0; refusedIn === undefined && sent < 1_400; sent += 20) {
          const batch = await Promise.all(Array.from({ length: 20 }, (_, i) => call(both[i % 2]!, "POST", `/platform/v1/functions/${fnId}/invoke`, undefined, null)))
          for (const res of batch) {
            const reset = res.headers.get("x-ratelimit-reset") ?? "none"
            if (res.status === 200) admittedBy.set(reset, (admittedBy.get(reset) ?? 0) + 1)
            else if (res.status === 429) refusedIn ??= reset
            else assert.fail(`invoke answered ${res.status}: ${res.text}`)
          }
        }
        assert.isDefined(refusedIn, "the limit was reached")
        assert.strictEqual(admittedBy.get(refusedIn!), 600, "600 a minute across both hosts")
        for (const count of admittedBy.values()) assert.isAtMost(count, 600)

        // ---- keys: revoked by another process (the CLI), refused by both hosts at once ----
        const project = JSON.parse(await parley(databaseUrl, "projects", "list", "--json"))[0]
        const issued = JSON.parse(await parley(databaseUrl, "keys", "create", project.id, "--name", "spread", "--json"))
        for (const base of both) {
          // Twice: the second answer comes from each host's key cache.
          for (let i = 0; i < 2; i++) assert.strictEqual((await call(base, "GET", "/platform/v1/workflows", undefined, issued.api_key)).status, 200)
        }
        await parley(databaseUrl, "keys", "revoke", project.id, issued.id)
        for (const base of both) {
          const refused = await call(base, "GET", "/platform/v1/workflows", undefined, issued.api_key)
          assert.strictEqual(refused.status, 401, `${base} still accepts the revoked key`)
        }

        // ---- project secrets: changed by another process (the CLI), seen by a host that remembers them ----
        const reader = await call(a, "POST", "/platform/v1/functions", {
          function: { name: "Secret reader", code: `async function handler(request, env) { return new Response(env.GREETING) }` }
        })
        assert.strictEqual(reader.status, 201, reader.text)
        const readerId = reader.body.data.id as string
        assert.strictEqual((await call(a, "POST", `/platform/v1/functions/${readerId}/deploy`)).status, 202)
        await parley(databaseUrl, "secrets", "set", project.id, "GREETING", "--value", "hello")
        const greeting = (base: string) => call(base, "POST", `/platform/v1/functions/${readerId}/invoke`)
        let last = ""
        await eventually("the reader deployed and serving the secret on B", async () => {
          const answer = await greeting(b)
          last = `${answer.status} ${answer.text}`
          return answer.text === "hello" || undefined
        }).catch((error) => assert.fail(`${error}; last answer: ${last}`))
        // Twice: the second answer comes from B's cache of the project's secrets.
        assert.strictEqual((await greeting(b)).text, "hello")
        await parley(databaseUrl, "secrets", "set", project.id, "GREETING", "--value", "bonjour")
        // The CLI's change reaches B's cache through its notification: milliseconds, never the cache's expiry (60 s).
        await eventually("B serves the changed secret", async () => (await greeting(b)).text === "bonjour" || undefined, 5_000)

        // ---- triggers: created on A, firing for events recorded on B within the trigger cache's bound ----
        const triggered = await call(a, "POST", "/platform/v1/workflows", {
          workflow: { name: "hosts trigger", status: "active", definition: { nodes: [node("start", "start")], edges: [] } }
        })
        assert.strictEqual(triggered.status, 201, triggered.text)
        // B remembers the project's triggers (none yet) as it records this event.
        assert.strictEqual((await call(b, "POST", "/platform/v1/events", { name: "order.paid" })).status, 201)
        const trigger = await call(a, "POST", `/platform/v1/workflows/${triggered.body.data.id}/triggers`, {
          trigger: { trigger_type: "project_event", event_name: "order.paid" }
        })
        assert.strictEqual(trigger.status, 201, trigger.text)
        const createdAt = Date.now()
        const runsOf = async () => {
          const runs = await call(b, "GET", `/platform/v1/workflows/${triggered.body.data.id}/executions?per_page=100`)
          assert.strictEqual(runs.status, 200, runs.text)
          return runs.body.data as Array<{ id: string }>
        }
        // Events recorded on B every 100 ms until runs start; the first event that started one says when B saw it.
        const sentAt = new Map<string, number>()
        while ((await runsOf()).length === 0) {
          assert.isAtMost(Date.now() - createdAt, TRIGGER_BOUND_MS + 10_000, "the trigger fires")
          const at = Date.now()
          const res = await call(b, "POST", "/platform/v1/events", { name: "order.paid" })
          assert.strictEqual(res.status, 201, res.text)
          sentAt.set(res.body.data.id, at)
          await sleep(100)
        }
        await sleep(1_000)
        const fired = await Promise.all((await runsOf()).map(async (run) =>
          (await call(a, "GET", `/platform/v1/workflow_executions/${run.id}`)).body.data.execution_context.system.event.id as string
        ))
        const firstFired = Math.min(...fired.map((id) => sentAt.get(id) ?? Infinity))
        console.log(`two hosts: a trigger created on A fired for events recorded on B ${firstFired - createdAt} ms after (bound ${TRIGGER_BOUND_MS} ms)`)
        assert.isAtMost(firstFired - createdAt, TRIGGER_BOUND_MS + 500, "within the trigger cache's bound")
        // Every event recorded after the bound started a run.
        for (const [id, at] of sentAt) if (at - createdAt > TRIGGER_BOUND_MS + 500) assert.include(fired, id)

        // ---- a runaway function on A: other functions' invokes on A keep answering (over HTTP) ----
        const deployed = async (name: string, code: string, publicEndpoint: boolean) => {
          const res = await call(a, "POST", "/platform/v1/functions", {
            function: { name, code, public_endpoint: publicEndpoint, runtime_config: { timeout: 1 } }
          })
          assert.strictEqual(res.status, 201, res.text)
          const id = res.body.data.id as string
          assert.strictEqual((await call(a, "POST", `/platform/v1/functions/${id}/deploy`)).status, 202)
          await eventually(`${name} deployed`, async () =>
            (await call(a, "GET", `/platform/v1/functions/${id}`)).body.data.status === "deployed" || undefined)
          return id
        }
        // Placed on the slot with fewer functions: not the one of the function above.
        const runawayId = await deployed("Runaway", `async function handler() { while (true) {} }`, true)
        // Invoked with the key (a public function's 600 a minute would refuse a quiet machine's pace).
        const innocentId = await deployed("Innocent", `async function handler() { return new Response("fine") }`, false)
        const runaway = call(a, "POST", `/platform/v1/functions/${runawayId}/invoke`, undefined, null)
        await sleep(100)
        const latencies: Array<number> = []
        const failed: Array<string> = []
        const began = Date.now()
        await Promise.all(Array.from({ length: 16 }, async () => {
          while (Date.now() - began < 2_500) {
            const sent = performance.now()
            const res = await call(a, "POST", `/platform/v1/functions/${innocentId}/invoke`)
            latencies.push(performance.now() - sent)
            if (res.status !== 200) failed.push(`${res.status} ${res.text}`)
          }
        }))
        assert.notStrictEqual((await runaway).status, 200)
        latencies.sort((x, y) => x - y)
        console.log(
          `two hosts: innocent invokes over HTTP while a runaway was killed: ${latencies.length}, failed ${failed.length}, ` +
            `p50 ${latencies[Math.floor(latencies.length / 2)]!.toFixed(1)} ms, max ${latencies[latencies.length - 1]!.toFixed(1)} ms`
        )
        assert.deepStrictEqual(failed, [])
      })
    }).pipe(Effect.scoped), 240_000)
})
