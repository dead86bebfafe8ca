/**
 * The functions service and the step calls of the execution engine on memory
 * ports and the memory runtime: the exact payloads of decisions 10.5.5, the
 * reading of answers, deploy conflicts, secrets at rest, and the daily
 * maintenance on the TestClock.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import {
  type CallMsgContext,
  type CallMessage,
  type FunctionCallFailed,
  type FunctionNodeAnswer,
  FunctionCalls,
  FunctionInvoker,
  type FunctionStepCall,
  FunctionInvocationLog,
  FunctionInvocationsRepo,
  Functions,
  FunctionsRepo,
  functionStepPayload,
  Ids,
  layerFunctionsWorkers,
  makeSecretCipher,
  Parley,
  type Principal,
  Projects
} from "@parley/core"
import { layerMemoryFunctionRuntime, layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { ProjectSecrets } from "../src/projects/ProjectSecrets.ts"
import { Context, Effect, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { SimulatedUpstream } from "../src/simulators/index.ts"

const Ports = Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layerSequential)

/** Services, function services and workers (deploys run), over memory ports and the memory runtime. */
const WithWorkers = Layer.mergeAll(layerFunctionsWorkers, Parley.layerFunctionServices).pipe(
  Layer.provideMerge(Parley.layerServices),
  Layer.provideMerge(SimulatedUpstream.layerSimulatorConfig),
  Layer.provideMerge(layerMemoryFunctionRuntime()),
  Layer.provideMerge(Ports)
)

const newPrincipal = (name: string) =>
  Effect.gen(function*() {
    const projects = yield* Projects
    const project = yield* projects.create(name)
    const { secret } = yield* projects.createKey(project.id, "tests")
    return yield* projects.authenticate(secret)
  })

/** Creates and deploys (through the job queue, on real time); answers the deployed function. */
const deployed = (principal: Principal, code: string, name = `fn ${crypto.randomUUID().slice(0, 8)}`) =>
  Effect.gen(function*() {
    const functions = yield* Functions
    const fn = yield* functions.create(principal, { name, code })
    yield* functions.deploy(principal, fn.id)
    while (true) {
      const current = yield* functions.get(principal, fn.id)
      if (current.status !== "deploying") {
        assert.strictEqual(current.status, "deployed", current.last_deploy_error ?? "")
        return current
      }
      yield* Effect.sleep(5)
    }
  })

/** A function answering its request body back inside `{ received }`, plus whatever `extra` holds. */
const recorder = (extra: string) => `export default {
  async fetch(request) {
    const received = await request.json()
    return Response.json({ received, ...${extra} })
  }
}`

const message = (i: number): CallMessage & { readonly secret_field: string } => ({
  id: `m${i}`,
  message_type: "text",
  content: `hello ${i}`,
  direction: i % 2 === 0 ? "inbound" : "outbound",
  status: "delivered",
  processing_status: null,
  msg_message_id: `wamid.${i}`,
  origin: null,
  phone_number: "15551234567",
  has_media: false,
  reply_option_id: null,
  reply_option_title: null,
  interactive_type: null,
  interactive_data: null,
  created_at: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString(),
  updated_at: new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString(),
  // Not part of the payload: must not be sent.
  secret_field: "internal"
})

const msgContext: CallMsgContext = {
  conversation: {
    id: "conv-1",
    phone_number: "15551234567",
    status: "active",
    last_active_at: "2026-01-01T00:30:00.000Z",
    msg_config_id: "cfg-1",
    metadata: { tag: "vip" },
    created_at: "2026-01-01T00:00:00.000Z",
    updated_at: "2026-01-01T00:30:00.000Z"
  },
  messages: Array.from({ length: 25 }, (_, i) => message(i + 1))
}

const stepCall = (projectId: string, functionId: string, withConversation: boolean): FunctionStepCall => ({
  projectId,
  functionId,
  executionContext: {
    vars: { order_id: "A-1" },
    system: { execution_id: "exe-1", trigger_type: "api_call" },
    context: { channel: "msg" },
    metadata: {}
  },
  flowEvents: Array.from({ length: 12 }, (_, i) => ({
    event_type: "step_entered",
    payload: { n: i + 1 },
    created_at: new Date(Date.UTC(2026, 0, 1, 1, i)).toISOString()
  })),
  flowInfo: { id: "wf-1", name: "Orders", step_id: "lookup" },
  msgContext: withConversation ? msgContext : undefined
})

