/**
 * Traces of a real run, exported to a local OTLP/HTTP receiver that decodes what it gets (`otlp.support.ts`): the
 * README's order bot (a greeting, a wait for the reply, a function that decides, the answer) started by an inbound
 * message and resumed by the reply, on a Parley embedded behind Node's HTTP server with the standard environment
 * (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_SERVICE_NAME`, ...). The span tree: a trace per request, a root per execution
 * slice linked to what asked for it, a span per step with its node, sends and the function's invocation under their
 * steps; no message text, phone number or key anywhere in what left. Without the environment nothing is exported
 * and no tracer is installed at all.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids, UpstreamWebhook } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Layer, Tracer } from "effect"
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { makeParley, type ParleyHandle } from "../src/index.ts"
import { type ReceivedSpan, startOtlpReceiver } from "./otlp.support.ts"

const KEY = "pk_telemetry_traces_0123456789abcdef"
const PHONE = "+15557654321"
const APP_SECRET = "telemetry-app-secret-0123456789"
const WEBHOOK = "/platform/v1/msg/upstream/webhook"

const eventually = async (what: string, check: () => Promise<boolean>, withinMs = 20_000) => {
  const deadline = Date.now() + withinMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`still waiting for: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** A Parley on a real loopback server with `settings` over the environment. */
