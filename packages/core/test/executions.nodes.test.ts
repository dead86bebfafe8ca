/**
 * The node types beyond the basics, end to end on memory ports and the
 * network simulator: send_template (over the template mirror), webhook,
 * call, emit_event.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { EventPlans } from "../src/events/EventPlans.ts"
import { Events } from "../src/events/Events.ts"
import { ExecutionEngine } from "../src/executions/Engine.ts"
import { Executions } from "../src/executions/Executions.ts"
import { layerExecutionsWorkers } from "../src/executions/ExecutionsJobs.ts"
import { Launcher } from "../src/executions/Launcher.ts"
import { templateComponents, TemplateMismatch } from "../src/executions/TemplateEnvelope.ts"
import { layerMessagingWorkers } from "../src/messaging/MessagingJobs.ts"
import { MessageConfigs } from "../src/messaging/numbers/MessageConfigs.ts"
import type { TemplateRecord } from "../src/messaging/templates/Template.ts"
import { Templates } from "../src/messaging/templates/Templates.ts"
import { UpstreamSettings } from "../src/messaging/Upstream.ts"
import * as Parley from "../src/Parley.ts"
import { ExecutionsRepo } from "../src/executions/ExecutionsRepo.ts"
import { MessagingNetwork } from "../src/network/MessagingNetwork.ts"
import { ProjectSecretsRepo } from "../src/projects/ProjectSecretsRepo.ts"
import { ProjectSecrets } from "../src/projects/ProjectSecrets.ts"
import { Projects } from "../src/projects/Projects.ts"
import { Ids } from "../src/shared/Ids.ts"
import {
  layerMemoryFunctionRuntime,
  layerMemoryJobQueue,
  layerMemoryLanguageModels,
  layerMemoryStorage,
  layerMemoryWebhookHttp,
  MemoryWebhookReceiver
} from "../src/testing/index.ts"
import { WebhookSettings } from "../src/shared/OutboundSettings.ts"
import { Workflows } from "../src/workflows/Workflows.ts"
import { Simulator, SimulatedUpstream } from "../src/simulators/index.ts"

const Ports = Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layerSequential)
const Services = Layer.mergeAll(layerExecutionsWorkers, layerMessagingWorkers).pipe(
  Layer.provideMerge(Parley.layerExecutionServices),
  Layer.provideMerge(Parley.layerFunctionServices),
  Layer.provideMerge(Parley.layerServices),
  Layer.provideMerge(SimulatedUpstream.layerSimulatorConfig),
  Layer.provideMerge(layerMemoryFunctionRuntime()),
  Layer.provideMerge(Layer.mergeAll(layerMemoryWebhookHttp, WebhookSettings.layer({ allowPrivateUrls: false }), layerMemoryLanguageModels())),
  Layer.provideMerge(Ports)
)

const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 50 }))
const idle = Effect.gen(function*() {
  for (let i = 0; i < 20; i++) yield* Effect.andThen(TestClock.adjust("10 millis"), settle)
  yield* (yield* ExecutionEngine).idle
})

const given = Effect.gen(function*() {
  const projects = yield* Projects
  const project = yield* projects.create("Acme")
  const { secret } = yield* projects.createKey(project.id, "tests")
  const principal = yield* projects.authenticate(secret)
  const config = Option.getOrThrow(yield* (yield* MessageConfigs).bootstrap(project.id))
  const simulator = yield* Simulator.running
  return { principal, config, simulator }
})

const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({
  id,
  type: "flow-node",
  position: { x: 0, y: 0 },
  data: { node_type, config }
})
const edge = (source: string, target: string, label = "next") => ({ id: `${source}-${target}`, source, target, label })

/** A workflow start → nodes in a line. */
const line = (...nodes: ReadonlyArray<ReturnType<typeof node>>) => ({
  nodes: [node("start", "start"), ...nodes],
  edges: ["start", ...nodes.map((n) => n.id)].slice(0, -1).map((id, i) => edge(id, nodes[i]!.id))
})

type Given = Effect.Success<typeof given>

const run = (g: Given, definition: ReturnType<typeof line>, variables: Record<string, unknown> = {}, name = "Flow") =>
  Effect.gen(function*() {
    const workflow = yield* (yield* Workflows).create(g.principal, { name, status: "active", definition })
    const executions = yield* Executions
    const ack = yield* executions.start(g.principal, workflow.id, { phone_number: "+15551234567", variables }, { ip: null, user_agent: null })
    yield* idle
    return yield* executions.get(g.principal, ack.id)
  })

/** Creates a template on the simulated network, lets the review pass and syncs the mirror: its mirror record. */
const givenTemplate = (g: Given, definition: Record<string, unknown>) =>
  Effect.gen(function*() {
    const network = yield* MessagingNetwork
    yield* network.createTemplate({ accessToken: g.config.access_token }, g.config.business_account_id, definition)
    yield* TestClock.adjust("6 seconds")
    yield* idle
    const listed = yield* (yield* Templates).list(g.principal, { phone_number_id: g.config.phone_number_id, name: String(definition.name) }, {
      mode: "page",
      page: 1,
      perPage: 10
    })
    return listed.items[0]!
  })