describe("function step payloads (decisions 10.5.5)", () => {
  it("a function node or decide sends exactly these keys; msg_context only with a conversation", () => {
    const payload = functionStepPayload(stepCall("p", "f", true), ["next"])
    assert.deepStrictEqual(Object.keys(payload), ["execution_context", "available_edges", "flow_events", "flow_info", "msg_context"])
    assert.deepStrictEqual(payload.available_edges, ["next"])
    assert.deepStrictEqual(payload.flow_events.map((e) => (e.payload as { n: number }).n), [3, 4, 5, 6, 7, 8, 9, 10, 11, 12])
    assert.deepStrictEqual(payload.flow_info, { id: "wf-1", name: "Orders", step_id: "lookup" })
    assert.deepStrictEqual(Object.keys(payload.msg_context!.conversation), [
      "id",
      "phone_number",
      "status",
      "last_active_at",
      "msg_config_id",
      "metadata",
      "created_at",
      "updated_at"
    ])
    assert.strictEqual(payload.msg_context!.messages.length, 20)
    assert.strictEqual(payload.msg_context!.messages[0]!.id, "m6", "the 20 most recent, oldest first")
    assert.strictEqual(payload.msg_context!.messages[19]!.id, "m25")
    assert.deepStrictEqual(Object.keys(payload.msg_context!.messages[0]!), [
      "id",
      "message_type",
      "content",
      "direction",
      "status",
      "processing_status",
      "msg_message_id",
      "origin",
      "phone_number",
      "has_media",
      "reply_option_id",
      "reply_option_title",
      "interactive_type",
      "interactive_data",
      "created_at",
      "updated_at"
    ])
    const without = functionStepPayload(stepCall("p", "f", false), [])
    assert.deepStrictEqual(Object.keys(without), ["execution_context", "available_edges", "flow_events", "flow_info"])
    assert.deepStrictEqual(without.available_edges, [])
  })
})

