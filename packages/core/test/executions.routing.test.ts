/**
 * What starts and feeds executions (decisions 10.1–10.3, 2.6) on memory
 * ports, the network simulator and the TestClock: inbound messages routed to
 * triggers and waiting runs, debounce, queued inputs, handoff, disabled
 * processing, observers, project event triggers and read mode.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Context, Effect, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { Events } from "../src/events/Events.ts"
import { ExecutionEngine } from "../src/executions/Engine.ts"
import type { ExecutionSummary } from "../src/executions/Execution.ts"
import { ConversationClosing } from "../src/executions/ConversationClosing.ts"
import { Executions } from "../src/executions/Executions.ts"
import { layerExecutionsWorkers } from "../src/executions/ExecutionsJobs.ts"
import { layerRoutingWorkers } from "../src/executions/RoutingJobs.ts"
import { Messaging } from "../src/messaging/Messaging.ts"
import { layerMessagingWorkers } from "../src/messaging/MessagingJobs.ts"
import { MessageConfigs } from "../src/messaging/numbers/MessageConfigs.ts"
import { UpstreamSettings } from "../src/messaging/Upstream.ts"
import { DomainEventSubscribers, layerOutboxRelay } from "../src/outbox/Relay.ts"
import * as Parley from "../src/Parley.ts"
import { Projects } from "../src/projects/Projects.ts"
import { Ids } from "../src/shared/Ids.ts"
import { ExecutionInputsRepo } from "../src/executions/ExecutionsRepo.ts"
import { MessagingNetwork } from "../src/network/MessagingNetwork.ts"
import { layerMemoryFunctionRuntime, layerMemoryJobQueue, layerMemoryLanguageModels, layerMemoryStorage, layerMemoryWebhookHttp } from "../src/testing/index.ts"
import { WebhookSettings } from "../src/shared/OutboundSettings.ts"
import { Triggers } from "../src/workflows/Triggers.ts"
import type { TriggerInput } from "../src/workflows/Trigger.ts"
import type { ReadMode } from "../src/workflows/Workflow.ts"
import { Workflows } from "../src/workflows/Workflows.ts"
import { Simulator, SimulatedUpstream } from "../src/simulators/index.ts"

/** The mark-reads routing asked of the network, in order. */
class MarkReads extends Context.Service<MarkReads, Array<{ readonly messageId: string; readonly typing: boolean }>>()("test/MarkReads") {}

/** The network as messaging sees it (read mode marks read through `Messaging.markRead`): the simulator, with its mark-reads written down. */
const SpiedNetwork = Layer.effect(
  MessagingNetwork,
  Effect.gen(function*() {
    const network = yield* MessagingNetwork
    const calls = yield* MarkReads
    return MessagingNetwork.of({
      ...network,
      markRead: (access, phoneNumberId, input) =>
        Effect.andThen(
          Effect.sync(() => calls.push({ messageId: input.messageId, typing: input.typingIndicator === true })),
          network.markRead(access, phoneNumberId, input)
        )
    })
  })
)

const Ports = Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layerSequential, Layer.sync(MarkReads, () => []))
const Workers = Layer.mergeAll(
  layerExecutionsWorkers,
  layerMessagingWorkers,
  layerOutboxRelay.pipe(Layer.provide(layerRoutingWorkers))
).pipe(Layer.provide(DomainEventSubscribers.layer))
const Services = Workers.pipe(
  Layer.provideMerge(Parley.layerExecutionServices),
  Layer.provideMerge(Parley.layerFunctionServices),
  Layer.provideMerge(Parley.layerServices.pipe(Layer.provide(SpiedNetwork))),
  Layer.provideMerge(SimulatedUpstream.layerSimulatorConfig),
  Layer.provideMerge(layerMemoryFunctionRuntime()),
  Layer.provideMerge(Layer.mergeAll(layerMemoryWebhookHttp, WebhookSettings.layer({ allowPrivateUrls: false }), layerMemoryLanguageModels())),
  Layer.provideMerge(Ports)
)