const serve = async (settings: Record<string, string>, tracer?: Tracer.Tracer) => {
  const server: Server = createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const parley = await makeParley({
    publicUrl: url,
    storage: { ports: Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer) },
    network: { mode: "simulator", appSecret: APP_SECRET },
    apiKey: KEY,
    logger: "none",
    settings,
    ...(tracer === undefined ? {} : { tracer })
  })
  server.on("request", parley.handler)
  const request = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { "x-api-key": KEY, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const text = await response.text()
    return { status: response.status, body: text.length > 0 ? JSON.parse(text) : undefined, text }
  }
  /** A network webhook POST, signed: a status report of no message this host knows (acknowledged all the same). */
  const webhook = async () => {
    const raw = new TextEncoder().encode(JSON.stringify({
      object: "whatsapp_business_account",
      entry: [{
        id: "0",
        changes: [{
          field: "messages",
          value: {
            messaging_product: "whatsapp",
            metadata: { display_phone_number: "15550100001", phone_number_id: parley.simulatedPhoneNumberId },
            statuses: [{ id: "wamid.unknown", status: "delivered", timestamp: "1700000000", recipient_id: "15557654321" }]
          }
        }]
      }]
    }))
    const response = await fetch(`${url}${WEBHOOK}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-hub-signature-256": UpstreamWebhook.hubSignature(raw, APP_SECRET) },
      body: raw
    })
    return response.status
  }
  const stop = async () => {
    await parley.dispose()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
  return { parley, request, webhook, stop }
}

/**
 * The README's order bot, its template answer a text (the simulated network's template review takes seconds): the
 * function says yes only when it received a `traceparent`, so the branch taken tells whether it was propagated.
 */
const runOrderBot = async (host: Awaited<ReturnType<typeof serve>>, parley: ParleyHandle) => {
  const pnid = parley.simulatedPhoneNumberId!
  const fn = await host.request("POST", "/platform/v1/functions", {
    function: {
      name: "Yes or no",
      code: "async function handler(request) { const { execution_context } = await request.json(); " +
        "return Response.json({ next_edge: request.headers.get('traceparent') && /^y/i.test(String(execution_context.vars.answer)) ? 'yes' : 'no' }) }"
    }
  })
  assert.strictEqual(fn.status, 201, fn.text)
  const fnId = fn.body.data.id as string
  const deployed = await host.request("POST", `/platform/v1/functions/${fnId}/deploy`)
  assert.include([200, 202], deployed.status, deployed.text)
  // Deploys are asynchronous: the function is ready once its status says so.
  await eventually("the function deployed", async () => (await host.request("GET", `/platform/v1/functions/${fnId}`)).body.data.status === "deployed")
  const n = (id: string, type: string, config: unknown) => ({ id, position: { x: 0, y: 0 }, data: { node_type: type, config } })
  const nodes = [
    n("start", "start", {}),
    n("hi", "send_text", { message: "Hi {{context.contact.name}}! Your order status? (yes/no)" }),
    n("ask", "wait_for_response", { save_response_to: "answer", has_timeout: true, timeout_seconds: 3600 }),
    n("route", "decide", { decision_type: "function", function_id: fnId, conditions: [{ label: "yes" }, { label: "no" }] }),
    n("status", "send_text", { message: "Your order 42 is on its way" }),
    n("human", "handoff", { reason: "Wants a person" })
  ]
  const edges = [
    { source: "start", target: "hi" },
    { source: "hi", target: "ask" },
    { source: "ask", target: "route" },
    { source: "route", target: "status", label: "yes" },
    { source: "route", target: "human", label: "no" }
  ]
  const wf = await host.request("POST", "/platform/v1/workflows", {
    workflow: { name: "Order bot", message_debounce_seconds: 0, definition: { nodes, edges } }
  })
  assert.strictEqual(wf.status, 201, wf.text)
  const wfId = wf.body.data.id as string
  const trigger = await host.request("POST", `/platform/v1/workflows/${wfId}/triggers`, {
    trigger: { trigger_type: "inbound_message", phone_number_id: pnid }
  })
  assert.strictEqual(trigger.status, 201, trigger.text)
  assert.strictEqual((await host.request("PATCH", `/platform/v1/workflows/${wfId}`, { workflow: { status: "active" } })).status, 200)
  const say = async (text: string) => {
    const sent = await host.request("POST", "/sandbox/inbound", {
      phone_number_id: pnid,
      from: PHONE,
      profile_name: "Bo",
      message: { type: "text", text: { body: text } }
    })
    assert.strictEqual(sent.status, 202, sent.text)
  }
  const outbox = async () =>
    ((await host.request("GET", `/sandbox/outbox?phone_number_id=${pnid}`)).body.data as Array<{ type: string; envelope: { text?: { body: string } } }>)
      .filter((m) => m.type === "text")
      .map((m) => m.envelope.text!.body)
  await say("hello")
  await eventually("the greeting", async () => (await outbox()).length === 1)
  const runs = await host.request("GET", `/platform/v1/workflows/${wfId}/executions`)
  const run = runs.body.data[0] as { id: string; tracking_id: string }
  await eventually("the run to wait", async () => (await host.request("GET", `/platform/v1/workflow_executions/${run.id}`)).body.data.status === "waiting")
  await say("yes please")
  await eventually("the run to end or hand off", async () => {
    const status = (await host.request("GET", `/platform/v1/workflow_executions/${run.id}`)).body.data.status
    return status === "ended" || status === "handoff"
  })
  return { run, wfId, fnId, pnid, texts: await outbox(), status: (await host.request("GET", `/platform/v1/workflow_executions/${run.id}`)).body.data.status as string }
}

const attr = (span: ReceivedSpan, key: string) => span.attributes[key]

describe("traces over OTLP/HTTP", () => {
  it("exports the order bot's span tree to a local receiver, with ids and no content", async () => {
    const receiver = await startOtlpReceiver()
    const host = await serve({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_EXPORTER_OTLP_HEADERS: "x-collector-token=t0k%3Den",
      OTEL_SERVICE_NAME: "parley-test",
      OTEL_BSP_SCHEDULE_DELAY: "200",
      PARLEY_TRACE_PROPAGATION: "true"
    })
    let result: Awaited<ReturnType<typeof runOrderBot>>
    try {
      result = await runOrderBot(host, host.parley)
      assert.strictEqual(await host.webhook(), 200)
    } finally {
      // The scope's close exports what is left.
      await host.stop()
      await receiver.close()
    }
    const { run, wfId, fnId, pnid } = result
    assert.deepStrictEqual(receiver.errors, [], "every export decodes as OTLP/JSON")
    assert.isAbove(receiver.requests.length, 0)
    for (const r of receiver.requests) assert.strictEqual(r.headers["x-collector-token"], "t0k=en", "OTEL_EXPORTER_OTLP_HEADERS")
    // The function saw the trace context (propagation on): the reply took the "yes" branch.
    assert.deepStrictEqual(result.texts, ["Hi Bo! Your order status? (yes/no)", "Your order 42 is on its way"])

    const spans = receiver.spans
    const byId = new Map(spans.map((s) => [s.spanId, s]))
    for (const s of spans) assert.strictEqual(s.resource["service.name"], "parley-test")

    // A trace per API request: a server span at its root, the request's path without its query.
    const requests = spans.filter((s) => s.kind === 2 && s.attributes["http.request.method"] !== undefined)
    const paths = requests.map((s) => String(attr(s, "url.path")))
    assert.includeMembers(paths, ["/platform/v1/workflows", "/sandbox/inbound", `/platform/v1/workflows/${wfId}/triggers`, WEBHOOK])
    for (const r of requests) assert.isUndefined(r.parentSpanId, `${r.name} ${attr(r, "url.path")} is the root of its trace`)
    // The network's webhook POST: its trace holds the ingestion of what it carried.
    const webhook = requests.find((s) => attr(s, "url.path") === WEBHOOK)!
    assert.strictEqual(attr(webhook, "http.response.status_code"), 200)
    assert.isTrue(spans.some((s) => s.traceId === webhook.traceId && s.name === "UpstreamIngestion.receive"))
    const workflowsPost = requests.find((s) => attr(s, "url.path") === "/platform/v1/workflows" && attr(s, "http.request.method") === "POST")!
    assert.strictEqual(attr(workflowsPost, "http.response.status_code"), 201)

    // A trace per execution slice: roots, about the run, linked to what asked for them.
    const slices = spans.filter((s) => s.name === "ExecutionEngine.runSlice" && attr(s, "parley.execution.id") === run.id)
    assert.isAtLeast(slices.length, 2, "the start's slice and the reply's")
    for (const slice of slices) {
      assert.isUndefined(slice.parentSpanId)
      assert.strictEqual(attr(slice, "parley.workflow.id"), wfId)
      assert.strictEqual(attr(slice, "parley.execution.tracking_id"), run.tracking_id)
      assert.strictEqual(attr(slice, "parley.execution.trigger"), "inbound_message")
    }
    assert.isTrue(
      slices.some((s) => s.links.some((l) => l.attributes["parley.link"] === "trigger" && l.traceId !== s.traceId)),
      "a slice links the span that asked for it, in another trace"
    )
    const sliceTraces = new Set(slices.map((s) => s.traceId))
    assert.strictEqual(sliceTraces.size, slices.length, "each slice is a trace of its own")

    // A span per step under its slice, with the node's id and type.
    const steps = spans.filter((s) => s.name === "ExecutionEngine.step" && sliceTraces.has(s.traceId))
    const stepNodes = steps.map((s) => `${attr(s, "parley.node.id")}:${attr(s, "parley.node.type")}`)
    assert.includeMembers(stepNodes, ["hi:send_text", "ask:wait_for_response", "route:decide", "status:send_text"])
    for (const s of steps) {
      assert.strictEqual(byId.get(s.parentSpanId!)?.name, "ExecutionEngine.runSlice", "a step's parent is its slice")
      assert.strictEqual(attr(s, "parley.execution.id"), run.id)
    }

    // Sends: the engine's send and the outbound send under it, with the message id; the network call under that.
    const sends = spans.filter((s) => s.name === "Outbound.send" && sliceTraces.has(s.traceId))
    assert.strictEqual(sends.length, 2)
    for (const s of sends) {
      assert.match(String(attr(s, "parley.message.id")), /^[0-9a-f-]{36}$/)
      assert.strictEqual(attr(s, "parley.send.status"), "accepted")
      assert.strictEqual(attr(s, "parley.phone_number.id"), pnid)
      let up = byId.get(s.parentSpanId!)
      while (up !== undefined && up.name !== "ExecutionEngine.send") up = up.parentSpanId === undefined ? undefined : byId.get(up.parentSpanId)
      assert.isDefined(up, "a send is under the engine's send span")
    }

    // The function's invocation under the decide step.
    const invocation = spans.find((s) => s.name === "FunctionInvoker.run" && attr(s, "parley.function.id") === fnId)!
    assert.isDefined(invocation)
    assert.strictEqual(attr(invocation, "parley.function.status_code"), 200)
    let up = byId.get(invocation.parentSpanId!)
    while (up !== undefined && up.name !== "ExecutionEngine.step") up = up.parentSpanId === undefined ? undefined : byId.get(up.parentSpanId)
    assert.strictEqual(up === undefined ? undefined : attr(up, "parley.node.id"), "route")

    // Never a message's text, a phone number or a key in what left.
    const exported = receiver.bodies.join("\n")
    for (const secret of ["yes please", "Hi Bo", "on its way", "15557654321", KEY, "t0k=en"]) {
      assert.notInclude(exported, secret, `the export holds ${secret}`)
    }
  }, 60_000)

  it("exports in protobuf by default: a request's server span and its children decode with the proto's fields", async () => {
    const receiver = await startOtlpReceiver()
    const host = await serve({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_BSP_SCHEDULE_DELAY: "100" })
    try {
      assert.strictEqual((await host.request("GET", "/platform/v1/workflows?limit=5")).status, 200)
    } finally {
      await host.stop()
      await receiver.close()
    }
    assert.deepStrictEqual(receiver.errors, [])
    assert.isAbove(receiver.requests.length, 0)
    for (const r of receiver.requests) assert.strictEqual(r.headers["content-type"], "application/x-protobuf")
    const server = receiver.spans.find((s) => s.kind === 2 && s.attributes["url.path"] === "/platform/v1/workflows")!
    assert.isDefined(server)
    assert.deepStrictEqual(
      [server.name, server.parentSpanId, server.attributes["http.request.method"], server.attributes["http.response.status_code"], server.resource["service.name"]],
      ["GET", undefined, "GET", 200, "parley"]
    )
    assert.isUndefined(server.attributes["url.query"], "no query in a span")
    const children = receiver.spans.filter((s) => s.traceId === server.traceId && s.parentSpanId === server.spanId)
    assert.include(children.map((s) => s.name), "Projects.authenticate")
  }, 30_000)

  it("exports nothing and installs no tracer without the environment; no traceparent goes out by default", async () => {
    const receiver = await startOtlpReceiver()
    const host = await serve({})
    try {
      assert.strictEqual(Context.get(host.parley.context, Tracer.Tracer), Tracer.nativeTracer, "no exporter was built")
      const result = await runOrderBot(host, host.parley)
      // The function got no trace context: the reply took the "no" branch.
      assert.strictEqual(result.status, "handoff")
    } finally {
      await host.stop()
      await receiver.close()
    }
    assert.strictEqual(receiver.requests.length, 0)
  }, 60_000)

  it("sends the spans to an embedder's own tracer", async () => {
    const names: Array<string> = []
    const own = Tracer.make({
      span: (options) => {
        const span = Tracer.nativeTracer.span(options)
        names.push(options.name)
        return span
      }
    })
    const host = await serve({}, own)
    try {
      assert.strictEqual((await host.request("GET", "/platform/v1/workflows")).status, 200)
    } finally {
      await host.stop()
    }
    assert.includeMembers(names, ["GET", "Projects.authenticate", "WorkflowsRepo.listSummaries"])
  }, 30_000)
})