layer(WithWorkers, { excludeTestServices: true })("FunctionCalls on the memory runtime", (it) => {
  it.effect("callNode: the function receives the payload; vars, events and the whole answer come back", () =>
    Effect.gen(function*() {
      const principal = yield* newPrincipal("Calls")
      const fn = yield* deployed(
        principal,
        recorder(`{ vars: { status: "shipped" }, events: [{ name: "order.checked", properties: { ok: true } }], other: 1 }`)
      )
      const calls = yield* FunctionCalls
      const answer = yield* calls.callNode({ ...stepCall(principal.project.id, fn.id, true), hasNextEdge: true })
      assert.deepStrictEqual(answer.vars, { status: "shipped" })
      assert.deepStrictEqual(answer.events, [{ name: "order.checked", properties: { ok: true } }])
      const saved = answer.saved as { received: any; other: number }
      assert.strictEqual(saved.other, 1)
      assert.deepStrictEqual(
        saved.received,
        JSON.parse(JSON.stringify(functionStepPayload(stepCall(principal.project.id, fn.id, true), ["next"]))),
        "the exact payload, byte for byte after JSON"
      )
      assert.isUndefined(saved.received.msg_context.messages[0].secret_field)

      yield* (yield* FunctionInvocationLog).flush
      const log = yield* (yield* FunctionInvocationsRepo).list(principal.project.id, fn.id, { limit: 10 })
      assert.strictEqual(log.items[0]!.id, answer.invocationId)
      assert.strictEqual(log.items[0]!.source, "workflow_node")

      const noEdge = yield* calls.callNode({ ...stepCall(principal.project.id, fn.id, false), hasNextEdge: false })
      assert.deepStrictEqual((noEdge.saved as any).received.available_edges, [])
      assert.notProperty((noEdge.saved as any).received, "msg_context")
    }))

  it.effect("callNode: a non-JSON 2xx answer is saved as text; non-2xx, bad members and failures fail the call", () =>
    Effect.gen(function*() {
      const principal = yield* newPrincipal("Node answers")
      const calls = yield* FunctionCalls
      const call = (functionId: string) => calls.callNode({ ...stepCall(principal.project.id, functionId, false), hasNextEdge: true })
      const text = yield* deployed(principal, `async function handler() { return new Response("plain answer") }`)
      assert.deepStrictEqual(
        { ...(yield* call(text.id)), invocationId: "" },
        { vars: {}, events: [], saved: "plain answer", invocationId: "" }
      )
      const array = yield* deployed(principal, `async function handler() { return Response.json([1, 2]) }`)
      assert.deepStrictEqual((yield* call(array.id)).saved, [1, 2])

      const failure = (functionId: string): Effect.Effect<FunctionCallFailed, FunctionNodeAnswer> => Effect.flip(call(functionId))
      const refused = yield* deployed(principal, `async function handler() { return new Response("nope", { status: 503 }) }`)
      const status = yield* failure(refused.id)
      assert.strictEqual(status.reason, "http_status")
      assert.strictEqual(status.status, 503)
      assert.isString(status.invocationId)
      const badVars = yield* deployed(principal, `async function handler() { return Response.json({ vars: [1] }) }`)
      assert.strictEqual((yield* failure(badVars.id)).reason, "invalid_answer")
      const badEvents = yield* deployed(principal, `async function handler() { return Response.json({ events: [{ properties: {} }] }) }`)
      assert.strictEqual((yield* failure(badEvents.id)).message, "events[0] must be an object with a name")
      const thrower = yield* deployed(principal, `async function handler() { throw new RangeError("bad") }`)
      const thrown = yield* failure(thrower.id)
      assert.deepStrictEqual([thrown.reason, thrown.message], ["failed", "RangeError: bad"])

      const draft = yield* (yield* Functions).create(principal, { name: "draft only", code: recorder("{}") })
      assert.strictEqual((yield* failure(draft.id)).reason, "not_deployed")
      assert.strictEqual((yield* failure("00000000-0000-4000-8000-0000000fffff")).reason, "not_found")
      const stranger = yield* newPrincipal("Stranger")
      assert.strictEqual(
        (yield* Effect.flip(calls.callNode({ ...stepCall(stranger.project.id, text.id, false), hasNextEdge: true }))).reason,
        "not_found",
        "another project's function does not exist for this execution"
      )
    }))

  it.effect("callDecide: next_edge must be one of the labels; it sends them as available_edges", () =>
    Effect.gen(function*() {
      const principal = yield* newPrincipal("Decide")
      const calls = yield* FunctionCalls
      const fn = yield* deployed(
        principal,
        `export default {
          async fetch(request) {
            const input = await request.json()
            const wanted = input.execution_context.vars.wanted
            if (wanted === "garbage") return new Response("not json")
            return Response.json({ next_edge: wanted, vars: { edges: input.available_edges }, events: [] })
          }
        }`
      )
      const decide = (wanted: string) =>
        calls.callDecide({
          ...stepCall(principal.project.id, fn.id, false),
          executionContext: { vars: { wanted }, system: {}, context: {}, metadata: {} },
          labels: ["Yes", "No"]
        })
      const yes = yield* decide("No")
      assert.strictEqual(yes.nextEdge, "No")
      assert.deepStrictEqual(yes.vars, { edges: ["Yes", "No"] })
      assert.deepStrictEqual(yes.events, [])
      const unknown = yield* Effect.flip(decide("Maybe"))
      assert.strictEqual(unknown.reason, "unknown_edge")
      assert.strictEqual(unknown.message, `next_edge "Maybe" is not one of ["Yes","No"]`)
      assert.strictEqual((yield* Effect.flip(decide("garbage"))).reason, "invalid_json")
      yield* (yield* FunctionInvocationLog).flush
      const log = yield* (yield* FunctionInvocationsRepo).list(principal.project.id, fn.id, { limit: 1 })
      assert.strictEqual(log.items[0]!.source, "decide_node")
    }))

  it.effect("callAgentTool: input beside the context; the answer cut to 16 KB is the result, vars merged", () =>
    Effect.gen(function*() {
      const principal = yield* newPrincipal("Tools")
      const calls = yield* FunctionCalls
      const fn = yield* deployed(
        principal,
        `export default {
          async fetch(request) {
            const body = await request.json()
            if (body.input.big) return new Response("é".repeat(20000))
            return Response.json({ keys: Object.keys(body), input: body.input, vars: { looked_up: true } })
          }
        }`
      )
      const answer = yield* calls.callAgentTool({ ...stepCall(principal.project.id, fn.id, true), input: { order: "A-1" } })
      assert.deepStrictEqual(JSON.parse(answer.result), {
        keys: ["input", "execution_context", "flow_events", "flow_info", "msg_context"],
        input: { order: "A-1" },
        vars: { looked_up: true }
      })
      assert.deepStrictEqual(answer.vars, { looked_up: true })
      const big = yield* calls.callAgentTool({ ...stepCall(principal.project.id, fn.id, false), input: { big: true } })
      assert.isAtMost(new TextEncoder().encode(big.result).byteLength, 16 * 1024)
      assert.isAtLeast(new TextEncoder().encode(big.result).byteLength, 16 * 1024 - 1)
      assert.match(big.result, / …\[cut: the answer is 40000 bytes; only the first ones are shown\]$/)
      assert.deepStrictEqual(big.vars, {})
      yield* (yield* FunctionInvocationLog).flush
      const log = yield* (yield* FunctionInvocationsRepo).list(principal.project.id, fn.id, { limit: 1 })
      assert.strictEqual(log.items[0]!.source, "agent_tool")
    }))

  it.effect("secrets are stored encrypted, bound to their function and name", () =>
    Effect.gen(function*() {
      const principal = yield* newPrincipal("Secrets at rest")
      const fn = yield* deployed(principal, `async function handler(request, env) { return new Response(env.TOKEN) }`)
      yield* (yield* Functions).saveSecret(principal, fn.id, { name: "TOKEN", value: "s3cr3t-value" })
      const [stored] = yield* (yield* FunctionsRepo).listSecrets(fn.id)
      assert.notInclude(stored!.ciphertext, "s3cr3t")
      assert.match(stored!.ciphertext, /^v1\.[0-9a-f]{12}\./)
      const answer = yield* (yield* FunctionCalls).callNode({ ...stepCall(principal.project.id, fn.id, false), hasNextEdge: true })
      assert.strictEqual(answer.saved, "s3cr3t-value")
    }))

  it.effect("inherits the project's secrets; its own secret of the same name wins", () =>
    Effect.gen(function*() {
      const principal = yield* newPrincipal("Inherited secrets")
      const fn = yield* deployed(principal, `async function handler(request, env) { return Response.json({ a: env.SHARED, b: env.MINE }) }`)
      const projectSecrets = yield* ProjectSecrets
      yield* projectSecrets.set(principal.project.id, "SHARED", "from-project")
      yield* projectSecrets.set(principal.project.id, "MINE", "project-value")
      yield* (yield* Functions).saveSecret(principal, fn.id, { name: "MINE", value: "function-value" })
      const answer = yield* (yield* FunctionCalls).callNode({ ...stepCall(principal.project.id, fn.id, false), hasNextEdge: true })
      assert.deepStrictEqual(answer.saved, { a: "from-project", b: "function-value" })
      assert.deepStrictEqual(yield* (yield* Functions).listSecrets(principal, fn.id), [
        { name: "MINE", type: "text" },
        { name: "SHARED", type: "inherited" }
      ])
    }))

  it.effect("a remembered invocation target never outlives a change: secrets, code, a disabled project, a delete", () =>
    Effect.gen(function*() {
      const principal = yield* newPrincipal("Remembered targets")
      const functions = yield* Functions
      const calls = yield* FunctionCalls
      const fn = yield* deployed(principal, `async function handler(request, env) { return new Response("one " + env.TOKEN) }`)
      const call = calls.callNode({ ...stepCall(principal.project.id, fn.id, false), hasNextEdge: true })
      yield* functions.saveSecret(principal, fn.id, { name: "TOKEN", value: "a" })
      assert.strictEqual((yield* call).saved, "one a")
      // Answered from the cache now; each change below is seen by the very next call.
      assert.strictEqual((yield* call).saved, "one a")
      yield* functions.saveSecret(principal, fn.id, { name: "TOKEN", value: "b" })
      assert.strictEqual((yield* call).saved, "one b")
      yield* functions.update(principal, fn.id, { code: `async function handler(request, env) { return new Response("two " + env.TOKEN) }` })
      yield* functions.deploy(principal, fn.id)
      while ((yield* functions.get(principal, fn.id)).status === "deploying") yield* Effect.sleep(5)
      assert.strictEqual((yield* call).saved, "two b")
      yield* functions.deleteSecret(principal, fn.id, "TOKEN")
      assert.strictEqual((yield* call).saved, "two undefined")
      // A disable comes through the projects' signal, as from another process.
      yield* (yield* Projects).setDisabled(principal.project.id, true)
      const invoker = yield* FunctionInvoker
      const refused = () => Effect.flip(invoker.invokeHttp({ functionId: fn.id, apiKey: undefined, method: "POST", url: "/", headers: {}, body: new Uint8Array() }))
      yield* Effect.sleep(50)
      assert.strictEqual((yield* refused())._tag, "NotFound")
      yield* (yield* Projects).setDisabled(principal.project.id, false)
      yield* Effect.sleep(50)
      yield* functions.delete(principal, fn.id)
      assert.strictEqual((yield* Effect.flip(call)).reason, "not_found")
    }))
})

