/**
 * The workflow test kit (docs/testing.md): one workflow definition on memory
 * ports, a scripted contact talking to it through the simulated network, and
 * expectations on what the bot sends, the path the run takes, its variables
 * and its step events. Time is the `TestClock`: a contact's message waits out
 * the workflow's own debounce window (`message_debounce_seconds`, 1 s when
 * null) before the kit looks at what happened, as the host would, so "say"
 * then "expect reply" holds with no clock advance in the test; `advance`
 * moves time for the workflow's waits and timeouts.
 *
 * Functions run for real on the memory function runtime, or answer a fixed
 * JSON (a stub is a one-line function); webhook nodes reach the memory
 * receiver, answered per URL; model calls reach the model simulator, scripted
 * turn by turn or following its rules.
 *
 * ```ts
 * it.effect("greets", () => Effect.gen(function*() {
 *   const flow = yield* testWorkflow({ name: "Greeter", definition })
 *   const ada = yield* flow.contact("+15551234567", "Ada")
 *   yield* ada.says("hi")
 *   yield* ada.expectReply({ text: "Hi Ada! How are you?" })
 * }).pipe(Effect.provide(layerMemoryParley)))
 * ```
 */
import { Data, Duration, Effect, Option, Schema } from "effect"
import { TestClock } from "effect/testing"
import { isDeepStrictEqual } from "node:util"
import {
  type ExecutionDetail,
  ExecutionEngine,
  type ExecutionStatus,
  Executions,
  Functions,
  MessageConfigs,
  MessagingNetwork,
  ProviderModels,
  type StepEventRecord,
  Templates,
  Triggers,
  UpstreamSettings,
  WorkflowCreateInput,
  type WorkflowRecord,
  Workflows
} from "../index.ts"
import { ModelSimulator, type ModelTurn } from "../simulators/model/ModelSimulator.ts"
import { sandboxProject, settle as settleIn } from "./MemoryParley.ts"
import { memoryModelEndpoint, MemoryWebhookReceiver } from "./index.ts"
import { describeExpected, describeSent, type ExpectedMessage, sentMatches, type SentMessage, sentMessageOf } from "./SentMessages.ts"

/** An expectation of a workflow test did not hold; `message` says what was expected and what happened. */
export class FlowExpectationFailed extends Data.TaggedError("FlowExpectationFailed")<{ readonly message: string }> {}

/** A function the workflow references: its code run for real, a fixed JSON answer, or answers in turn (the last repeats). */
export type FunctionDouble =
  | { readonly code: string }
  | { readonly answer: unknown; readonly status?: number | undefined }
  | { readonly answers: ReadonlyArray<unknown> }

/** How the webhook receiver answers requests whose URL starts with `url` (every request without `url`). */
export interface WebhookAnswer {
  readonly url?: string | undefined
  readonly status?: number | undefined
  /** A string is sent as is; anything else as JSON. */
  readonly body?: unknown
}

export interface WorkflowKitOptions {
  /**
   * How runs start: `inbound_message` (default) gives the workflow an inbound trigger on the sandbox number, so a
   * contact's first message starts a run; `api` adds none: runs start with `start`.
   */
  readonly trigger?: "inbound_message" | "api" | undefined
  /**
   * The functions the definition references, by the id written in it: each is created (and deployed) in the test's
   * project and the definition is rewritten to its new id.
   */
  readonly functions?: Readonly<Record<string, FunctionDouble>> | undefined
  /**
   * The templates the definition references, by the id written in it: each is created on the simulated network as
   * this body (`name`, `language`, `category`, `components`, as `POST /<waba_id>/message_templates` takes it), approved
   * by its review, mirrored, and the definition is rewritten to its id.
   */
  readonly templates?: Readonly<Record<string, Readonly<Record<string, unknown>>>> | undefined
  /** Answers of webhook nodes and tools, the first whose `url` prefixes the request's; default 200 `{}`. */
  readonly webhooks?: ReadonlyArray<WebhookAnswer> | undefined
  /** Model answers, taken in order; when they run out the simulator follows its rules. */
  readonly model?: ReadonlyArray<ModelTurn> | undefined
  /** Model names the definition uses (`provider_model_name`), declared on the model simulator; `parley-sim` always is. */
  readonly models?: ReadonlyArray<string> | undefined
}