const settle = Effect.yieldNow.pipe(Effect.repeat({ times: 50 }))
/** Lets 300 ms pass in small steps: relay polls, group commits and jobs keep time on the clock. */
const idle = Effect.gen(function*() {
  for (let i = 0; i < 30; i++) yield* Effect.andThen(TestClock.adjust("10 millis"), settle)
  yield* (yield* ExecutionEngine).idle
})
/** Lets `seconds` pass, then settles. */
const pass = (seconds: number) => Effect.andThen(TestClock.adjust(`${seconds * 1000 - 300} millis`), idle)

const given = Effect.gen(function*() {
  const projects = yield* Projects
  const project = yield* projects.create("Acme")
  const { secret } = yield* projects.createKey(project.id, "tests")
  const principal = yield* projects.authenticate(secret)
  const config = Option.getOrThrow(yield* (yield* MessageConfigs).bootstrap(project.id))
  const simulator = yield* Simulator.running
  const say = (from: string, body: string) =>
    Effect.map(simulator.inbound(config.phone_number_id, { from, message: { type: "text", text: { body } } }), (sent) => sent.id)
  const texts = Effect.map(
    simulator.outbox(config.phone_number_id),
    (entries) => entries.filter((m) => m.type === "text").map((m) => (m.envelope as { text: { body: string } }).text.body)
  )
  return { principal, config, simulator, say, texts, project }
})

const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({
  id,
  type: "flow-node",
  position: { x: 0, y: 0 },
  data: { node_type, config }
})
const edge = (source: string, target: string, label = "next") => ({ id: `${source}-${target}`, source, target, label })
/** A chain of nodes joined by `next` edges. */
const chain = (...nodes: ReadonlyArray<ReturnType<typeof node>>) => ({
  nodes: [...nodes],
  edges: nodes.slice(1).map((n, i) => edge(nodes[i]!.id, n.id))
})

type Given = Effect.Success<typeof given>

const workflow = Effect.fnUntraced(function*(
  g: Given,
  options: {
    readonly nodes: ReturnType<typeof chain>
    readonly trigger: TriggerInput
    readonly status?: "active" | "draft"
    readonly debounce?: number | null
    readonly readMode?: ReadMode
    readonly name?: string
  }
) {
  const created = yield* (yield* Workflows).create(g.principal, {
    name: options.name ?? `Flow ${options.trigger.trigger_type}`,
    status: "draft",
    message_debounce_seconds: options.debounce === undefined ? 0 : options.debounce,
    inbound_message_read_mode: options.readMode ?? "disabled",
    definition: options.nodes
  })
  yield* (yield* Triggers).create(g.principal, created.id, options.trigger)
  if (options.status !== "draft") yield* (yield* Workflows).update(g.principal, created.id, { status: "active" })
  return created
})

const runsOf = Effect.fnUntraced(function*(g: Given, workflowId: string) {
  const slice = yield* (yield* Executions).list(g.principal, { workflow_id: workflowId }, { mode: "page", page: 1, perPage: 50 })
  return [...slice.items].reverse() as ReadonlyArray<ExecutionSummary>
})
const detail = (g: Given, id: string) => Effect.flatMap(Executions, (e) => e.get(g.principal, id))
const storedMessage = (g: Given, networkId: string) =>
  Effect.flatMap(Messaging, (m) => m.getMessage(g.project.id, g.config.phone_number_id, networkId))

const inbound = (g: Given): TriggerInput => ({ trigger_type: "inbound_message", phone_number_id: g.config.phone_number_id })

const scenario = <A, E>(name: string, body: () => Effect.Effect<A, E, Layer.Success<typeof Services>>) =>
  it.effect(name, () => Effect.provide(body(), Layer.fresh(Services)))

