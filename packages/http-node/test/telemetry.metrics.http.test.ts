/**
 * `GET /metrics` of an embedded Parley behind Node's HTTP server: off without `PARLEY_METRICS_TOKEN`, refused without
 * the token, and with it an exposition Prometheus's own `promtool check metrics` accepts, whose counters move as a
 * workflow runs (executions started and ended, steps by node type, sends, inbound messages, webhook attempts) and
 * whose scrape-time gauges (job queues, live runs) read the state at the time of the scrape.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids, metricFamilies } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { ConfigProvider, Effect, Exit, Layer, Option, Scope } from "effect"
import { spawnSync } from "node:child_process"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { makeParley } from "../src/index.ts"
import { serveMetricsPort } from "../src/telemetry/MetricsPort.ts"

const KEY = "pk_telemetry_metrics_0123456789abcdef"
const TOKEN = "metrics-token-0123456789"

const eventually = async (what: string, check: () => Promise<boolean>, withinMs = 20_000) => {
  const deadline = Date.now() + withinMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`still waiting for: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** The samples of an exposition: `name{labels} value` lines. */
const samples = (text: string) =>
  text.split("\n").filter((line) => line !== "" && !line.startsWith("#")).map((line) => {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (match === null) throw new Error(`not a sample line: ${line}`)
    const labels = Object.fromEntries([...(match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]))
    return { name: match[1]!, labels, value: Number(match[3]) }
  })

/** The sum of the samples named `name` whose labels include `labels`. */
const value = (text: string, name: string, labels: Record<string, string> = {}) =>
  samples(text)
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0)

const serve = async (settings: Record<string, string>) => {
  const server: Server = createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const parley = await makeParley({
    publicUrl: url,
    storage: { ports: Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer) },
    apiKey: KEY,
    logger: "none",
    settings
  })
  server.on("request", parley.handler)
  const request = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { "x-api-key": KEY, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const text = await response.text()
    return { status: response.status, body: text.length > 0 && text.startsWith("{") ? JSON.parse(text) : undefined, text }
  }
  const scrape = (authorization?: string) =>
    fetch(`${url}/metrics`, authorization === undefined ? {} : { headers: { authorization } })
  const stop = async () => {
    await parley.dispose()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
  return { parley, url, request, scrape, stop }
}