describe("secret cipher", () => {
  it.effect("round-trips; another function, name or key cannot read a value", () =>
    Effect.gen(function*() {
      const cipher = makeSecretCipher("a key of at least sixteen characters")
      const sealed = cipher.encrypt("fn-1", "TOKEN", "value ✓")
      assert.strictEqual(yield* cipher.decrypt("fn-1", "TOKEN", sealed), "value ✓")
      assert.notStrictEqual(cipher.encrypt("fn-1", "TOKEN", "value ✓"), sealed, "a fresh IV every time")
      assert.strictEqual((yield* Effect.flip(cipher.decrypt("fn-2", "TOKEN", sealed)))._tag, "SecretDecryptError")
      assert.strictEqual((yield* Effect.flip(cipher.decrypt("fn-1", "OTHER", sealed)))._tag, "SecretDecryptError")
      const other = makeSecretCipher("another key of sixteen characters")
      assert.include((yield* Effect.flip(other.decrypt("fn-1", "TOKEN", sealed))).message, "another key")
      assert.throws(() => makeSecretCipher("short"))
    }))
})

describe("deploy conflicts (no workers: deploys stay queued)", () => {
  const NoWorkers = Parley.layerServices.pipe(
  Layer.provideMerge(SimulatedUpstream.layerSimulatorConfig),
  Layer.provideMerge(Ports))

  it.effect("a deploy while one is in progress answers 409; the function reads deploying", () =>
    Effect.gen(function*() {
      const principal = yield* newPrincipal("Busy")
      const functions = yield* Functions
      const fn = yield* functions.create(principal, { name: "busy", code: recorder("{}") })
      const started = yield* functions.deploy(principal, fn.id)
      assert.strictEqual(started.status, "deploying")
      assert.strictEqual(started.lock_version, 1)
      const again = yield* Effect.flip(functions.deploy(principal, fn.id))
      assert.strictEqual(again._tag, "Conflict")
      assert.deepStrictEqual([again.error, again.code], ["A deployment of this function is already in progress", "deploy_in_progress"])
      const page = yield* functions.listDeployments(principal, fn.id, { mode: "cursor", limit: 10 })
      assert.deepStrictEqual(page.items.map((d) => [d.status, d.version]), [["deploying", 1]])
      // A stale lock_version is refused while it deploys, as at any time.
      const stale = yield* Effect.flip(functions.update(principal, fn.id, { name: "x", lock_version: 0 }))
      assert.strictEqual(stale._tag, "Conflict")
    }).pipe(Effect.provide(NoWorkers)))
})