describe("inbound routing (memory)", () => {
  scenario("an inbound message starts the number's trigger, and the reply resumes the waiting run", () =>
    Effect.gen(function*() {
      const g = yield* given
      const flow = yield* workflow(g, {
        trigger: inbound(g),
        debounce: null,
        nodes: chain(
          node("start", "start"),
          node("hi", "send_text", { message: "You said {{vars.last_user_input}}" }),
          node("ask", "wait_for_response", { save_response_to: "answer" }),
          node("bye", "send_text", { message: "Got {{vars.answer}}" })
        )
      })
      const first = yield* g.say("15551230001", "hello")
      yield* idle
      assert.strictEqual((yield* storedMessage(g, first)).processing_status, "pending", "held for the 1 s default window")
      assert.lengthOf(yield* runsOf(g, flow.id), 0)
      yield* pass(1)
      const [run] = yield* runsOf(g, flow.id)
      assert.strictEqual(run?.trigger_type, "inbound_message")
      assert.strictEqual(run?.status, "waiting")
      assert.deepStrictEqual(yield* g.texts, ["You said hello"])
      assert.strictEqual((yield* storedMessage(g, first)).processing_status, "completed")
      const started = yield* detail(g, run!.id)
      assert.strictEqual(started.execution_context.system.trigger_type, "inbound_message")
      assert.strictEqual(started.execution_context.context.phone_number, "+15551230001")

      yield* g.say("15551230001", "fine")
      yield* pass(1)
      const ended = yield* detail(g, run!.id)
      assert.strictEqual(ended.status, "ended")
      assert.strictEqual(ended.execution_context.vars.answer, "fine")
      assert.strictEqual((ended.execution_context.system.last_resume as { reason: string }).reason, "user_input")
      assert.deepStrictEqual(yield* g.texts, ["You said hello", "Got fine"])
      assert.lengthOf(yield* runsOf(g, flow.id), 1, "the reply resumed the run, it started no other")
      const received = ended.events.filter((e) => e.event_type === "user_input_received")
      assert.deepStrictEqual(received.map((e) => e.payload["value"]).sort(), ["fine", "hello"])
    }))

  scenario("debounces a contact's messages into one input, released at the latest at the cap", () =>
    Effect.gen(function*() {
      const g = yield* given
      const flow = yield* workflow(g, {
        trigger: inbound(g),
        debounce: 5,
        nodes: chain(node("start", "start"), node("ask", "wait_for_response", { save_response_to: "answer" }))
      })
      // Every 4 s, inside the 5 s window each time: only the 15 s cap releases the batch.
      for (const body of ["one", "two", "three", "four"]) {
        yield* g.say("15551230002", body)
        yield* pass(4)
      }
      // 16 s after the first message: released at 15 s with the four messages.
      const [run] = yield* runsOf(g, flow.id)
      assert.isDefined(run, "the cap released the batch")
      const started = yield* detail(g, run!.id)
      assert.strictEqual(started.execution_context.vars.last_user_input, "one\ntwo\nthree\nfour")
      assert.strictEqual(started.status, "waiting")

      // A short batch: released one window after its newest message.
      yield* g.say("15551230002", "five")
      yield* pass(3)
      yield* g.say("15551230002", "six")
      yield* pass(3)
      assert.strictEqual((yield* detail(g, run!.id)).status, "waiting", "six restarted the window")
      yield* pass(3)
      const ended = yield* detail(g, run!.id)
      assert.strictEqual(ended.status, "ended")
      assert.strictEqual(ended.execution_context.vars.answer, "five\nsix")
    }))

  scenario("a running execution gets the message queued and takes it at its next wait", () =>
    Effect.gen(function*() {
      const g = yield* given
      const flow = yield* workflow(g, {
        trigger: inbound(g),
        nodes: chain(
          node("start", "start"),
          node("think", "send_text", { message: "Thinking", delay_seconds: 10 }),
          node("ask", "wait_for_response", { save_response_to: "answer" }),
          node("bye", "send_text", { message: "Got {{vars.answer}}" })
        )
      })
      yield* g.say("15551230003", "go")
      yield* idle
      const [run] = yield* runsOf(g, flow.id)
      assert.strictEqual(run?.status, "running", "parked on the send's delay")
      const early = yield* g.say("15551230003", "early")
      yield* idle
      assert.strictEqual((yield* storedMessage(g, early)).processing_status, "completed")
      assert.lengthOf(yield* runsOf(g, flow.id), 1)
      yield* pass(10)
      const ended = yield* detail(g, run!.id)
      assert.strictEqual(ended.status, "ended")
      assert.strictEqual(ended.execution_context.vars.answer, "early")
      assert.deepStrictEqual(yield* g.texts, ["Thinking", "Got early"])
    }))

  scenario("inputs queued for a run that ends without a wait do not feed the pair's next run", () =>
    Effect.gen(function*() {
      const g = yield* given
      const flow = yield* workflow(g, {
        trigger: inbound(g),
        nodes: chain(node("start", "start"), node("think", "send_text", { message: "Thinking", delay_seconds: 5 }))
      })
      yield* g.say("15551230011", "go")
      yield* idle
      yield* g.say("15551230011", "extra")
      yield* pass(5)
      const [first] = yield* runsOf(g, flow.id)
      assert.strictEqual(first?.status, "ended")
      const later = yield* (yield* Workflows).create(g.principal, {
        name: "Later",
        status: "active",
        definition: chain(node("start", "start"), node("ask", "wait_for_response"))
      })
      const ack = yield* (yield* Executions).start(g.principal, later.id, {
        phone_number: "+15551230011",
        phone_number_id: g.config.phone_number_id
      }, { ip: null, user_agent: null })
      yield* idle
      assert.strictEqual((yield* detail(g, ack.id)).status, "waiting", "the old input was not taken")
    }))

  scenario("a message is not input to a run started after it was received", () =>
    Effect.gen(function*() {
      const g = yield* given
      yield* g.say("15551230015", "earlier")
      yield* idle
      const later = yield* (yield* Workflows).create(g.principal, {
        name: "Later",
        status: "active",
        definition: chain(node("start", "start"), node("ask", "wait_for_response"))
      })
      // The contact writes and, before routing took the message, the API starts a run for the pair.
      const sent = yield* g.say("15551230015", "hello")
      yield* TestClock.adjust("5 millis")
      const ack = yield* (yield* Executions).start(g.principal, later.id, {
        phone_number: "+15551230015",
        phone_number_id: g.config.phone_number_id
      }, { ip: null, user_agent: null })
      // Held for the run's 1 s window, then routed: the run is newer than the message.
      yield* pass(1)
      assert.strictEqual((yield* detail(g, ack.id)).status, "waiting")
      assert.strictEqual((yield* storedMessage(g, sent)).processing_status, "completed")
      const reply = yield* g.say("15551230015", "now")
      yield* pass(1)
      const d = yield* detail(g, ack.id)
      assert.strictEqual(d.status, "ended")
      assert.strictEqual(d.execution_context.vars.last_user_input, "now")
      assert.strictEqual((yield* storedMessage(g, reply)).processing_status, "completed")
    }))

  scenario("an API start for a new contact attaches the run to a conversation at once; the contact's reply resumes it", () =>
    Effect.gen(function*() {
      const g = yield* given
      const bot = yield* workflow(g, { trigger: inbound(g), debounce: null, nodes: chain(node("start", "start"), node("ask", "wait_for_response")) })
      const api = yield* (yield* Workflows).create(g.principal, {
        name: "Survey",
        status: "active",
        definition: chain(node("start", "start"), node("ask", "wait_for_response", { save_response_to: "answer" }))
      })
      const ack = yield* (yield* Executions).start(g.principal, api.id, {
        phone_number: "+15551230017",
        phone_number_id: g.config.phone_number_id
      }, { ip: null, user_agent: null })
      yield* idle
      const waiting = yield* detail(g, ack.id)
      assert.strictEqual(waiting.status, "waiting")
      assert.isNotNull(waiting.msg_conversation_id, "attached before any send")
      assert.strictEqual(waiting.execution_context.context.conversation_id, waiting.msg_conversation_id)
      const conversation = yield* (yield* Messaging).getConversation(g.project.id, waiting.msg_conversation_id!)
      assert.strictEqual(conversation.status, "active")
      assert.strictEqual(conversation.phone_number, "15551230017")

      const reply = yield* g.say("15551230017", "yes")
      yield* pass(1)
      const ended = yield* detail(g, ack.id)
      assert.strictEqual(ended.status, "ended", "the reply went to the API run")
      assert.strictEqual(ended.execution_context.vars.answer, "yes")
      assert.strictEqual((yield* storedMessage(g, reply)).conversation_id, waiting.msg_conversation_id, "the same conversation")
      assert.lengthOf(yield* runsOf(g, bot.id), 0, "the trigger started no second run")
    }))

  scenario("a contact writes and an API start comes within the debounce window: one run owns the pair", () =>
    Effect.gen(function*() {
      const g = yield* given
      const bot = yield* workflow(g, { trigger: inbound(g), debounce: 2, nodes: chain(node("start", "start"), node("ask", "wait_for_response")) })
      const api = yield* (yield* Workflows).create(g.principal, {
        name: "Survey",
        status: "active",
        definition: chain(node("start", "start"), node("hi", "send_text", { message: "Rate us" }), node("ask", "wait_for_response", { save_response_to: "answer" }))
      })
      yield* g.say("15551230018", "hello")
      yield* TestClock.adjust("500 millis")
      yield* idle
      const ack = yield* (yield* Executions).start(g.principal, api.id, {
        phone_number: "+15551230018",
        phone_number_id: g.config.phone_number_id
      }, { ip: null, user_agent: null })
      yield* pass(3)
      assert.lengthOf(yield* runsOf(g, bot.id), 0, "the held message started no second run")
      assert.strictEqual((yield* detail(g, ack.id)).status, "waiting")
      yield* g.say("15551230018", "5")
      yield* pass(3)
      const ended = yield* detail(g, ack.id)
      assert.strictEqual(ended.status, "ended")
      assert.strictEqual(ended.execution_context.vars.answer, "5")
      assert.lengthOf(yield* runsOf(g, bot.id), 0)
    }))

  scenario("a new contact writes and an API start overtakes the message's recording: the API run gets it, no trigger run starts", () =>
    Effect.gen(function*() {
      const g = yield* given
      const bot = yield* workflow(g, { trigger: inbound(g), debounce: null, nodes: chain(node("start", "start"), node("ask", "wait_for_response")) })
      const api = yield* (yield* Workflows).create(g.principal, {
        name: "Survey",
        status: "active",
        definition: chain(node("start", "start"), node("ask", "wait_for_response", { save_response_to: "answer" }))
      })
      // The network has the message; Parley records it a moment later, after the start.
      yield* g.say("15551230020", "hello")
      const ack = yield* (yield* Executions).start(g.principal, api.id, {
        phone_number: "+15551230020",
        phone_number_id: g.config.phone_number_id
      }, { ip: null, user_agent: null })
      yield* pass(3)
      assert.lengthOf(yield* runsOf(g, bot.id), 0, "the trigger started no second run")
      const run = yield* detail(g, ack.id)
      assert.strictEqual(run.status, "ended", "the API run took the contact's message")
      assert.strictEqual(run.execution_context.vars.answer, "hello")
    }))

  scenario("a conversation in handoff blocks its messages; nothing starts", () =>
    Effect.gen(function*() {
      const g = yield* given
      const flow = yield* workflow(g, { trigger: inbound(g), nodes: chain(node("start", "start"), node("human", "handoff", { reason: "help" })) })
      yield* g.say("15551230004", "help me")
      yield* idle
      const [run] = yield* runsOf(g, flow.id)
      assert.strictEqual(run?.status, "handoff")
      const later = yield* g.say("15551230004", "anyone?")
      yield* idle
      assert.strictEqual((yield* storedMessage(g, later)).processing_status, "blocked")
      assert.lengthOf(yield* runsOf(g, flow.id), 1)
    }))

  scenario("closing a conversation ends its handoff run; the next message opens a new conversation and starts a run", () =>
    Effect.gen(function*() {
      const g = yield* given
      const flow = yield* workflow(g, { trigger: inbound(g), nodes: chain(node("start", "start"), node("human", "handoff", { reason: "help" })) })
      yield* g.say("15551230016", "help me")
      yield* idle
      const [run] = yield* runsOf(g, flow.id)
      assert.strictEqual(run?.status, "handoff")
      const conversationId = (yield* detail(g, run!.id)).msg_conversation_id!
      // The inbox's "End conversation" and the Platform API's PATCH both close it here.
      const closed = yield* (yield* ConversationClosing).update(g.project.id, conversationId, { status: "ended" })
      assert.strictEqual(closed.status, "ended")
      const released = yield* detail(g, run!.id)
      assert.strictEqual(released.status, "ended", "the run that held the contact ended with the conversation")
      assert.strictEqual(released.events.find((e) => e.event_type === "execution_ended")?.payload["reason"], "manual")

      const later = yield* g.say("15551230016", "hello again")
      yield* idle
      const message = yield* storedMessage(g, later)
      assert.strictEqual(message.processing_status, "completed", "not blocked")
      assert.notStrictEqual(message.conversation_id, conversationId, "a new conversation")
      const runs = yield* runsOf(g, flow.id)
      assert.lengthOf(runs, 2, "the trigger started a new run")
      assert.strictEqual(runs[1]!.msg_conversation_id, message.conversation_id)
    }))

  scenario("the step log: a send's action_performed names the sender; a handoff's context_data rides on execution_handoff", () =>
    Effect.gen(function*() {
      const g = yield* given
      yield* g.say("15551230019", "hi")
      yield* idle
      const api = yield* (yield* Workflows).create(g.principal, {
        name: "Escalate",
        status: "active",
        definition: chain(
          node("start", "start"),
          node("hi", "send_text", { message: "One moment" }),
          node("human", "handoff", { reason: "asked", context_data: { order: "A-1009" } })
        )
      })
      const ack = yield* (yield* Executions).start(g.principal, api.id, {
        phone_number: "+15551230019",
        phone_number_id: g.config.phone_number_id
      }, { ip: null, user_agent: null })
      yield* idle
      const run = yield* detail(g, ack.id)
      assert.strictEqual(run.status, "handoff")
      const performed = run.events.find((e) => e.event_type === "action_performed")
      assert.strictEqual(performed?.payload["phone_number_id"], g.config.phone_number_id)
      assert.isUndefined(run.events.find((e) => e.event_type === "variables_set"), "context_data is not a variable")
      const handoff = run.events.find((e) => e.event_type === "execution_handoff")
      assert.deepStrictEqual(handoff?.payload, { reason: "asked", source: "action_step", context_data: { order: "A-1009" } })
    }))

  scenario("a number with inbound processing disabled blocks its messages", () =>
    Effect.gen(function*() {
      const g = yield* given
      const flow = yield* workflow(g, { trigger: inbound(g), nodes: chain(node("start", "start")) })
      yield* (yield* MessageConfigs).update(g.principal, g.config.id, { inbound_processing_enabled: false })
      const sent = yield* g.say("15551230005", "hi")
      yield* pass(2)
      assert.strictEqual((yield* storedMessage(g, sent)).processing_status, "blocked")
      assert.lengthOf(yield* runsOf(g, flow.id), 0)
    }))

  scenario("a draft workflow's trigger never fires; the message completes with nothing to do", () =>
    Effect.gen(function*() {
      const g = yield* given
      const flow = yield* workflow(g, { trigger: inbound(g), status: "draft", nodes: chain(node("start", "start")) })
      const sent = yield* g.say("15551230006", "hi")
      yield* pass(2)
      assert.lengthOf(yield* runsOf(g, flow.id), 0)
      assert.strictEqual((yield* storedMessage(g, sent)).processing_status, "completed")
    }))

  scenario("observers run per message beside routing: sends skipped, a wait ends them", () =>
    Effect.gen(function*() {
      const g = yield* given
      const observer = yield* workflow(g, {
        trigger: { trigger_type: "msg_event", event: "msg.message.received" },
        nodes: chain(
          node("start", "start"),
          node("tell", "send_text", { message: "Seen" }),
          node("wait", "wait_for_response")
        )
      })
      const routed = yield* workflow(g, { trigger: inbound(g), nodes: chain(node("start", "start"), node("ask", "wait_for_response")) })
      yield* g.say("15551230007", "one")
      yield* idle
      yield* g.say("15551230007", "two")
      yield* idle
      const watched = yield* runsOf(g, observer.id)
      assert.lengthOf(watched, 2, "one observer per message")
      for (const run of watched) {
        const d = yield* detail(g, run.id)
        assert.isTrue(d.observer)
        assert.strictEqual(d.status, "ended")
        const types = d.events.map((e) => e.event_type)
        assert.include(types, "action_skipped")
        assert.strictEqual(d.events.find((e) => e.event_type === "execution_ended")?.payload["reason"], "observer_wait")
      }
      assert.deepStrictEqual(yield* g.texts, [], "the observer sent nothing")
      const [owner] = yield* runsOf(g, routed.id)
      assert.lengthOf(yield* runsOf(g, routed.id), 1)
      const d = yield* detail(g, owner!.id)
      assert.strictEqual(d.status, "ended", "observers never took the routed reply")
      assert.strictEqual(d.execution_context.vars.last_user_input, "two")
    }))

  scenario("observers of conversation and status events start once per event", () =>
    Effect.gen(function*() {
      const g = yield* given
      const created = yield* workflow(g, {
        name: "On new conversation",
        trigger: { trigger_type: "msg_event", event: "msg.conversation.created", phone_number_id: g.config.phone_number_id },
        nodes: chain(node("start", "start"))
      })
      const sent = yield* workflow(g, {
        name: "On sent",
        trigger: { trigger_type: "msg_event", event: "msg.message.sent" },
        nodes: chain(node("start", "start"))
      })
      yield* workflow(g, { trigger: inbound(g), nodes: chain(node("start", "start"), node("hi", "send_text", { message: "Hi" })) })
      yield* g.say("15551230012", "one")
      yield* idle
      yield* g.say("15551230012", "two")
      yield* idle
      const opened = yield* runsOf(g, created.id)
      assert.lengthOf(opened, 1, "one conversation opened")
      const d = yield* detail(g, opened[0]!.id)
      assert.isTrue(d.observer)
      assert.strictEqual(d.trigger_type, "msg_event")
      assert.isNotNull(d.msg_conversation_id)
      assert.strictEqual((d.execution_context.system.trigger_payload as { conversation: { id: string } }).conversation.id, d.msg_conversation_id)
      assert.deepStrictEqual(yield* g.texts, ["Hi", "Hi"])
      assert.lengthOf(yield* runsOf(g, sent.id), 2, "one per message the network reported sent")
    }))

  scenario("read mode marks the newest message of the batch read when a workflow takes it", () =>
    Effect.gen(function*() {
      const g = yield* given
      const calls = yield* MarkReads
      const flow = yield* workflow(g, {
        trigger: inbound(g),
        readMode: "read_with_typing",
        debounce: 2,
        nodes: chain(node("start", "start"), node("ask", "wait_for_response"))
      })
      yield* g.say("15551230008", "hi")
      yield* idle
      const newest = yield* g.say("15551230008", "there")
      yield* pass(2)
      assert.deepStrictEqual(calls, [{ messageId: newest, typing: true }], "the batch's newest message, with typing")
      assert.strictEqual((yield* storedMessage(g, newest)).status, "read")
      const reply = yield* g.say("15551230008", "again")
      yield* pass(2)
      assert.deepStrictEqual(calls[1], { messageId: reply, typing: true }, "the waiting run took it")

      yield* (yield* Workflows).update(g.principal, flow.id, { inbound_message_read_mode: "read_only" })
      const plain = yield* g.say("15551230009", "hello")
      yield* pass(2)
      assert.deepStrictEqual(calls[2], { messageId: plain, typing: false })
      assert.strictEqual((yield* storedMessage(g, plain)).status, "read")

      yield* (yield* Workflows).update(g.principal, flow.id, { inbound_message_read_mode: "disabled" })
      const unread = yield* g.say("15551230013", "hello?")
      yield* pass(2)
      assert.lengthOf(yield* runsOf(g, flow.id), 3)
      assert.lengthOf(calls, 3, "disabled: no mark-read")
      assert.strictEqual((yield* storedMessage(g, unread)).status, "delivered")
    }))

  scenario("the sweep releases a batch whose timer was lost", () =>
    Effect.gen(function*() {
      const g = yield* given
      const sent = yield* g.say("15551230014", "first")
      yield* idle
      const message = yield* storedMessage(g, sent)
      const flow = yield* workflow(g, { trigger: inbound(g), nodes: chain(node("start", "start"), node("ask", "wait_for_response")) })
      // Buffered as by a host that died before arming its timer.
      const now = yield* Clock.currentTimeMillis
      yield* (yield* ExecutionInputsRepo).add({
        id: "lost-input",
        project_id: g.project.id,
        msg_config_id: message.msg_config_id,
        contact_id: message.contact_id,
        conversation_id: message.conversation_id,
        network_id: null,
        value: "lost",
        received_at: new Date(now - 10 * 60_000).toISOString(),
        state: "buffered"
      })
      yield* pass(61)
      const [run] = yield* runsOf(g, flow.id)
      assert.isDefined(run)
      assert.strictEqual((yield* detail(g, run!.id)).execution_context.vars.last_user_input, "lost")
    }))
})

