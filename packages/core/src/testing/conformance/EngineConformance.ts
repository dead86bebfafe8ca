/**
 * The execution engine end to end over a set of ports (memory, Postgres):
 * runs, waits, resumes, and what a host finds after another died — sends in
 * doubt, stale timers, fenced hosts, runs whose lease ended. Written once,
 * run by every storage adapter.
 *
 * Tests run on the live clock with short engine timings (`ExecutionsSettings`):
 * the Postgres adapters keep time in the database too. Timers are fired by
 * calling the engine as the timer job would (`fire`), so no test waits for a
 * wait's real timeout; the sweep is called directly, its beat set long.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Layer, Option } from "effect"
import { ExecutionEngine, ExecutionsSettings } from "../../executions/Engine.ts"
import type { ExecutionRecord } from "../../executions/Execution.ts"
import { Executions } from "../../executions/Executions.ts"
import { layerExecutionsWorkers, sweep } from "../../executions/ExecutionsJobs.ts"
import { Messaging } from "../../messaging/Messaging.ts"
import { layerMessagingWorkers } from "../../messaging/MessagingJobs.ts"
import { Outbound } from "../../messaging/Outbound.ts"
import { MessageConfigs } from "../../messaging/numbers/MessageConfigs.ts"
import { UpstreamSettings } from "../../messaging/Upstream.ts"
import * as SimulatedUpstream from "../../simulators/Upstream.ts"
import * as Parley from "../../Parley.ts"
import { ExecutionsRepo } from "../../executions/ExecutionsRepo.ts"
import { type Principal, Projects } from "../../projects/Projects.ts"
import { Ids } from "../../shared/Ids.ts"
import { Workflows } from "../../workflows/Workflows.ts"
import { WebhookSettings } from "../../shared/OutboundSettings.ts"
import { layerMemoryFunctionRuntime } from "../../functions/MemoryFunctionRuntime.ts"
import { layerMemoryWebhookHttp } from "../../webhooks/MemoryWebhooks.ts"

const LEASE_MS = 300
const DOUBT_GRACE_MS = 400
const CONTACT = "15551234567"

const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({
  id,
  type: "flow-node",
  position: { x: 0, y: 0 },
  data: { node_type, config }
})
const edge = (source: string, target: string, label = "next") => ({ id: `${source}-${target}`, source, target, label })

/**
 * Registers the suite. `ports`: storage, job queue, ids and the simulator's
 * store of one adapter (built afresh for every test).
 */