describe("maintenance (TestClock)", () => {
  it.effect("purges invocations older than 30 days daily, and re-runs deployments whose job was lost", () =>
    Effect.gen(function*() {
      const DAY = 24 * 60 * 60 * 1000
      const now = Date.UTC(2026, 5, 15, 12)
      yield* TestClock.setTime(now)
      const ports = yield* Layer.build(Ports)
      const services = yield* Layer.build(
        Layer.mergeAll(Parley.layerServices, layerMemoryFunctionRuntime()).pipe(
          Layer.provideMerge(SimulatedUpstream.layerSimulatorConfig),
          Layer.provideMerge(Layer.succeedContext(ports))
        )
      )
      const run = <A, E>(effect: Effect.Effect<A, E, any>) => Effect.provideContext(effect, services) as Effect.Effect<A, E>
      const principal = yield* run(newPrincipal("Maintained"))
      const fn = yield* run(Functions.use((f) => f.create(principal, { name: "m", code: recorder("{}") })))
      // Asked for without any worker running: the job is lost with this "host".
      yield* run(Functions.use((f) => f.deploy(principal, fn.id)))

      const repo = yield* run(FunctionInvocationsRepo.use(Effect.succeed))
      const at = (ms: number) => new Date(ms).toISOString()
      const record = (id: string, created: number) => ({
        id,
        project_id: principal.project.id,
        function_id: fn.id,
        status_code: 200,
        duration_ms: 1,
        request_body: null,
        response_body: null,
        error_message: null,
        source: "api" as const,
        console_logs: [],
        created_at: at(created)
      })
      yield* repo.insert(record("old", now - 31 * DAY))
      yield* repo.insert(record("aging", now - 29.75 * DAY))
      yield* repo.insert(record("fresh", now - DAY))

      // A host starts: its workers run maintenance at once.
      yield* Layer.build(layerFunctionsWorkers.pipe(Layer.provide(Layer.succeedContext(services))))
      const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 50 }))
      yield* settle
      const ids = () => Effect.map(repo.list(principal.project.id, fn.id, { limit: 10 }), (page) => page.items.map((i) => i.id))
      assert.deepStrictEqual(yield* ids(), ["fresh", "aging"])
      const redeployed = yield* run(Functions.use((f) => f.get(principal, fn.id)))
      assert.strictEqual(redeployed.status, "deployed", "the lost deployment ran")
      assert.strictEqual(redeployed.version, 1)

      // The next run is at the next 00:00 UTC.
      yield* TestClock.adjust(DAY / 2 - 1)
      yield* settle
      assert.deepStrictEqual(yield* ids(), ["fresh", "aging"], "not before midnight")
      yield* TestClock.adjust(DAY / 2 + 1)
      for (let i = 0; i < 1000 && (yield* ids()).length > 1; i++) yield* Effect.yieldNow
      assert.deepStrictEqual(yield* ids(), ["fresh"])
      assert.isTrue(Option.isSome(yield* run(FunctionsRepo.use((r) => r.findById(principal.project.id, fn.id)))))
    }).pipe(Effect.scoped))
})