/** A webhook receiver on loopback that answers 200. */
const startReceiver = async () => {
  let received = 0
  const server = createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      received++
      res.writeHead(200).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received: () => received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

describe("GET /metrics", () => {
  it("is off without a token: 404", async () => {
    const host = await serve({})
    try {
      const response = await host.scrape(`Bearer ${TOKEN}`)
      assert.deepStrictEqual([response.status, await response.json()], [404, { error: "Not found" }])
    } finally {
      await host.stop()
    }
  }, 30_000)

  it("serves on the operator port without a token when PARLEY_METRICS_PORT is set", async () => {
    const host = await serve({})
    const scope = Scope.makeUnsafe()
    try {
      const port = 20_000 + Math.floor(Math.random() * 30_000)
      const url = await Effect.runPromise(serveMetricsPort(host.parley).pipe(
        Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: { PARLEY_METRICS_PORT: String(port) } }))),
        Scope.provide(scope)
      ))
      assert.strictEqual(Option.getOrThrow(url), `http://127.0.0.1:${port}/metrics`)
      const response = await fetch(Option.getOrThrow(url))
      assert.strictEqual(response.status, 200)
      const text = await response.text()
      assert.include(text, "# TYPE parley_job_queue_jobs gauge")
      const checked = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" })
      assert.strictEqual(checked.status, 0, `${checked.stdout}${checked.stderr}`)
      assert.strictEqual((await fetch(`http://127.0.0.1:${port}/other`)).status, 404)
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      await host.stop()
    }
    // Unset: no port.
    const none = await Effect.runPromise(Effect.scoped(serveMetricsPort(host.parley).pipe(
      Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: {} })))
    )))
    assert.isTrue(Option.isNone(none))
  }, 30_000)

  it("is refused without its token, passes promtool, and its counters move as a workflow runs", async () => {
    const receiver = await startReceiver()
    const host = await serve({ PARLEY_METRICS_TOKEN: TOKEN, PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS: "true" })
    try {
      for (const authorization of [undefined, "Bearer wrong-token-0123456789", TOKEN, `Basic ${TOKEN}`]) {
        const refused = await host.scrape(authorization)
        assert.strictEqual(refused.status, 401, String(authorization))
        assert.deepStrictEqual(await refused.json(), { error: "Missing or invalid metrics token" })
      }
      const scrape = async () => {
        const response = await host.scrape(`Bearer ${TOKEN}`)
        assert.strictEqual(response.status, 200)
        assert.strictEqual(response.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8")
        return response.text()
      }
      const before = await scrape()

      const pnid = host.parley.simulatedPhoneNumberId!
      const hook = await host.request("POST", `/platform/v1/msg/phone_numbers/${pnid}/webhooks`, {
        msg_webhook: { url: receiver.url, events: ["msg.message.received"], secret_key: "whsec_metrics_0123456789" }
      })
      assert.strictEqual(hook.status, 201, hook.text)
      const n = (id: string, type: string, config: unknown) => ({ id, position: { x: 0, y: 0 }, data: { node_type: type, config } })
      const wf = await host.request("POST", "/platform/v1/workflows", {
        workflow: {
          name: "Echo",
          message_debounce_seconds: 0,
          definition: {
            nodes: [
              n("start", "start", {}),
              n("hi", "send_text", { message: "Hi! Anything else?" }),
              n("ask", "wait_for_response", { save_response_to: "answer", has_timeout: true, timeout_seconds: 3600 }),
              n("bye", "send_text", { message: "Thanks, bye" })
            ],
            edges: [{ source: "start", target: "hi" }, { source: "hi", target: "ask" }, { source: "ask", target: "bye" }]
          }
        }
      })
      assert.strictEqual(wf.status, 201, wf.text)
      const wfId = wf.body.data.id as string
      assert.strictEqual(
        (await host.request("POST", `/platform/v1/workflows/${wfId}/triggers`, { trigger: { trigger_type: "inbound_message", phone_number_id: pnid } })).status,
        201
      )
      assert.strictEqual((await host.request("PATCH", `/platform/v1/workflows/${wfId}`, { workflow: { status: "active" } })).status, 200)
      const say = async (text: string) =>
        assert.strictEqual(
          (await host.request("POST", "/sandbox/inbound", { phone_number_id: pnid, from: "+15550001234", message: { type: "text", text: { body: text } } })).status,
          202
        )
      const status = async () => {
        const runs = await host.request("GET", `/platform/v1/workflows/${wfId}/executions`)
        return runs.body.data[0]?.status as string | undefined
      }

      await say("hello")
      await eventually("the run to wait", async () => (await status()) === "waiting")
      const waiting = await scrape()
      assert.strictEqual(value(waiting, "parley_executions_live", { status: "waiting", waiting_reason: "wait_for_response" }), 1)
      assert.isAtLeast(value(waiting, "parley_executions_live_oldest_seconds", { status: "waiting" }), 0)

      await say("nothing, thanks")
      await eventually("the run to end", async () => (await status()) === "ended")
      await eventually("the webhook deliveries", async () => receiver.received() >= 2)
      await eventually("the attempts counted", async () =>
        value(await scrape(), "parley_webhook_attempts_total", { result: "success" }) >= 2)
      const after = await scrape()

      const moved = (name: string, labels: Record<string, string> = {}) => value(after, name, labels) - value(before, name, labels)
      assert.strictEqual(moved("parley_executions_started_total", { trigger: "inbound_message" }), 1)
      assert.strictEqual(moved("parley_executions_ended_total", { status: "ended", trigger: "inbound_message" }), 1)
      assert.strictEqual(moved("parley_messages_sent_total", { status: "accepted", error_code: "" }), 2)
      assert.strictEqual(moved("parley_messages_inbound_total", { outcome: "recorded" }), 2)
      assert.isAtLeast(moved("parley_execution_step_duration_seconds_count", { node_type: "send_text" }), 2)
      assert.isAtLeast(moved("parley_execution_step_duration_seconds_count", { node_type: "wait_for_response" }), 1)
      assert.strictEqual(moved("parley_webhook_attempts_total", { result: "success" }), 2)
      assert.strictEqual(moved("parley_webhook_delivery_lag_seconds_count", { attempt: "first" }), 2)
      // The run ended: no live run is left, and the gauge says 0 rather than its last value.
      assert.strictEqual(value(after, "parley_executions_live", { status: "waiting" }), 0)
      assert.include(after, 'parley_executions_live{status="waiting",waiting_reason="wait_for_response"} 0')
      // The job queues the run went through are there, by state.
      assert.isAbove(samples(after).filter((s) => s.name === "parley_job_queue_jobs").length, 0)
      assert.isAbove(samples(after).filter((s) => s.name === "parley_job_queue_oldest_ready_seconds").length, 0)

      // Prometheus's own linter accepts the exposition as it is served.
      for (const exposition of [before, after]) {
        const checked = spawnSync("promtool", ["check", "metrics"], { input: exposition, encoding: "utf8" })
        assert.strictEqual(checked.error, undefined, "promtool runs (Debian's prometheus package; .ci/run installs it)")
        assert.strictEqual(checked.status, 0, `${checked.stdout}${checked.stderr}`)
      }
      // Every family served is declared (and so documented: telemetry.docs.test.ts), with its HELP text.
      const declared = new Set(metricFamilies().map((f) => f.name))
      const served = [...after.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!)
      assert.isAbove(served.length, 10)
      for (const name of served) assert.isTrue(declared.has(name), `${name} is declared`)
      assert.strictEqual([...after.matchAll(/^# HELP /gm)].length, served.length)
      // No project's id, phone number or message text among the labels.
      for (const leak of [host.parley.project.id, "15550001234", "nothing, thanks", wfId]) assert.notInclude(after, leak)
    } finally {
      await host.stop()
      await receiver.close()
    }
  }, 60_000)
})