export const engineConformance = <E>(name: string, ports: Layer.Layer<any, E>): void => {
  const services = Layer.mergeAll(layerExecutionsWorkers, layerMessagingWorkers).pipe(
    Layer.provideMerge(Parley.layerExecutionServices),
    Layer.provideMerge(Parley.layerFunctionServices),
    Layer.provideMerge(Parley.layerServices),
    Layer.provideMerge(SimulatedUpstream.layerSimulatorConfig),
    Layer.provideMerge(layerMemoryFunctionRuntime()),
    Layer.provideMerge(Layer.mergeAll(layerMemoryWebhookHttp, WebhookSettings.layer({ allowPrivateUrls: false }))),
    Layer.provideMerge(ports),
    // Merged: the tests' own calls (`sweep`) read the same timings.
    Layer.provideMerge(Layer.succeed(ExecutionsSettings, {
      leaseMs: LEASE_MS,
      doubtGraceMs: DOUBT_GRACE_MS,
      // Once at start, then not again within a test: the tests sweep when they mean to.
      sweepIntervalMs: 3_600_000,
      crashProbability: 0
    }))
  )

  const given = Effect.gen(function*() {
    const projects = yield* Projects
    const project = yield* projects.create("Acme")
    const { secret } = yield* projects.createKey(project.id, "tests")
    const principal = yield* projects.authenticate(secret)
    const config = Option.getOrThrow(yield* (yield* MessageConfigs).bootstrap(project.id))
    const simulator = Option.getOrThrow((yield* UpstreamSettings).simulator)
    // The contact writes in: the 24-hour window is open for free-form sends.
    yield* simulator.inbound(config.phone_number_id, { from: CONTACT, message: { type: "text", text: { body: "hello" } } })
    const texts = Effect.map(simulator.outbox(config.phone_number_id), (sent) =>
      sent.filter((m) => m.type === "text").map((m) => (m.envelope as { text: { body: string } }).text.body))
    return { principal, config, texts }
  })

  const record = (id: string) => Effect.flatMap(ExecutionsRepo.use((repo) => repo.get(id)), (found) => Effect.succeed(Option.getOrThrow(found)))

  /** The record once `ok` holds (the engine works in the background); fails after 10 s. */
  const eventually = (id: string, ok: (e: ExecutionRecord) => boolean, what: string) =>
    Effect.gen(function*() {
      for (let i = 0; i < 500; i++) {
        const e = yield* record(id)
        if (ok(e)) return e
        yield* Effect.sleep("20 millis")
      }
      return yield* Effect.die(new Error(`still waiting for: ${what}`))
    })

  const start = (workflowId: string, principal: Principal, variables: Record<string, unknown> = {}, phone = CONTACT) =>
    Effect.gen(function*() {
      return yield* (yield* Executions).start(principal, workflowId, { phone_number: `+${phone}`, variables }, { ip: null, user_agent: null })
    })

  const create = (principal: Principal, definition: Record<string, unknown>) =>
    Effect.gen(function*() {
      return yield* (yield* Workflows).create(principal, { name: "W", status: "active", definition })
    })

  const waitingAt = (nodeId: string) => (e: ExecutionRecord) => e.status === "waiting" && e.current_node === nodeId

  /** The state a host leaves when it dies mid-slice, at `nodeId`, holding the lease (or not) until `leaseUntil`. */
  const crashedAt = Effect.fnUntraced(function*(e: ExecutionRecord, nodeId: string, lease: { owner: string; until: number } | null, patch: Partial<ExecutionRecord> = {}) {
    const crashed: ExecutionRecord = {
      ...e,
      status: "running",
      waiting_reason: null,
      wait: null,
      resumable_execution_id: null,
      current_node: nodeId,
      lease_owner: lease?.owner ?? null,
      lease_until: lease === null ? null : new Date(lease.until).toISOString(),
      state_version: e.state_version + 1,
      ...patch
    }
    assert.isTrue(yield* ExecutionsRepo.use((repo) => repo.update(crashed, e.state_version)), "the crash state is written")
    return crashed
  })

  /** A pending send of "Hi" at node `hi`, as the checkpoint before the send writes it. */
  const pendingHi = Effect.fnUntraced(function*(e: ExecutionRecord, configId: string, messageId: string) {
    const now = yield* Clock.currentTimeMillis
    return {
      kind: "send" as const,
      key: `${e.id}:${e.step_seq}`,
      node_id: "hi",
      message_id: messageId,
      msg_config_id: configId,
      to: CONTACT,
      envelope: {
        messaging_product: "whatsapp",
        recipient_type: "individual",
        to: CONTACT,
        type: "text",
        text: { body: "Hi" },
        biz_opaque_callback_data: `${e.id}:${e.step_seq}`
      },
      started_at: new Date(now).toISOString()
    }
  })

  /** start → ask0 (waits for the API) → `middle` → ask: a run can be put at `middle` as a crash would leave it. */
  const twoWaits = (middle: ReturnType<typeof node>) => ({
    nodes: [
      node("start", "start"),
      node("ask0", "wait_for_response", { save_response_to: "first" }),
      middle,
      node("ask", "wait_for_response", { save_response_to: "answer" })
    ],
    edges: [edge("start", "ask0"), edge("ask0", middle.id), edge(middle.id, "ask")]
  })
  // A run can be put at `hi` with a send pending.
  const sender = twoWaits(node("hi", "send_text", { message: "Hi" }))
  const greeter = twoWaits(node("greet", "set_variable", { variable_name: "greeting", variable_value: "hello" }))

  const test = (title: string, body: Effect.Effect<void, unknown, any>) =>
    it.live(title, () => body.pipe(Effect.provide(Layer.fresh(services)), Effect.orDie) as Effect.Effect<void>, 30_000)

  describe(name, () => {
    test("runs start → set_variable → wait → set_variable when the wait's timer fires, and logs every step", Effect.gen(function*() {
      const { principal } = yield* given
      const workflow = yield* create(principal, {
        nodes: [
          node("start", "start"),
          node("greet", "set_variable", { variable_name: "greeting", variable_value: "Hi {{vars.name}}" }),
          node("ask", "wait_for_response", { has_timeout: true, timeout_seconds: 60, save_response_to: "answer" }),
          node("after", "set_variable", { variable_name: "n", variable_value: "42", value_type: "number" })
        ],
        edges: [edge("start", "greet"), edge("greet", "ask"), edge("ask", "after")]
      })
      const ack = yield* start(workflow.id, principal, { name: "Ada" })
      const waiting = yield* eventually(ack.id, waitingAt("ask"), "the wait")
      assert.strictEqual(waiting.execution_context.vars.greeting, "Hi Ada")
      assert.strictEqual(waiting.lease_owner, null, "a waiting run holds no lease")
      assert.isNotNull(waiting.wait?.due_at)
      // What the timer job does when the wait is due.
      yield* (yield* ExecutionEngine).fire({ id: ack.id, seq: waiting.wait!.seq })
      const ended = yield* eventually(ack.id, (e) => e.status === "ended", "the end")
      assert.strictEqual(ended.execution_context.vars.n, 42)
      assert.strictEqual((ended.execution_context.system.last_resume as { reason: string }).reason, "timeout")
      const detail = yield* (yield* Executions).get(principal, ack.id)
      assert.includeMembers(detail.events.map((e) => e.event_type), ["execution_started", "step_entered", "variables_set", "wait_timeout", "execution_resumed", "execution_ended"])
    }))

    test("sends the greeting once, waits for the reply and is resumed by the API", Effect.gen(function*() {
      const { principal, texts } = yield* given
      const workflow = yield* create(principal, {
        nodes: [node("start", "start"), node("hi", "send_text", { message: "Hi {{vars.name}}" }), node("ask", "wait_for_response", { save_response_to: "answer" })],
        edges: [edge("start", "hi"), edge("hi", "ask")]
      })
      const ack = yield* start(workflow.id, principal, { name: "Ada" })
      const waiting = yield* eventually(ack.id, waitingAt("ask"), "the wait")
      assert.isNotNull(waiting.msg_conversation_id, "the send links the run to the conversation")
      assert.deepStrictEqual(yield* texts, ["Hi Ada"])
      yield* (yield* Executions).resume(principal, ack.id, { message: { kind: "text", data: "Fine" } })
      const ended = yield* eventually(ack.id, (e) => e.status === "ended", "the end")
      assert.strictEqual(ended.execution_context.vars.answer, "Fine")
      assert.deepStrictEqual(yield* texts, ["Hi Ada"])
    }))

    test("a timer that fires after its wait moved on does nothing", Effect.gen(function*() {
      const { principal } = yield* given
      const workflow = yield* create(principal, {
        nodes: [
          node("start", "start"),
          node("ask1", "wait_for_response", { has_timeout: true, timeout_seconds: 60, save_response_to: "one" }),
          node("ask2", "wait_for_response", { has_timeout: true, timeout_seconds: 60, save_response_to: "two" })
        ],
        edges: [edge("start", "ask1"), edge("ask1", "ask2")]
      })
      const ack = yield* start(workflow.id, principal)
      const first = yield* eventually(ack.id, waitingAt("ask1"), "the first wait")
      yield* (yield* Executions).resume(principal, ack.id, { message: { kind: "text", data: "x" } })
      const second = yield* eventually(ack.id, waitingAt("ask2"), "the second wait")
      assert.notStrictEqual(second.wait!.seq, first.wait!.seq)
      yield* (yield* ExecutionEngine).fire({ id: ack.id, seq: first.wait!.seq })
      assert.deepStrictEqual(yield* record(ack.id), second)
    }))

    test("a host fenced out by another's live lease cannot advance the run; once the lease ended it can", Effect.gen(function*() {
      const { principal } = yield* given
      const workflow = yield* create(principal, greeter)
      const ack = yield* start(workflow.id, principal)
      const parked = yield* eventually(ack.id, waitingAt("ask0"), "the first wait")
      const now = yield* Clock.currentTimeMillis
      const held = yield* crashedAt(parked, "greet", { owner: "another-host", until: now + 60_000 })
      const engine = yield* ExecutionEngine
      yield* engine.runSlice(ack.id)
      assert.deepStrictEqual(yield* record(ack.id), held, "the other host's lease fences this one out")
      // A checkpoint computed from an older version loses its compare-and-set.
      assert.isFalse(yield* engine.write(parked, { record: { ...parked, state_version: parked.state_version + 1 }, events: [] }))
      const lapsed = { ...held, lease_until: new Date(now - 1).toISOString(), state_version: held.state_version + 1 }
      assert.isTrue(yield* ExecutionsRepo.use((repo) => repo.update(lapsed, held.state_version)))
      yield* engine.runSlice(ack.id)
      const moved = yield* record(ack.id)
      assert.isTrue(waitingAt("ask")(moved))
      assert.strictEqual(moved.execution_context.vars.greeting, "hello")
    }))

    test("the sweep takes over a run whose host died once its lease ended, and one that was never leased", Effect.gen(function*() {
      const { principal } = yield* given
      const workflow = yield* create(principal, greeter)
      const dead = yield* start(workflow.id, principal)
      // Another contact: a second start for the same one would supersede the first.
      const orphan = yield* start(workflow.id, principal, {}, "15557654321")
      const now = yield* Clock.currentTimeMillis
      const held = yield* crashedAt(yield* eventually(dead.id, waitingAt("ask0"), "the first wait"), "greet", { owner: "dead-host", until: now + LEASE_MS })
      // Never leased (its host died between the commit and the slice): found once quiet for a lease's length.
      yield* crashedAt(yield* eventually(orphan.id, waitingAt("ask0"), "the first wait"), "greet", null, {
        last_event_at: new Date(now - 2 * LEASE_MS).toISOString()
      })
      yield* sweep
      assert.deepStrictEqual(yield* record(dead.id), held, "a live lease is left alone")
      assert.isTrue(waitingAt("ask")(yield* record(orphan.id)), "the never-leased run is recovered")
      yield* Effect.sleep(LEASE_MS + 50)
      yield* sweep
      const recovered = yield* record(dead.id)
      assert.isTrue(waitingAt("ask")(recovered), "the run whose lease ended is recovered")
      assert.strictEqual(recovered.execution_context.vars.greeting, "hello")
      assert.strictEqual(yield* sweep, 0, "nothing left to recover")
    }))

    test("a send recorded but unanswered before a crash is not sent again, and fails send_in_doubt after the grace", Effect.gen(function*() {
      const { config, principal, texts } = yield* given
      const workflow = yield* create(principal, sender)
      const ack = yield* start(workflow.id, principal)
      const parked = yield* eventually(ack.id, waitingAt("ask0"), "the first wait")
      const messageId = yield* (yield* Ids).uuid
      const pending = yield* pendingHi(parked, config.id, messageId)
      // Recorded before it went out; whether the network took it, the crash lost.
      yield* (yield* Messaging).recordOutbound(config, { envelope: pending.envelope, origin: "workflow", id: messageId })
      yield* crashedAt(parked, "hi", null, { pending })
      const engine = yield* ExecutionEngine
      yield* engine.runSlice(ack.id)
      // Parked on the doubt's timer, the lease given back.
      const doubt = yield* eventually(ack.id, (e) => e.wait?.kind === "doubt" && e.lease_owner === null, "the doubt")
      assert.strictEqual(doubt.status, "running")
      assert.deepStrictEqual(yield* texts, [], "not sent again")
      // The doubt's timer, early: still in doubt.
      yield* engine.fire({ id: ack.id, seq: doubt.wait!.seq })
      assert.strictEqual((yield* record(ack.id)).status, "running")
      yield* Effect.sleep(DOUBT_GRACE_MS + 50)
      yield* engine.fire({ id: ack.id, seq: doubt.wait!.seq })
      const failed = yield* record(ack.id)
      assert.strictEqual(failed.status, "failed")
      assert.strictEqual(failed.error_details?.code, "send_in_doubt")
      assert.strictEqual(failed.error_details?.step_identifier, "hi")
      assert.deepStrictEqual(yield* texts, [], "never sent")
    }))

    test("a send in doubt that the network's word settles is performed, not sent again", Effect.gen(function*() {
      const { config, principal, texts } = yield* given
      const workflow = yield* create(principal, sender)
      const ack = yield* start(workflow.id, principal)
      const parked = yield* eventually(ack.id, waitingAt("ask0"), "the first wait")
      const messageId = yield* (yield* Ids).uuid
      const pending = yield* pendingHi(parked, config.id, messageId)
      const messaging = yield* Messaging
      const { message } = yield* messaging.recordOutbound(config, { envelope: pending.envelope, origin: "workflow", id: messageId })
      yield* crashedAt(parked, "hi", null, { pending })
      const engine = yield* ExecutionEngine
      yield* engine.runSlice(ack.id)
      const doubt = yield* eventually(ack.id, (e) => e.wait?.kind === "doubt" && e.lease_owner === null, "the doubt")
      // The network's answer arrives (its id, as a status report names it) before the grace ends.
      yield* messaging.assignNetworkId(config, message, "wamid.settled")
      yield* Effect.sleep(DOUBT_GRACE_MS + 50)
      yield* engine.fire({ id: ack.id, seq: doubt.wait!.seq })
      const settled = yield* eventually(ack.id, waitingAt("ask"), "the next wait")
      assert.isNull(settled.pending)
      const detail = yield* (yield* Executions).get(principal, ack.id)
      const performed = detail.events.find((e) => e.event_type === "action_performed")
      assert.strictEqual(performed?.payload["message_id"], "wamid.settled")
      assert.deepStrictEqual(yield* texts, [], "the engine did not send it")
    }))

    test("a send in doubt is settled by the network's status report that carries its key", Effect.gen(function*() {
      const { config, principal, texts } = yield* given
      const workflow = yield* create(principal, sender)
      const ack = yield* start(workflow.id, principal)
      const parked = yield* eventually(ack.id, waitingAt("ask0"), "the first wait")
      const messageId = yield* (yield* Ids).uuid
      const pending = yield* pendingHi(parked, config.id, messageId)
      const messaging = yield* Messaging
      yield* messaging.recordOutbound(config, { envelope: pending.envelope, origin: "workflow", id: messageId })
      // The network took it; its answer died with the host, its status report did not.
      const now = yield* Clock.currentTimeMillis
      yield* messaging.applyStatuses(config, [{
        id: "wamid.reported",
        status: "delivered",
        timestamp: String(Math.floor(now / 1000)),
        recipient_id: CONTACT,
        biz_opaque_callback_data: pending.key
      }])
      yield* crashedAt(parked, "hi", null, { pending })
      yield* (yield* ExecutionEngine).runSlice(ack.id)
      yield* eventually(ack.id, waitingAt("ask"), "the next wait")
      const detail = yield* (yield* Executions).get(principal, ack.id)
      const performed = detail.events.find((e) => e.event_type === "action_performed")
      assert.strictEqual(performed?.payload["message_id"], "wamid.reported")
      const settled = Option.getOrThrow(yield* (yield* Outbound).findRecorded(config.project_id, messageId))
      assert.strictEqual(settled.network_id, "wamid.reported")
      assert.strictEqual(settled.status, "delivered", "the report applies to the message")
      assert.deepStrictEqual(yield* texts, [], "not sent again")
    }))

    test("a pending send that was never recorded is sent once by the host that recovers it", Effect.gen(function*() {
      const { config, principal, texts } = yield* given
      const workflow = yield* create(principal, sender)
      const ack = yield* start(workflow.id, principal)
      const parked = yield* eventually(ack.id, waitingAt("ask0"), "the first wait")
      yield* crashedAt(parked, "hi", null, { pending: yield* pendingHi(parked, config.id, yield* (yield* Ids).uuid) })
      yield* (yield* ExecutionEngine).runSlice(ack.id)
      yield* eventually(ack.id, waitingAt("ask"), "the next wait")
      assert.deepStrictEqual(yield* texts, ["Hi"])
    }))
  })
}