describe("project event triggers (memory)", () => {
  scenario("start runs for matching events only, with the event in system.event", () =>
    Effect.gen(function*() {
      const g = yield* given
      const flow = yield* workflow(g, {
        trigger: { trigger_type: "project_event", event_name: "order.paid", property_key: "amount", operator: "gte", property_value: 100 },
        nodes: chain(node("start", "start"), node("note", "set_variable", { variable_name: "amount", variable_value: "{{system.event.properties.amount}}" }))
      })
      const draft = yield* workflow(g, {
        trigger: { trigger_type: "project_event", event_name: "order.paid" },
        status: "draft",
        name: "Draft",
        nodes: chain(node("start", "start"))
      })
      const events = yield* Events
      yield* events.emit(g.project.id, { name: "order.paid", properties: { amount: 50 } })
      yield* events.emit(g.project.id, { name: "order.paid", properties: { total: 500 } })
      yield* events.emit(g.project.id, { name: "order.refunded", properties: { amount: 500 } })
      const paid = yield* events.emit(g.project.id, { name: "order.paid", properties: { amount: "150" } })
      yield* idle
      const runs = yield* runsOf(g, flow.id)
      assert.lengthOf(runs, 1)
      const d = yield* detail(g, runs[0]!.id)
      assert.strictEqual(d.trigger_type, "project_event")
      assert.strictEqual(d.status, "ended")
      assert.strictEqual(d.execution_context.vars.amount, "150")
      assert.strictEqual((d.execution_context.system.event as { id: string }).id, paid.id)
      assert.strictEqual(d.execution_context.system.event_chain_depth, 1)
      assert.lengthOf(yield* runsOf(g, draft.id), 0, "a draft workflow's trigger never fires")
    }))

  scenario("events emitted by event-triggered runs carry the chain depth; depth 5 starts nothing", () =>
    Effect.gen(function*() {
      const g = yield* given
      const flow = yield* workflow(g, {
        trigger: { trigger_type: "project_event", event_name: "ping" },
        nodes: chain(node("start", "start"), node("again", "emit_event", { event_name: "ping", properties: {} }))
      })
      yield* (yield* Events).emit(g.project.id, { name: "ping" })
      for (let i = 0; i < 8; i++) yield* idle
      const runs = yield* runsOf(g, flow.id)
      assert.lengthOf(runs, 5)
      const depths = yield* Effect.forEach(runs, (r) => Effect.map(detail(g, r.id), (d) => d.execution_context.system.event_chain_depth))
      assert.deepStrictEqual([...depths].sort(), [1, 2, 3, 4, 5])
    }))

  scenario("a run follows the event's conversation", () =>
    Effect.gen(function*() {
      const g = yield* given
      const sent = yield* g.say("15551230010", "hello")
      yield* idle
      const message = yield* storedMessage(g, sent)
      const flow = yield* workflow(g, {
        trigger: { trigger_type: "project_event", event_name: "lead.scored" },
        nodes: chain(node("start", "start"), node("tell", "send_text", { message: "Score {{system.event.properties.score}}" }))
      })
      yield* (yield* Events).emit(g.project.id, { name: "lead.scored", properties: { score: 9 }, conversation_id: message.conversation_id })
      yield* idle
      const [run] = yield* runsOf(g, flow.id)
      assert.strictEqual(run?.msg_conversation_id, message.conversation_id)
      assert.strictEqual(run?.status, "ended")
      assert.deepStrictEqual(yield* g.texts, ["Score 9"])
    }))
})