/** A contact of the sandbox number, scripted by the test. */
export interface ScriptedContact {
  /** Digits only. */
  readonly phone: string
  /** Writes a text, then lets the debounce window pass and the workflow run to its next wait. */
  readonly says: (text: string) => Effect.Effect<void>
  /** Several texts inside one debounce window: the workflow gets them as one input. */
  readonly saysAtOnce: (texts: ReadonlyArray<string>) => Effect.Effect<void>
  /** Taps a reply button of the last interactive message, by title (or by id when no title matches). */
  readonly taps: (button: string) => Effect.Effect<void, FlowExpectationFailed>
  /** Picks a row of the last interactive list, by title (or by id when no title matches). */
  readonly picks: (row: string) => Effect.Effect<void, FlowExpectationFailed>
  /** Sends media (a small placeholder file on the simulated network), with a caption when given. */
  readonly sends: (
    mediaType: "image" | "video" | "audio" | "document" | "sticker",
    options?: { readonly caption?: string | undefined; readonly filename?: string | undefined }
  ) => Effect.Effect<void>
  /** Every message the contact received, oldest first. */
  readonly received: Effect.Effect<ReadonlyArray<SentMessage>>
  /** The messages received since the last `replies` or `expectReply`, marked read. */
  readonly replies: Effect.Effect<ReadonlyArray<SentMessage>>
  /** The next unread message is `expected` (and is marked read); fails naming what came instead. */
  readonly expectReply: (expected: ExpectedMessage) => Effect.Effect<SentMessage, FlowExpectationFailed>
  /** No unread message. */
  readonly expectNoReply: Effect.Effect<void, FlowExpectationFailed>
}

/** The path of a run: every node entered, in order (a node entered twice appears twice), and the edge labels taken. */
export interface RunPath {
  readonly nodes: ReadonlyArray<string>
  readonly edges: ReadonlyArray<string>
}

/** One workflow under test, on its own project and the sandbox number. */
export interface WorkflowUnderTest {
  readonly workflow: WorkflowRecord
  readonly phoneNumberId: string
  /** A contact of the sandbox number. */
  readonly contact: (phone: string, profileName?: string) => Effect.Effect<ScriptedContact>
  /** Starts a run through the API (as `POST /workflows/<id>/executions`) for the contact, then lets it run. */
  readonly start: (
    contact: ScriptedContact,
    variables?: Readonly<Record<string, unknown>>
  ) => Effect.Effect<ExecutionDetail, FlowExpectationFailed>
  /** Moves the clock (a wait's timeout, a delay) and lets what became due run. */
  readonly advance: (duration: Duration.Input) => Effect.Effect<void>
  /** The latest run of the workflow. */
  readonly run: Effect.Effect<ExecutionDetail, FlowExpectationFailed>
  /** Every step event of the latest run, oldest first. */
  readonly events: Effect.Effect<ReadonlyArray<StepEventRecord>, FlowExpectationFailed>
  readonly path: Effect.Effect<RunPath, FlowExpectationFailed>
  /** The nodes entered so far are exactly `nodes`, in order. */
  readonly expectPath: (nodes: ReadonlyArray<string>) => Effect.Effect<void, FlowExpectationFailed>
  /** The edge labels taken so far are exactly `labels`, in order. */
  readonly expectEdges: (labels: ReadonlyArray<string>) => Effect.Effect<void, FlowExpectationFailed>
  /** Each variable named has this value (other variables may exist). */
  readonly expectVars: (vars: Readonly<Record<string, unknown>>) => Effect.Effect<void, FlowExpectationFailed>
  readonly expectStatus: (status: ExecutionStatus) => Effect.Effect<void, FlowExpectationFailed>
  /** These event types occur in this order among the run's step events (others may come between). */
  readonly expectEvents: (types: ReadonlyArray<string>) => Effect.Effect<void, FlowExpectationFailed>
  /** Every request the webhook receiver got, oldest first, with the body as text. */
  readonly webhookRequests: Effect.Effect<ReadonlyArray<{ readonly method: string; readonly url: string; readonly body: string }>>
}

const fail = (message: string) => Effect.fail(new FlowExpectationFailed({ message }))

const json = (value: unknown) => JSON.stringify(value)

/** The code of a function that answers `answer` with `status`. */
const stubCode = (answer: unknown, status: number) =>
  `async function handler() { return new Response(${json(json(answer))}, { status: ${status}, headers: { "content-type": "application/json" } }) }`