describe("invocation log writer", () => {
  it.effect("batches records, and flush waits for everything recorded before it", () =>
    Effect.gen(function*() {
      const ports = yield* Layer.build(Ports)
      const services = yield* Layer.build(FunctionInvocationLog.layer.pipe(Layer.provide(Layer.succeedContext(ports))))
      const log = Context.get(services, FunctionInvocationLog)
      const projects = yield* Layer.build(Projects.layer.pipe(Layer.provide(Layer.succeedContext(ports))))
      const project = yield* Context.get(projects, Projects).create("Logged")
      const repo = Context.get(ports, FunctionInvocationsRepo)
      const record = (i: number) => ({
        id: `00000000-0000-4000-9000-${String(i).padStart(12, "0")}`,
        project_id: project.id,
        function_id: "fn-log",
        status_code: 200,
        duration_ms: 1,
        request_body: null,
        response_body: null,
        error_message: null,
        source: "api" as const,
        console_logs: [],
        created_at: new Date(Date.UTC(2026, 0, 1) + i).toISOString()
      })
      yield* Effect.forEach(Array.from({ length: 1200 }, (_, i) => record(i)), log.record, { discard: true })
      yield* log.flush
      assert.strictEqual((yield* repo.list(project.id, "fn-log", { limit: 1 })).total, 1200)
      yield* log.record(record(5000))
      yield* log.flush
      assert.strictEqual((yield* repo.list(project.id, "fn-log", { limit: 1 })).total, 1201)
      yield* log.flush
    }).pipe(Effect.scoped))
})