const orderUpdate = {
  name: "order_update",
  language: "en_US",
  category: "UTILITY",
  components: [
    { type: "HEADER", format: "TEXT", text: "Order {{1}}", example: { header_text: ["42"] } },
    { type: "BODY", text: "Hello {{1}}, your order {{2}} has shipped.", example: { body_text: [["Ada", "42"]] } },
    { type: "BUTTONS", buttons: [{ type: "URL", text: "Track", url: "https://shop.test/track/{{1}}", example: ["42"] }] }
  ]
}

const templateSends = (g: Given) =>
  Effect.map(g.simulator.outbox(g.config.phone_number_id), (all) => all.filter((m) => m.type === "template"))

const record = (overrides: Partial<TemplateRecord>): TemplateRecord => ({
  id: "t",
  project_id: "p",
  business_account_id: "w",
  upstream_template_id: "1",
  name: "t",
  language: "en",
  status: "approved",
  category: "UTILITY",
  sub_category: null,
  parameter_format: "POSITIONAL",
  components: [{ type: "BODY", text: "Hi {{1}} and {{2}}" }],
  created_at: "",
  updated_at: "",
  ...overrides
})

describe("send_template parameters", () => {
  it("accepts the positional array and numbered object forms", () => {
    const t = record({})
    const expected = [{ type: "body", parameters: [{ type: "text", text: "Ada" }, { type: "text", text: "7" }] }]
    assert.deepStrictEqual(templateComponents(t, ["Ada", 7]), expected)
    assert.deepStrictEqual(templateComponents(t, { "2": 7, "1": "Ada" }), expected)
  })
  it("fills named variables, headers, document file names and URL button suffixes", () => {
    const t = record({
      parameter_format: "NAMED",
      components: [
        { type: "HEADER", format: "DOCUMENT" },
        { type: "BODY", text: "Hi {{first_name}}, total {{total}}" },
        { type: "BUTTONS", buttons: [{ type: "QUICK_REPLY", text: "Ok" }, { type: "URL", text: "Pay", url: "https://pay.test/{{1}}" }] }
      ]
    })
    assert.deepStrictEqual(
      templateComponents(t, { first_name: "Ada", total: "9", header_media_url: "https://x.test/a.pdf", header_filename: "a.pdf", button_url_1: "abc" }),
      [
        { type: "header", parameters: [{ type: "document", document: { link: "https://x.test/a.pdf", filename: "a.pdf" } }] },
        { type: "body", parameters: [{ type: "text", parameter_name: "first_name", text: "Ada" }, { type: "text", parameter_name: "total", text: "9" }] },
        { type: "button", sub_type: "url", index: "1", parameters: [{ type: "text", text: "abc" }] }
      ]
    )
    // The positional array fills the names in order of first use.
    assert.deepStrictEqual(
      (templateComponents(t, { "1": "Ada", "2": "9", header_media_url: "u", button_url_1: "x" }) as ReadonlyArray<unknown>)[1],
      { type: "body", parameters: [{ type: "text", parameter_name: "first_name", text: "Ada" }, { type: "text", parameter_name: "total", text: "9" }] }
    )
  })
  it("sends the components form as given", () => {
    const components = [{ type: "body", parameters: [{ type: "text", text: "x" }] }]
    assert.strictEqual(templateComponents(record({}), components), components)
  })
  it("puts an authentication code in the body and the OTP button", () => {
    const t = record({
      category: "AUTHENTICATION",
      components: [{ type: "BODY", text: "*{{1}}* is your verification code." }, { type: "BUTTONS", buttons: [{ type: "OTP", otp_type: "COPY_CODE" }] }]
    })
    const expected = [
      { type: "body", parameters: [{ type: "text", text: "123456" }] },
      { type: "button", sub_type: "otp", index: "0", parameters: [{ type: "text", text: "123456" }] }
    ]
    assert.deepStrictEqual(templateComponents(t, { code: "123456" }), expected)
    assert.deepStrictEqual(templateComponents(t, ["123456"]), expected)
  })
  it("refuses a count that does not match, naming what is wrong", () => {
    const t = record({})
    const cases: ReadonlyArray<[unknown, string]> = [
      [["Ada"], "the body has 2 variable(s), 1 given"],
      [{ "1": "a", "2": "b", "3": "c" }, "the body has 2 variable(s), 3 given"],
      [{ name: "Ada" }, "the template takes positional variables, named ones were given"],
      [{ "1": "a", name: "b" }, "positional and named variables are mixed"],
      [["a", "b", { x: 1 }], "the body has 2 variable(s), 3 given"],
      [{ "1": "a", "2": "b", header_text: "h" }, "the template has no text header, header_text was given"],
      [{ "1": "a", "2": "b", button_url_0: "x" }, "the template has no URL button with a variable at index 0"],
      [{ "1": "a", "2": "b", code: "1" }, "code is for authentication templates"]
    ]
    for (const [parameters, why] of cases) {
      const result = templateComponents(t, parameters)
      assert.instanceOf(result, TemplateMismatch)
      assert.strictEqual((result as TemplateMismatch).message, `Template parameter mismatch: ${why}`)
    }
  })
})

