/**
 * Parley whole on memory ports, for unit tests of workflows: every service and
 * background worker the host runs, the network simulator in process,
 * functions on the memory runtime, webhooks to the memory receiver and
 * sequential ids, all on the test's clock. With `TestClock`, a one-day wait
 * passes in milliseconds.
 *
 * ```ts
 * it.effect("greets", () => Effect.gen(function*() {
 *   const { principal, phoneNumberId } = yield* sandboxProject("Acme")
 *   const ada = yield* simulatedContact(phoneNumberId, "+15551234567")
 *   yield* ada.say("hi")           // starts the workflow of an inbound_message trigger
 *   yield* settle
 *   assert.deepStrictEqual(yield* ada.received, ["Hi Ada"])
 * }).pipe(Effect.provide(layerMemoryParley)))
 * ```
 */
import { layerMemoryLanguageModels } from "./MemoryLanguageModels.ts"
import { Effect, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { ExecutionEngine } from "../executions/Engine.ts"
import { OutboxRelaySettings } from "../outbox/Relay.ts"
import { MessageConfigs } from "../messaging/numbers/MessageConfigs.ts"
import { UpstreamSettings } from "../messaging/Upstream.ts"
import * as Parley from "../Parley.ts"
import { Projects } from "../projects/Projects.ts"
import { Ids } from "../shared/Ids.ts"
import { layerMemoryFunctions } from "../functions/MemoryFunctionRuntime.ts"
import { layerMemoryJobQueue } from "../ports/MemoryJobQueue.ts"
import { layerMemoryStorage } from "../MemoryStorage.ts"
import { layerMemoryWebhookHttp } from "../webhooks/MemoryWebhooks.ts"
import * as SimulatedUpstream from "../simulators/Upstream.ts"

/**
 * One process appends every domain event and signals the relay, so its polling (for other hosts' appends) can be
 * rare: a `TestClock` day then wakes it 1,440 times instead of 345,600.
 */
const layerRelaySettings = Layer.succeed(OutboxRelaySettings, {
  pollIntervalMs: 60_000,
  batchSize: 500,
  lingerMs: 20,
  handlerRetryLimit: 5
})

/** Every service and worker of Parley over memory ports (build it fresh per test: `Effect.provide(layerMemoryParley)`). */
export const layerMemoryParley = Parley.layerWorkers.pipe(
  Layer.provide(layerRelaySettings),
  Layer.provideMerge(Parley.layerExecutionServices),
  Layer.provideMerge(Parley.layerFunctionServices),
  Layer.provideMerge(Parley.layerWebhookServices),
  Layer.provideMerge(Parley.layerServices),
  // The network simulator in process (its `NetworkSimulator` too, for tests that drive it beyond a contact).
  Layer.provideMerge(SimulatedUpstream.layerSimulatorConfig),
  Layer.provideMerge(Layer.mergeAll(
    layerMemoryStorage,
    layerMemoryJobQueue,
    Ids.layerSequential,
    layerMemoryFunctions(),
    layerMemoryWebhookHttp,
    layerMemoryLanguageModels()
  ))
)

const yieldMany = Effect.yieldNow.pipe(Effect.repeat({ times: 50 }))

/**
 * Lets everything due run to its next wait: job attempts, execution slices,
 * the simulator's status reports and webhooks. Group commits and the
 * simulator's report batching keep time on the clock, so this moves the
 * `TestClock` 200 ms forward in 10 ms steps; pass longer waits with
 * `TestClock.adjust` first.
 */
export const settle: Effect.Effect<void, never, ExecutionEngine> = Effect.gen(function*() {
  for (let i = 0; i < 20; i++) yield* Effect.andThen(TestClock.adjust("10 millis"), yieldMany)
  yield* (yield* ExecutionEngine).idle
  yield* yieldMany
})

/** A new project with an API key's principal and the simulated number connected to it. */
export const sandboxProject = (name: string) =>
  Effect.gen(function*() {
    const projects = yield* Projects
    const project = yield* projects.create(name)
    const { secret } = yield* projects.createKey(project.id, "tests")
    const principal = yield* projects.authenticate(secret)
    const config = yield* (yield* MessageConfigs).bootstrap(project.id)
    if (Option.isNone(config)) return yield* Effect.die(new Error("The simulated number is connected to another project"))
    return { principal, phoneNumberId: config.value.phone_number_id, msgConfigId: config.value.id }
  })

export interface SimulatedContact {
  /** The contact's number, digits only. */
  readonly phone: string
  /** The contact writes a text to the number (through the simulated network's signed webhook). */
  readonly say: (text: string) => Effect.Effect<void>
  /** The contact presses a reply button (`button_reply`) of an interactive message. */
  readonly press: (id: string, title: string) => Effect.Effect<void>
  /** The text bodies the contact received from the number so far, oldest first. */
  readonly received: Effect.Effect<ReadonlyArray<string>>
  /** Every message envelope the contact received from the number, oldest first. */
  readonly envelopes: Effect.Effect<ReadonlyArray<Record<string, unknown>>>
}

/** A contact of the simulated network writing to `phoneNumberId`. */
export const simulatedContact = (phoneNumberId: string, phone: string, profileName?: string) =>
  Effect.gen(function*() {
    const simulator = Option.getOrThrow((yield* UpstreamSettings).simulator)
    const digits = phone.replace(/\D/g, "")
    const write = (message: Record<string, unknown>) =>
      simulator.inbound(phoneNumberId, { from: digits, ...(profileName !== undefined ? { profile_name: profileName } : {}), message }).pipe(
        Effect.orDie,
        Effect.asVoid
      )
    const envelopes = simulator.outbox(phoneNumberId).pipe(
      Effect.map((entries) => entries.filter((e) => e.to === digits).map((e) => e.envelope as Record<string, unknown>))
    )
    const contact: SimulatedContact = {
      phone: digits,
      say: (text) => write({ type: "text", text: { body: text } }),
      press: (id, title) => write({ type: "interactive", interactive: { type: "button_reply", button_reply: { id, title } } }),
      envelopes,
      received: Effect.map(envelopes, (all) =>
        all.flatMap((e) => {
          const text = e["text"] as { readonly body?: unknown } | undefined
          return typeof text?.body === "string" ? [text.body] : []
        }))
    }
    return contact
  })