/** The code of a function that answers each of `answers` in turn, then the last again. */
const sequenceCode = (answers: ReadonlyArray<unknown>) =>
  `const answers = ${json(answers)}; let calls = 0
async function handler() { return Response.json(answers[Math.min(calls++, answers.length - 1)] ?? {}) }`

/** The body `POST /platform/v1/workflows` takes (`{ "workflow": {...} }`), or the inner object. */
const WorkflowBody = Schema.Union([Schema.Struct({ workflow: WorkflowCreateInput }), WorkflowCreateInput])
const decodeWorkflowBody = Schema.decodeUnknownEffect(WorkflowBody)

/**
 * Creates the workflow (active) on a fresh project with the sandbox number, with its functions, webhook answers and
 * model script in place. Needs `layerMemoryParley` and the `TestClock` (as `it.effect` provides).
 */
export const testWorkflow = Effect.fn("WorkflowKit.testWorkflow")(function*(body: unknown, options: WorkflowKitOptions = {}) {
  const decoded = yield* decodeWorkflowBody(body).pipe(
    Effect.mapError((e) => new FlowExpectationFailed({ message: `Not a workflow body: ${e.message}` }))
  )
  const input = "workflow" in decoded ? decoded.workflow : decoded
  const { phoneNumberId, principal } = yield* sandboxProject("Workflow tests")
  const settle = Effect.provideContext(settleIn, yield* Effect.context<ExecutionEngine>())

  // Functions: created and deployed here, the definition pointed at their ids.
  let definitionText = input.definition === undefined ? undefined : json(input.definition)
  const functions = yield* Functions
  const deployed: Array<{ readonly ref: string; readonly id: string }> = []
  for (const [ref, double] of Object.entries(options.functions ?? {})) {
    const code = "code" in double
      ? double.code
      : "answers" in double
      ? sequenceCode(double.answers)
      : stubCode(double.answer, double.status ?? 200)
    const created = yield* functions.create(principal, { name: `Function ${ref}`, code }).pipe(
      Effect.mapError((e) => new FlowExpectationFailed({ message: `Function ${ref}: ${e.error}` }))
    )
    yield* functions.deploy(principal, created.id).pipe(Effect.orDie)
    definitionText = definitionText?.split(json(ref)).join(json(created.id))
    deployed.push({ ref, id: created.id })
  }
  yield* settle
  // Deploys run as jobs; code that does not load says so here rather than as a failed step later.
  for (const { id, ref } of deployed) {
    const fn = yield* functions.get(principal, id).pipe(Effect.orDie)
    if (fn.status !== "deployed") return yield* fail(`Function ${ref} did not deploy: ${fn.last_deploy_error ?? fn.status}`)
  }

  // Templates: created on the simulated network, past its review (5 s), mirrored; the definition points at the mirror.
  const templateEntries = Object.entries(options.templates ?? {})
  if (templateEntries.length > 0) {
    const config = yield* (yield* MessageConfigs).get(principal, phoneNumberId).pipe(Effect.orDie)
    const network = yield* MessagingNetwork
    for (const [, template] of templateEntries) {
      yield* network.createTemplate({ accessToken: config.access_token }, config.business_account_id, template).pipe(
        Effect.mapError((e) => new FlowExpectationFailed({ message: `Template ${String(template["name"])}: ${json(e)}` }))
      )
    }
    yield* Effect.andThen(TestClock.adjust("6 seconds"), settle)
    const templates = yield* Templates
    for (const [ref, template] of templateEntries) {
      const listed = yield* templates.list(principal, { phone_number_id: phoneNumberId, name: String(template["name"]) }, {
        mode: "page",
        page: 1,
        perPage: 10
      })
      const mirrored = listed.items.find((t) => template["language"] === undefined || t.language === template["language"])
      if (mirrored === undefined) return yield* fail(`Template ${String(template["name"])} was not approved by the simulated network`)
      definitionText = definitionText?.split(json(ref)).join(json(mirrored.id))
    }
  }

  const models = yield* ProviderModels
  const endpoint = memoryModelEndpoint()
  for (const name of new Set(["parley-sim", ...(options.models ?? [])])) {
    yield* models.declare({ name, model: endpoint.upstream_model, base_url: endpoint.base_url }).pipe(Effect.orDie)
  }
  if (options.model !== undefined && options.model.length > 0) yield* (yield* ModelSimulator).script(options.model)

  const receiver = yield* MemoryWebhookReceiver
  const answers = options.webhooks ?? []
  receiver.respondWith((request) => {
    const answer = answers.find((a) => a.url === undefined || request.url.startsWith(a.url))
    const payload = answer?.body ?? {}
    return Effect.succeed({ status: answer?.status ?? 200, body: typeof payload === "string" ? payload : json(payload) })
  })

  const workflows = yield* Workflows
  const refuse = (e: { readonly error: string; readonly details?: ReadonlyArray<{ readonly path: string; readonly message: string }> }) =>
    new FlowExpectationFailed({
      message: `The workflow was refused: ${e.error}${(e.details ?? []).map((d) => `; ${d.path} ${d.message}`).join("")}`
    })
  const created = yield* workflows.create(principal, {
    ...input,
    status: "draft",
    ...(definitionText === undefined ? {} : { definition: JSON.parse(definitionText) as unknown })
  }).pipe(Effect.mapError(refuse))
  if ((options.trigger ?? "inbound_message") === "inbound_message") {
    yield* (yield* Triggers).create(principal, created.id, { trigger_type: "inbound_message", phone_number_id: phoneNumberId }).pipe(
      Effect.mapError(refuse)
    )
  }
  const workflow = yield* workflows.update(principal, created.id, { status: "active" }).pipe(
    Effect.mapError((e) => refuse({ error: e.error }))
  )

  const debounce = Duration.seconds(input.message_debounce_seconds ?? 1)
  const simulator = Option.getOrThrow((yield* UpstreamSettings).simulator)
  const executions = yield* Executions

  const advance = (duration: Duration.Input) => Effect.andThen(TestClock.adjust(duration), settle)

  const contact = (phone: string, profileName?: string) =>
    Effect.sync((): ScriptedContact => {
      const digits = phone.replace(/\D/g, "")
      let read = 0
      const write = (message: Record<string, unknown>) =>
        simulator.inbound(phoneNumberId, { from: digits, ...(profileName === undefined ? {} : { profile_name: profileName }), message })
          .pipe(Effect.orDie, Effect.andThen(settle))
      // The host holds a contact's message for the debounce window before routing it; so does the kit.
      const turn = (messages: ReadonlyArray<Record<string, unknown>>) =>
        Effect.andThen(Effect.forEach(messages, write, { discard: true }), advance(debounce))
      const received = simulator.outbox(phoneNumberId).pipe(
        Effect.map((entries) => entries.filter((e) => e.to === digits).map((e) => sentMessageOf(e.envelope)))
      )
      const lastInteractive = Effect.map(received, (all) => all.findLast((m) => m.kind === "interactive"))
      const reply = (kind: "button_reply" | "list_reply", choice: string) =>
        Effect.gen(function*() {
          const last = yield* lastInteractive
          if (last === undefined || last.kind !== "interactive") {
            return yield* fail(`The contact cannot ${kind === "button_reply" ? "tap" : "pick"} ${json(choice)}: no interactive message was received`)
          }
          const option = last.options.find((o) => o.title === choice) ?? last.options.find((o) => o.id === choice)
          if (option === undefined) {
            return yield* fail(`${json(choice)} is not an option of the last interactive message (${describeSent(last)})`)
          }
          yield* turn([{ type: "interactive", interactive: { type: kind, [kind]: { id: option.id, title: option.title } } }])
        })
      const replies = Effect.map(received, (all) => {
        const unread = all.slice(read)
        read = all.length
        return unread
      })
      return {
        phone: digits,
        says: (text) => turn([{ type: "text", text: { body: text } }]),
        saysAtOnce: (texts) => turn(texts.map((text) => ({ type: "text", text: { body: text } }))),
        taps: (button) => reply("button_reply", button),
        picks: (row) => reply("list_reply", row),
        sends: (mediaType, media = {}) =>
          turn([{
            type: mediaType,
            [mediaType]: {
              ...(media.caption === undefined ? {} : { caption: media.caption }),
              ...(media.filename === undefined ? {} : { filename: media.filename })
            }
          }]),
        received,
        replies,
        expectReply: (expected) =>
          Effect.gen(function*() {
            const all = yield* received
            const next = all[read]
            if (next === undefined) {
              return yield* fail(`Expected the bot to send ${describeExpected(expected)}; it sent nothing more${yield* runState}`)
            }
            read += 1
            if (!sentMatches(expected, next)) {
              return yield* fail(`Expected the bot to send ${describeExpected(expected)}; it sent ${describeSent(next)}`)
            }
            return next
          }),
        expectNoReply: Effect.gen(function*() {
          const unread = (yield* received).slice(read)
          if (unread.length > 0) return yield* fail(`Expected no message; the bot sent ${unread.map(describeSent).join(", ")}`)
        })
      }
    })

  const latest = Effect.gen(function*() {
    const page = yield* executions.list(principal, { workflow_id: workflow.id }, { mode: "page", page: 1, perPage: 100 }).pipe(Effect.orDie)
    return Option.fromUndefinedOr(
      [...page.items].sort((a, b) => a.started_at.localeCompare(b.started_at) || a.id.localeCompare(b.id)).at(-1)
    )
  })

  const run = Effect.gen(function*() {
    const summary = yield* latest
    if (Option.isNone(summary)) return yield* fail("The workflow has no run")
    return yield* executions.get(principal, summary.value.id).pipe(Effect.orDie)
  })

  /** After "sent nothing more": where the run stands, which is usually why. */
  const runState = Effect.gen(function*() {
    const summary = yield* latest
    if (Option.isNone(summary)) return " (no run started)"
    const detail = yield* executions.get(principal, summary.value.id).pipe(Effect.orDie)
    const at = detail.current_step === null ? "" : ` at ${detail.current_step.identifier}`
    const error = detail.error_details === null ? "" : `: ${detail.error_details.message}`
    return ` (the run is ${detail.status}${at}${error})`
  })

  const events = Effect.gen(function*() {
    const { id } = yield* run
    const all: Array<StepEventRecord> = []
    for (let page = 1;; page++) {
      const slice = yield* executions.events(principal, id, {}, { mode: "page", page, perPage: 100 }).pipe(Effect.orDie)
      all.push(...slice.items)
      if (!slice.hasMore || slice.items.length === 0) break
    }
    return all.sort((a, b) => a.seq - b.seq)
  })

  const path = Effect.map(events, (all): RunPath => ({
    nodes: all.flatMap((e) => (e.event_type === "step_entered" && e.step !== null ? [e.step.identifier] : [])),
    edges: all.flatMap((e) => (e.event_type === "step_completed" && e.edge_label !== null ? [e.edge_label] : []))
  }))

  const same = (what: string, expected: unknown, actual: unknown) =>
    isDeepStrictEqual(expected, actual) ? Effect.void : fail(`Expected ${what} ${json(expected)}; it is ${json(actual)}`)

  const under: WorkflowUnderTest = {
    workflow,
    phoneNumberId,
    contact,
    advance,
    run,
    events,
    path,
    start: (who, variables = {}) =>
      Effect.gen(function*() {
        const started = yield* executions.start(principal, workflow.id, { phone_number: who.phone, variables }, { ip: null, user_agent: null })
          .pipe(Effect.mapError((e) => new FlowExpectationFailed({ message: `The run did not start: ${e.error}` })))
        yield* settle
        return yield* executions.get(principal, started.id).pipe(Effect.orDie)
      }),
    expectPath: (nodes) => Effect.flatMap(path, (p) => same("the nodes entered to be", nodes, p.nodes)),
    expectEdges: (labels) => Effect.flatMap(path, (p) => same("the edges taken to be", labels, p.edges)),
    expectVars: (vars) =>
      Effect.flatMap(run, (r) =>
        Effect.forEach(Object.entries(vars), ([name, value]) =>
          same(`vars.${name} to be`, value, r.execution_context.vars[name]), { discard: true })),
    expectStatus: (status) =>
      Effect.flatMap(run, (r) =>
        r.status === status
          ? Effect.void
          : fail(`Expected the run to be ${status}; it is ${r.status}${r.error_details === null ? "" : ` (${r.error_details.message})`}`)),
    expectEvents: (types) =>
      Effect.flatMap(events, (all) => {
        let i = 0
        for (const e of all) if (i < types.length && e.event_type === types[i]) i++
        return i === types.length
          ? Effect.void
          : fail(`Expected the step events ${json(types)} in order; missing ${json(types[i])} (the run has ${json(all.map((e) => e.event_type))})`)
      }),
    webhookRequests: Effect.sync(() =>
      receiver.requests.map((r) => ({ method: r.method, url: r.url, body: new TextDecoder().decode(r.body) }))
    )
  }
  return under
})