describe("send_template node", () => {
  it.effect("sends an approved template through the mirror, with interpolated parameters", () =>
    Effect.gen(function*() {
      const g = yield* given
      const t = yield* givenTemplate(g, orderUpdate)
      assert.strictEqual(t.status, "approved")
      const done = yield* run(g, line(node("send", "send_template", {
        template_id: t.id,
        parameters: { "1": "{{vars.name}}", "2": "{{vars.order}}", header_text: "{{vars.order}}", button_url_0: "{{vars.order}}" }
      })), { name: "Ada", order: 42 })
      assert.strictEqual(done.status, "ended", JSON.stringify(done.error_details))
      const sent = yield* templateSends(g)
      assert.strictEqual(sent.length, 1)
      assert.deepStrictEqual((sent[0]!.envelope as { template: unknown }).template, {
        name: "order_update",
        language: { code: "en_US" },
        components: [
          { type: "header", parameters: [{ type: "text", text: "42" }] },
          { type: "body", parameters: [{ type: "text", text: "Ada" }, { type: "text", text: "42" }] },
          { type: "button", sub_type: "url", index: "0", parameters: [{ type: "text", text: "42" }] }
        ]
      })
      const performed = done.events.find((e) => e.event_type === "action_performed")
      assert.strictEqual(performed?.payload["action"], "send_template")
      assert.strictEqual(performed?.payload["message_id"], sent[0]!.id)
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("fails the step when the template is not approved now, as the network says at run time", () =>
    Effect.gen(function*() {
      const g = yield* given
      const t = yield* givenTemplate(g, orderUpdate)
      // Paused on the network after the mirror last saw it approved.
      yield* g.simulator.setTemplateStatus(t.upstream_template_id, "PAUSED")
      const done = yield* run(g, line(node("send", "send_template", { template_id: t.id, parameters: ["a", "b"] })))
      assert.strictEqual(done.status, "failed")
      assert.strictEqual(done.error_details?.message, "Template order_update (en_US) is not approved: its status is paused")
      assert.strictEqual(done.error_details?.code, "template_not_approved")
      assert.strictEqual((yield* templateSends(g)).length, 0)
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("fails with Template parameter mismatch before anything is sent", () =>
    Effect.gen(function*() {
      const g = yield* given
      const t = yield* givenTemplate(g, orderUpdate)
      const done = yield* run(g, line(node("send", "send_template", { template_id: t.id, parameters: ["only one"] })))
      assert.strictEqual(done.status, "failed")
      assert.match(done.error_details?.message ?? "", /^Template parameter mismatch/)
      assert.strictEqual((yield* templateSends(g)).length, 0)
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("sends an authentication template with its code in the body and the OTP button", () =>
    Effect.gen(function*() {
      const g = yield* given
      const t = yield* givenTemplate(g, {
        name: "login_code",
        language: "en_US",
        category: "AUTHENTICATION",
        components: [{ type: "BODY", add_security_recommendation: true }, { type: "BUTTONS", buttons: [{ type: "OTP", otp_type: "COPY_CODE" }] }]
      })
      const done = yield* run(g, line(node("send", "send_template", { template_id: t.id, parameters: { code: "{{vars.code}}" } })), { code: "918273" })
      assert.strictEqual(done.status, "ended", JSON.stringify(done.error_details))
      const sent = yield* templateSends(g)
      assert.deepStrictEqual((sent[0]!.envelope as { template: { components: unknown } }).template.components, [
        { type: "body", parameters: [{ type: "text", text: "918273" }] },
        { type: "button", sub_type: "otp", index: "0", parameters: [{ type: "text", text: "918273" }] }
      ])
    }).pipe(Effect.provide(Layer.fresh(Services))))
})

const hookSends = Effect.map(Effect.service(MemoryWebhookReceiver), (r) => [...r.requests])

describe("webhook node", () => {
  it.effect("makes the request once with interpolated url, headers and JSON body, and saves the JSON answer", () =>
    Effect.gen(function*() {
      const g = yield* given
      const receiver = yield* MemoryWebhookReceiver
      receiver.respondWith(() => Effect.succeed({ status: 201, body: `{"ok":true,"id":7}`, headers: { "Content-Type": "application/json" } }))
      const done = yield* run(g, line(node("hook", "webhook", {
        url: "https://hooks.example.com/orders/{{vars.order}}",
        method: "PUT",
        headers: { "X-Order": "{{vars.order}}" },
        body_template: { order: "{{vars.order}}", who: "{{context.phone_number}}", note: "n={{vars.order}}" },
        save_response_to: "answer"
      })), { order: 42 })
      assert.strictEqual(done.status, "ended", JSON.stringify(done.error_details))
      assert.deepStrictEqual(done.execution_context.vars.answer, { ok: true, id: 7 })
      const requests = yield* hookSends
      assert.strictEqual(requests.length, 1)
      const r = requests[0]!
      assert.deepStrictEqual([r.method, r.url, r.headers["x-order"], r.headers["content-type"]], [
        "PUT",
        "https://hooks.example.com/orders/42",
        "42",
        "application/json"
      ])
      assert.deepStrictEqual(JSON.parse(new TextDecoder().decode(r.body)), { order: 42, who: "+15551234567", note: "n=42" })
      const types = [...done.events].reverse().map((e) => e.event_type)
      assert.includeMembers(types, ["action_executing", "action_performed"])
      const performed = done.events.find((e) => e.event_type === "action_performed")!
      assert.deepStrictEqual(performed.payload, { action: "webhook", response_status: 201, response: { ok: true, id: 7 } })
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("sends no body with GET and saves a text answer as text", () =>
    Effect.gen(function*() {
      const g = yield* given
      const receiver = yield* MemoryWebhookReceiver
      receiver.respondWith(() => Effect.succeed({ status: 200, body: "plain words" }))
      const done = yield* run(g, line(node("hook", "webhook", {
        url: "https://hooks.example.com/ping",
        method: "GET",
        body_template: { ignored: true },
        save_response_to: "answer"
      })))
      assert.strictEqual(done.status, "ended")
      assert.strictEqual(done.execution_context.vars.answer, "plain words")
      const r = (yield* hookSends)[0]!
      assert.strictEqual(r.method, "GET")
      assert.strictEqual(r.body.byteLength, 0)
      assert.isUndefined(r.headers["content-type"])
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("fails on a non-2xx answer with its status and the first 512 characters of its body", () =>
    Effect.gen(function*() {
      const g = yield* given
      const receiver = yield* MemoryWebhookReceiver
      receiver.respondWith(() => Effect.succeed({ status: 503, body: "x".repeat(2000) }))
      const done = yield* run(g, line(node("hook", "webhook", { url: "https://hooks.example.com/down" }), node("after", "set_variable", {
        variable_name: "reached",
        variable_value: "yes"
      })))
      assert.strictEqual(done.status, "failed")
      assert.strictEqual(done.error_details?.message, `Webhook answered HTTP 503: ${"x".repeat(512)}`)
      assert.strictEqual(done.error_details?.code, "503")
      assert.strictEqual(done.error_details?.step_identifier, "hook")
      assert.isUndefined(done.execution_context.vars.reached)
      assert.strictEqual((yield* hookSends).length, 1, "never retried")
      const failed = done.events.find((e) => e.event_type === "action_failed")!
      assert.strictEqual(failed.payload["response_status"], 503)
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("gives up after 30 seconds, and refuses private addresses", () =>
    Effect.gen(function*() {
      const g = yield* given
      const receiver = yield* MemoryWebhookReceiver
      receiver.respondWith(() => Effect.as(Effect.sleep("31 seconds"), { status: 200, body: "" }))
      const workflow = yield* (yield* Workflows).create(g.principal, {
        name: "Slow",
        status: "active",
        definition: line(node("hook", "webhook", { url: "https://slow.example.com/" }))
      })
      const executions = yield* Executions
      const ack = yield* executions.start(g.principal, workflow.id, { phone_number: "+15551234567" }, { ip: null, user_agent: null })
      yield* idle.pipe(Effect.forkChild)
      yield* settle
      yield* TestClock.adjust("29 seconds")
      assert.strictEqual((yield* executions.get(g.principal, ack.id)).status, "running")
      yield* TestClock.adjust("2 seconds")
      yield* idle
      const slow = yield* executions.get(g.principal, ack.id)
      assert.strictEqual(slow.status, "failed")
      assert.deepStrictEqual([slow.error_details?.message, slow.error_details?.code], ["Webhook request failed: Timed out after 30 s", "timeout"])

      const local = yield* run(g, line(node("hook", "webhook", { url: "http://127.0.0.1:8080/admin" })), {}, "Local")
      assert.strictEqual(local.status, "failed")
      assert.strictEqual(local.error_details?.code, "private_address")
      assert.strictEqual((yield* hookSends).length, 1, "the private address was never reached")
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("fails a webhook step a crash left in flight as in doubt, without making the request again", () =>
    Effect.gen(function*() {
      const g = yield* given
      const waiting = yield* run(g, {
        nodes: [node("start", "start"), node("ask", "wait_for_response"), node("hook", "webhook", { url: "https://hooks.example.com/once" })],
        edges: [edge("start", "ask"), edge("ask", "hook")]
      })
      assert.strictEqual(waiting.status, "waiting")
      // What a host that died between recording the request and its outcome leaves behind.
      const repo = yield* ExecutionsRepo
      const stored = Option.getOrThrow(yield* repo.get(waiting.id))
      const crashed = {
        ...stored,
        status: "running" as const,
        waiting_reason: null,
        wait: null,
        resumable_execution_id: null,
        current_node: "hook",
        step_seq: stored.step_seq + 1,
        pending: { kind: "webhook" as const, key: `${stored.id}:${stored.step_seq + 1}`, node_id: "hook", started_at: stored.last_event_at },
        lease_owner: "a-host-that-died",
        lease_until: stored.last_event_at,
        state_version: stored.state_version + 1
      }
      assert.isTrue(yield* repo.update(crashed, stored.state_version))
      yield* (yield* ExecutionEngine).runSlice(waiting.id)
      const done = yield* (yield* Executions).get(g.principal, waiting.id)
      assert.strictEqual(done.status, "failed")
      assert.strictEqual(done.error_details?.code, "webhook_in_doubt")
      assert.strictEqual(done.error_details?.message, "The webhook request's outcome is unknown after a restart; it was not made again")
      assert.strictEqual((yield* hookSends).length, 0)
    }).pipe(Effect.provide(Layer.fresh(Services))))
})

describe("call node", () => {
  const create = (g: Given, name: string, definition: ReturnType<typeof line>, status: "active" | "draft" = "active") =>
    Effect.flatMap(Effect.service(Workflows), (w) => w.create(g.principal, { name, status, definition }))

  it.effect("runs the child with a copy of the vars and the same context, merges its vars back and goes on", () =>
    Effect.gen(function*() {
      const g = yield* given
      const child = yield* create(g, "Child", line(node("set", "set_variable", { variable_name: "b", variable_value: "child saw {{vars.a}}" })))
      const parent = yield* run(g, line(
        node("a", "set_variable", { variable_name: "a", variable_value: "1" }),
        node("call", "call", { workflow_id: child.id }),
        node("after", "set_variable", { variable_name: "after", variable_value: "{{vars.b}}!" })
      ), { keep: "me" })
      assert.strictEqual(parent.status, "ended", JSON.stringify(parent.error_details))
      assert.deepStrictEqual([parent.execution_context.vars.b, parent.execution_context.vars.after, parent.execution_context.vars.keep], [
        "child saw 1",
        "child saw 1!",
        "me"
      ])
      const executions = yield* Executions
      const children = yield* executions.list(g.principal, { workflow_id: child.id }, { mode: "page", page: 1, perPage: 10 })
      assert.strictEqual(children.items.length, 1)
      const c = yield* executions.get(g.principal, children.items[0]!.id)
      assert.strictEqual(c.status, "ended")
      assert.strictEqual(c.parent_execution_id, parent.id)
      assert.strictEqual(c.execution_context.system.parent_execution_id, parent.id)
      assert.strictEqual(c.execution_context.context.phone_number, "+15551234567")
      assert.strictEqual(c.execution_context.vars.keep, "me")
      const merged = parent.events.find((e) => e.event_type === "variables_merged")!
      assert.deepStrictEqual(merged.payload.source, "call")
      const executing = parent.events.find((e) => e.event_type === "action_executing")!
      assert.deepStrictEqual(executing.payload, { action: "call", request: { workflow_id: child.id, workflow_name: "Child", execution_id: c.id } })
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("deleting the called workflow ends its waiting child (workflow_deleted) and the parent goes on", () =>
    Effect.gen(function*() {
      const g = yield* given
      const workflows = yield* Workflows
      const executions = yield* Executions
      const child = yield* create(g, "Ask later", line(node("ask", "wait_for_response", { save_response_to: "answer" })))
      const parent = yield* run(g, line(node("call", "call", { workflow_id: child.id }), node("after", "set_variable", {
        variable_name: "after",
        variable_value: "went on"
      })), {}, "Caller")
      assert.strictEqual(parent.status, "waiting")
      const children = yield* executions.list(g.principal, { workflow_id: child.id }, { mode: "page", page: 1, perPage: 10 })
      assert.strictEqual(children.items[0]!.status, "waiting")
      // Called by an active workflow: refused, nothing ends.
      const refused = yield* Effect.flip(executions.deleteWorkflow(g.principal, child.id))
      assert.strictEqual(refused._tag, "Unprocessable")
      yield* workflows.update(g.principal, parent.workflow.id, { status: "draft" })
      yield* workflows.update(g.principal, child.id, { status: "draft" })
      yield* executions.deleteWorkflow(g.principal, child.id)
      yield* idle
      const after = yield* executions.get(g.principal, parent.id)
      assert.strictEqual(after.status, "ended", JSON.stringify(after.error_details))
      assert.strictEqual(after.execution_context.vars.after, "went on")
      assert.isTrue(Option.isNone(yield* (yield* ExecutionsRepo).get(children.items[0]!.id)))
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("waits while the child waits, resumable through the child, and goes on when it ends", () =>
    Effect.gen(function*() {
      const g = yield* given
      const child = yield* create(g, "Ask", line(node("ask", "wait_for_response", { save_response_to: "answer" })))
      const parent = yield* run(g, line(node("call", "call", { workflow_id: child.id }), node("after", "set_variable", {
        variable_name: "got",
        variable_value: "{{vars.answer}}"
      })))
      assert.strictEqual(parent.status, "waiting")
      assert.strictEqual(parent.waiting_reason, "call")
      const childId = parent.resumable_execution_id!
      assert.notStrictEqual(childId, parent.id)
      const executions = yield* Executions
      assert.strictEqual((yield* executions.get(g.principal, childId)).status, "waiting")
      // Resuming the parent resumes the child it waits on.
      const resumed = yield* executions.resume(g.principal, parent.id, { message: { kind: "text", data: "blue" } })
      assert.strictEqual(resumed.id, childId)
      assert.strictEqual(resumed.requested_execution_id, parent.id)
      yield* idle
      const done = yield* executions.get(g.principal, parent.id)
      assert.strictEqual(done.status, "ended", JSON.stringify(done.error_details))
      assert.strictEqual(done.execution_context.vars.got, "blue")
      assert.isNull(done.resumable_execution_id)
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("ends the child when its parent is ended", () =>
    Effect.gen(function*() {
      const g = yield* given
      const child = yield* create(g, "Ask", line(node("ask", "wait_for_response")))
      const parent = yield* run(g, line(node("call", "call", { workflow_id: child.id })))
      const childId = parent.resumable_execution_id!
      const executions = yield* Executions
      yield* executions.move(g.principal, parent.id, "ended")
      yield* idle
      assert.strictEqual((yield* executions.get(g.principal, parent.id)).status, "ended")
      const c = yield* executions.get(g.principal, childId)
      assert.strictEqual(c.status, "ended")
      assert.deepStrictEqual(c.events.find((e) => e.event_type === "execution_ended")?.payload, { reason: "manual" })
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("stores a failed child's error in save_error_to and goes on, or fails without it", () =>
    Effect.gen(function*() {
      const g = yield* given
      const broken = yield* create(g, "Broken", line(node("n", "set_variable", { variable_name: "n", variable_value: "abc", value_type: "number" })))
      const saved = yield* run(g, line(node("call", "call", { workflow_id: broken.id, save_error_to: "err" }), node("after", "set_variable", {
        variable_name: "went_on",
        variable_value: "yes"
      })), {}, "Saves")
      assert.strictEqual(saved.status, "ended")
      const err = saved.execution_context.vars.err as { message: string; execution_id: string }
      assert.strictEqual(err.message, `Cannot convert "abc" to number`)
      assert.strictEqual(saved.execution_context.vars.went_on, "yes")
      assert.strictEqual((yield* (yield* Executions).get(g.principal, err.execution_id)).status, "failed")

      const failed = yield* run(g, line(node("call", "call", { workflow_id: broken.id })), {}, "Fails")
      assert.strictEqual(failed.status, "failed")
      assert.strictEqual(failed.error_details?.message, `Called workflow failed: Cannot convert "abc" to number`)
      assert.strictEqual(failed.error_details?.step_identifier, "call")
      assert.strictEqual(failed.error_details?.code, "call_failed")
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("hands the parent off with its child", () =>
    Effect.gen(function*() {
      const g = yield* given
      const child = yield* create(g, "Human", line(node("h", "handoff", { reason: "needs a person" })))
      const parent = yield* run(g, line(node("call", "call", { workflow_id: child.id })))
      assert.strictEqual(parent.status, "handoff")
      assert.isNotNull(parent.resumable_execution_id)
      const handoff = parent.events.find((e) => e.event_type === "execution_handoff")!
      assert.deepStrictEqual(handoff.payload, { reason: "needs a person", source: "action_step" })
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("refuses a sixth level of nesting with Call depth exceeded, and an inactive target", () =>
    Effect.gen(function*() {
      const g = yield* given
      const workflows = yield* Workflows
      // A and B call each other: every level starts one more.
      const a = yield* create(g, "A", line(node("noop", "set_variable", { variable_name: "x", variable_value: "1" })), "draft")
      const b = yield* create(g, "B", line(node("call", "call", { workflow_id: a.id })))
      yield* workflows.update(g.principal, a.id, { status: "active", definition: line(node("call", "call", { workflow_id: b.id })) })
      const executions = yield* Executions
      const ack = yield* executions.start(g.principal, a.id, { phone_number: "+15551234567" }, { ip: null, user_agent: null })
      yield* idle
      const top = yield* executions.get(g.principal, ack.id)
      assert.strictEqual(top.status, "failed")
      const all = [
        ...(yield* executions.list(g.principal, { workflow_id: a.id }, { mode: "page", page: 1, perPage: 20 })).items,
        ...(yield* executions.list(g.principal, { workflow_id: b.id }, { mode: "page", page: 1, perPage: 20 })).items
      ]
      assert.strictEqual(all.length, 6, "depths 0 to 5")
      const deepest = yield* Effect.forEach(all, (e) => executions.get(g.principal, e.id)).pipe(
        Effect.map((es) => es.find((e) => e.error_details?.code === "call_depth_exceeded"))
      )
      assert.strictEqual(deepest?.error_details?.message, "Call depth exceeded")
      assert.match(top.error_details?.message ?? "", /Call depth exceeded$/)

      yield* workflows.update(g.principal, b.id, { status: "draft" })
      const inactive = yield* run(g, line(node("call", "call", { workflow_id: b.id })), {}, "Calls a draft")
      assert.strictEqual(inactive.status, "failed")
      assert.strictEqual(inactive.error_details?.message, "Called workflow B is not active")
    }).pipe(Effect.provide(Layer.fresh(Services))))
})

describe("emit_event node", () => {
  it.effect("records the event with its interpolated properties (one-placeholder values keep their type) and goes on", () =>
    Effect.gen(function*() {
      const g = yield* given
      const done = yield* run(g, line(node("emit", "emit_event", {
        event_name: "order.shipped",
        properties: { order: "{{vars.order}}", vip: "{{vars.vip}}", note: "order {{vars.order}}", missing: "{{vars.nothing}}" },
        occurred_at: "  "
      }), node("after", "set_variable", { variable_name: "after", variable_value: "yes" })), { order: 42, vip: true })
      assert.strictEqual(done.status, "ended", JSON.stringify(done.error_details))
      const recorded = yield* (yield* Events).list(g.principal, { name: "order.shipped" }, { mode: "cursor", limit: 10 })
      assert.strictEqual(recorded.items.length, 1)
      assert.deepStrictEqual(recorded.items[0]!.properties, { order: 42, vip: true, note: "order 42", missing: null })
      const performed = done.events.find((e) => e.event_type === "action_performed")!
      assert.deepStrictEqual(performed.payload, { action: "emit_event", event_id: recorded.items[0]!.id, chain_depth: 0 })
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("fails the run when the events capability refuses the event (limits)", () =>
    Effect.gen(function*() {
      const g = yield* given
      // The definition check caught what it could see when the workflow was saved; interpolation can still break limits.
      const tooLong = yield* run(g, line(node("emit", "emit_event", { event_name: "too.long", properties: { s: "{{vars.long}}" } })), {
        long: "x".repeat(2000)
      })
      assert.strictEqual(tooLong.status, "failed")
      assert.strictEqual(tooLong.error_details?.message, "property s exceeds 1 KB")
      assert.isDefined(tooLong.events.find((e) => e.event_type === "action_failed"))
      const nested = yield* run(g, line(node("emit", "emit_event", { event_name: "nested", properties: { o: "{{vars.obj}}" } })), {
        obj: { a: 1 }
      }, "Nested")
      assert.strictEqual(nested.status, "failed")
      assert.strictEqual(nested.error_details?.message, "property o must be a string, number, boolean or null")
      const future = yield* run(g, line(node("emit", "emit_event", { event_name: "later", occurred_at: "2999-01-01T00:00:00Z" })), {}, "Future")
      assert.strictEqual(future.error_details?.message, "occurred_at cannot be more than 5 minutes in the future")
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("logs a plan refusal (402) and goes on", () =>
    Effect.gen(function*() {
      const g = yield* given
      yield* (yield* EventPlans).set(g.principal.project.id, { events_enabled: false })
      const done = yield* run(g, line(node("emit", "emit_event", { event_name: "not.in.plan" }), node("after", "set_variable", {
        variable_name: "after",
        variable_value: "yes"
      })))
      assert.strictEqual(done.status, "ended")
      assert.strictEqual(done.execution_context.vars.after, "yes")
      const failed = done.events.find((e) => e.event_type === "action_failed")!
      assert.strictEqual((failed.payload as { action: string }).action, "emit_event")
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("gives the event the chain depth of the run that emits it", () =>
    Effect.gen(function*() {
      const g = yield* given
      const workflow = yield* (yield* Workflows).create(g.principal, {
        name: "Chained",
        status: "active",
        definition: line(node("emit", "emit_event", { event_name: "hop" }))
      })
      // A run three event hops down a chain (as an event trigger starts it).
      const launched = yield* (yield* Launcher).launch({
        workflow,
        triggerType: "project_event",
        observer: false,
        config: null,
        contact: null,
        conversationId: null,
        phone: null,
        recipient: null,
        vars: {},
        context: {},
        initialData: undefined,
        metadata: {},
        system: { event_chain_depth: 3 },
        dedupeKey: null
      })
      yield* idle
      const done = yield* (yield* Executions).get(g.principal, Option.getOrThrow(launched).id)
      assert.strictEqual(done.status, "ended", JSON.stringify(done.error_details))
      assert.strictEqual(done.events.find((e) => e.event_type === "action_performed")?.payload["chain_depth"], 3)
      // What the depth does to triggers is the routing suite's (executions.routing.test.ts).
    }).pipe(Effect.provide(Layer.fresh(Services))))
})

describe("project secrets (${ENV:NAME})", () => {
  it.effect("resolves secrets in webhook url and headers, masks them in the log, and keeps them encrypted at rest", () =>
    Effect.gen(function*() {
      const g = yield* given
      const secrets = yield* ProjectSecrets
      const token = "tok-3f9a1c-very-secret"
      yield* secrets.set(g.principal.project.id, "API_TOKEN", token)
      const receiver = yield* MemoryWebhookReceiver
      receiver.respondWith((r) => Effect.succeed({ status: 200, body: JSON.stringify({ echo: r.headers["authorization"] }) }))
      const done = yield* run(g, line(node("hook", "webhook", {
        url: "https://hooks.example.com/x?key=${ENV:API_TOKEN}",
        headers: { Authorization: "Bearer ${ENV:API_TOKEN}" },
        body_template: { t: "${ENV:API_TOKEN}" }
      })))
      assert.strictEqual(done.status, "ended", JSON.stringify(done.error_details))
      const r = (yield* hookSends)[0]!
      assert.strictEqual(r.url, `https://hooks.example.com/x?key=${token}`)
      assert.strictEqual(r.headers["authorization"], `Bearer ${token}`)
      assert.notInclude(JSON.stringify(done.events), token, "the log never holds the value, even echoed back")
      const executing = done.events.find((e) => e.event_type === "action_executing")!
      assert.deepStrictEqual((executing.payload["request"] as { headers: unknown }).headers, { Authorization: "Bearer [secret]", "Content-Type": "application/json" })
      const stored = yield* (yield* ProjectSecretsRepo).list(g.principal.project.id)
      assert.notInclude(stored[0]!.ciphertext, token)
      assert.deepStrictEqual((yield* secrets.list(g.principal.project.id)).map((s) => s.name), ["API_TOKEN"])
    }).pipe(Effect.provide(Layer.fresh(Services))))

  it.effect("masks a secret in a failure message, and fails on an unknown name", () =>
    Effect.gen(function*() {
      const g = yield* given
      yield* (yield* ProjectSecrets).set(g.principal.project.id, "HOST", "internal-secret-host")
      const receiver = yield* MemoryWebhookReceiver
      receiver.respondWith(() => Effect.succeed({ status: 500, body: "no" }))
      const failed = yield* run(g, line(node("hook", "webhook", { url: "https://${ENV:HOST}.example.com/" })))
      assert.strictEqual(failed.status, "failed")
      assert.notInclude(JSON.stringify(failed), "internal-secret-host")
      const unknown = yield* run(g, line(node("v", "set_variable", { variable_name: "x", variable_value: "${ENV:NOPE}" })), {}, "Unknown")
      assert.strictEqual(unknown.status, "failed")
      assert.strictEqual(unknown.error_details?.message, "Unknown environment variable NOPE")
      const refused = yield* (yield* ProjectSecrets).set(g.principal.project.id, "lower", "x").pipe(Effect.flip)
      assert.strictEqual(refused.error, "Secret names are 1 to 128 of A-Z, 0-9 and _")
    }).pipe(Effect.provide(Layer.fresh(Services))))
})

describe("AI fields", () => {
  it.effect("fail the step when the model is not declared on this host, before any request", () =>
    Effect.gen(function*() {
      const g = yield* given
      // This host cannot save such a definition (the model is not declared here); the engine still refuses one it is
      // given (a revision written by a host that had the model).
      const stored = yield* (yield* Workflows).create(g.principal, { name: "Ai", status: "draft", definition: line() })
      const workflow = {
        ...stored,
        definition: line(node("hook", "webhook", {
          url: "https://hooks.example.com/",
          body_template: { note: { $ai: {} } },
          provider_model_name: "some-model",
          ai_field_config: { "body_template.note": { mode: "prompt", prompt: "Summarise" } }
        })) as unknown as typeof stored.definition
      }
      const launched = yield* (yield* Launcher).launch({
        workflow,
        triggerType: "api_call",
        observer: false,
        config: g.config,
        contact: null,
        conversationId: null,
        phone: "15551234567",
        recipient: null,
        vars: {},
        context: {},
        initialData: undefined,
        metadata: {},
        system: {},
        dedupeKey: null
      })
      yield* idle
      const done = yield* (yield* Executions).get(g.principal, Option.getOrThrow(launched).id)
      assert.strictEqual(done.status, "failed")
      assert.deepStrictEqual([done.error_details?.message, done.error_details?.code], [
        "Provider model some-model not found",
        "model_not_found"
      ])
      assert.strictEqual((yield* hookSends).length, 0)
    }).pipe(Effect.provide(Layer.fresh(Services))))
})
