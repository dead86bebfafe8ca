/**
 * Language models over real HTTP: the production adapter of the host against
 * the model simulator it serves at `/model-simulator/v1` (`parley-sim`,
 * declared at boot), and against a simulator that demands a key, declared
 * through `PARLEY_MODELS` with the key in an environment variable. The key
 * goes out as a bearer token and never appears in an answer or a log line.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { assert, describe, it } from "@effect/vitest"
import { Ids, LanguageModels, MessagesRepo, ProviderModels } from "@parley/core"
import { ModelSimulator } from "@parley/core/simulators"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Exit, Layer, Option, Schedule, Schema, Scope, Stream } from "effect"
import { AiError, LanguageModel, Prompt, Tool, Toolkit } from "effect/ai"
import { HttpRouter, HttpServer } from "effect/http"
import { createServer } from "node:http"
import { afterAll, beforeAll } from "vitest"
import * as ModelSimulatorServer from "../src/simulators/ModelSimulatorServer.ts"
import { connectSimulatedNumber, type MessagingHost, startMessagingHost } from "./messaging.support.ts"

const SECRET = "sk-test-very-secret-0123456789abcdef"

let host: MessagingHost
let keyed: ModelSimulator["Service"]
let keyedUrl: string
let close: () => Promise<void>

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    // A separate endpoint that serves only requests bearing SECRET.
    const server = yield* Layer.build(
      HttpRouter.serve(ModelSimulatorServer.routes("/v1"), { disableLogger: true, disableListenLog: true }).pipe(
        Layer.provideMerge(ModelSimulator.layer({ apiKey: SECRET })),
        Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" }))
      )
    )
    keyed = Context.get(server, ModelSimulator)
    keyedUrl = yield* HttpServer.addressFormattedWith(Effect.succeed).pipe(Effect.provideContext(server))
    host = yield* startMessagingHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer), {
      PARLEY_MODELS: JSON.stringify([
        { name: "keyed", provider: "acme", model: "acme-1", base_url: `${keyedUrl}/v1`, api_key_env: "PARLEY_TEST_MODEL_KEY" },
        { name: "keyless", provider: "acme", model: "acme-1", base_url: `${keyedUrl}/v1`, api_key_env: "PARLEY_TEST_UNSET_KEY" },
        { name: "wrong-key", provider: "acme", model: "acme-1", base_url: `${keyedUrl}/v1`, api_key_env: "PARLEY_TEST_WRONG_KEY" }
      ]),
      PARLEY_TEST_MODEL_KEY: SECRET,
      PARLEY_TEST_WRONG_KEY: "sk-wrong"
    })
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
}, 60_000)
afterAll(() => close())

const inHost = <A, E>(effect: Effect.Effect<A, E, LanguageModels | ProviderModels | ModelSimulator>) =>
  Effect.provideContext(effect, host.context as Context.Context<LanguageModels | ProviderModels | ModelSimulator>)

/** effect/ai's `LanguageModel` of a declared model, as the engine gets it. */
const modelNamed = (name: string) =>
  inHost(Effect.gen(function*() {
    const record = Option.getOrThrow(yield* (yield* ProviderModels).find({ name }))
    return { record, model: yield* (yield* LanguageModels).languageModel(record.endpoint) }
  }))

/** Runs `effect` with the declared model `name` as its `LanguageModel`. */
const on = (name: string) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(modelNamed(name), ({ model }) => Effect.provideService(effect, LanguageModel.LanguageModel, model))

const Lookup = Tool.make("lookup_order", {
  description: "Finds an order",
  parameters: Schema.Struct({ order_id: Schema.String })
})
const Tools = Toolkit.make(Lookup)

describe("models over HTTP", () => {
  it.live("GET /provider_models lists parley-sim and the PARLEY_MODELS entries, never an endpoint or a key", () =>
    Effect.promise(async () => {
      const res = await host.request("GET", "/platform/v1/provider_models")
      assert.strictEqual(res.status, 200, res.text)
      const names = res.body.data.map((m: any) => `${m.provider}/${m.name}`)
      assert.deepStrictEqual(names, ["acme/keyed", "acme/keyless", "acme/wrong-key", "simulator/parley-sim"])
      assert.notInclude(res.text, "PARLEY_TEST_MODEL_KEY")
      assert.notInclude(res.text, keyedUrl)
      const models = await host.request("GET", "/model-simulator/v1/models", { key: null })
      assert.strictEqual(models.status, 200, models.text)
      assert.include(models.body.data.map((m: any) => m.id), "parley-sim")
    }))

  it.live("parley-sim answers at the host's own address: text, a tool call and its result, then a summary", () =>
    Effect.gen(function*() {
      const { record } = yield* modelNamed("parley-sim")
      assert.strictEqual(record.endpoint.base_url, `${host.url}/model-simulator/v1`)
      const hello = yield* LanguageModel.generateText({ prompt: "hello" }).pipe(on("parley-sim"))
      assert.strictEqual(hello.text, "You said: hello")

      const first = yield* LanguageModel.generateText({ prompt: "lookup order 42 please", toolkit: Tools, disableToolCallResolution: true }).pipe(on("parley-sim"))
      const call = first.toolCalls[0]!
      assert.strictEqual(call.name, "lookup_order")
      assert.deepStrictEqual(call.params, { order_id: "lookup order 42 please" })
      const second = yield* LanguageModel.generateText({
        prompt: Prompt.make([
          { role: "user", content: "lookup order 42 please" },
          { role: "assistant", content: [{ type: "tool-call", id: call.id, name: call.name, params: call.params, providerExecuted: false }] },
          { role: "tool", content: [{ type: "tool-result", id: call.id, name: call.name, isFailure: false, result: "shipped" }] }
        ]),
        toolkit: Tools,
        disableToolCallResolution: true
      }).pipe(on("parley-sim"))
      assert.strictEqual(second.text, "Result of lookup_order: shipped")
    }))

  it.live("streams over server-sent events", () =>
    Effect.gen(function*() {
      const simulator = yield* inHost(Effect.service(ModelSimulator))
      yield* simulator.script([{ text: "one two three four" }], { model: "parley-sim" })
      const { model } = yield* modelNamed("parley-sim")
      const parts = yield* Stream.runCollect(
        LanguageModel.streamText({ prompt: "stream please" }).pipe(Stream.provideService(LanguageModel.LanguageModel, model))
      )
      const deltas = parts.flatMap((p) => (p.type === "text-delta" ? [p.delta] : []))
      assert.strictEqual(deltas.join(""), "one two three four")
      assert.strictEqual(deltas.length, 4)
      assert.strictEqual(parts[parts.length - 1]!.type, "finish")
    }))

  it.live("an error status becomes an AiError with the status and the endpoint's message", () =>
    Effect.gen(function*() {
      const simulator = yield* inHost(Effect.service(ModelSimulator))
      yield* simulator.script([{ error: { status: 503, message: "overloaded, try later" } }], { model: "parley-sim" })
      const error = yield* Effect.flip(LanguageModel.generateText({ prompt: "x" }).pipe(on("parley-sim")))
      assert.isTrue(AiError.isAiError(error))
      assert.include(error.message, "HTTP 503")
      assert.include(error.message, "overloaded, try later")
    }))

  it.live("the key from the environment goes out as a bearer token; a missing or wrong one fails without showing any key", () =>
    Effect.gen(function*() {
      const ok = yield* LanguageModel.generateText({ prompt: "hi" }).pipe(on("keyed"))
      assert.strictEqual(ok.text, "You said: hi")
      assert.strictEqual((yield* keyed.requests).length, 1)

      const missing = yield* Effect.flip(LanguageModel.generateText({ prompt: "hi" }).pipe(on("keyless")))
      assert.strictEqual((missing as AiError.AiError).reason._tag, "AuthenticationError")
      assert.include(missing.message, "environment variable PARLEY_TEST_UNSET_KEY is not set")
      assert.strictEqual((yield* keyed.requests).length, 1)

      const wrong = yield* Effect.flip(LanguageModel.generateText({ prompt: "hi" }).pipe(on("wrong-key")))
      assert.include(wrong.message, "HTTP 401")
      assert.include(wrong.message, "Incorrect API key provided")
      for (const text of [missing.message, wrong.message, JSON.stringify(missing), JSON.stringify(wrong)]) {
        assert.notInclude(text, SECRET)
        assert.notInclude(text, "sk-wrong")
      }
    }))

  it.live("an endpoint that does not answer is a NetworkError naming the URL", () =>
    Effect.gen(function*() {
      yield* inHost(Effect.flatMap(Effect.service(ProviderModels), (models) =>
        models.declare({ name: "nowhere", model: "m", base_url: "http://127.0.0.1:9/v1", api_key_env: "PARLEY_TEST_MODEL_KEY" })))
      const error = yield* Effect.flip(LanguageModel.generateText({ prompt: "hi" }).pipe(on("nowhere")))
      assert.strictEqual((error as AiError.AiError).reason._tag, "NetworkError")
      assert.include(error.message, "http://127.0.0.1:9/v1/chat/completions")
      assert.notInclude(JSON.stringify(error), SECRET)
      assert.notInclude(error.message, SECRET)
      yield* inHost(Effect.flatMap(Effect.service(ProviderModels), (models) => models.remove("nowhere")))
    }))

  it.live("a refused PARLEY_MODELS entry stops the host from starting, naming the entry and the field", () =>
    Effect.gen(function*() {
      const failure = yield* startMessagingHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer), {
        PARLEY_MODELS: JSON.stringify([{ name: "ok", model: "m", base_url: "http://localhost:1/v1" }, { name: "bad", model: "m", base_url: "ftp://x" }])
      }).pipe(Effect.scoped, Effect.flip)
      assert.strictEqual((failure as { readonly message: string }).message, "PARLEY_MODELS[1] (bad): base_url must be an http or https URL")
      const notJson = yield* startMessagingHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer), { PARLEY_MODELS: "{" }).pipe(
        Effect.scoped,
        Effect.flip
      )
      assert.match((notJson as { readonly message: string }).message, /^PARLEY_MODELS must be a JSON array of model declarations/)
    }))

  it.live("an inbound voice note gets its transcript from parley-sim, off the ingestion path", () =>
    Effect.gen(function*() {
      const number = yield* connectSimulatedNumber(host)
      const sent = yield* host.simulator.inbound(number.phoneNumberId, {
        from: "15550009001",
        message: { type: "audio", audio: { voice: true } },
        media: { bytes: new TextEncoder().encode("necesito ayuda con mi pedido"), mimeType: "audio/ogg" }
      })
      const messages = Context.get(host.context, MessagesRepo)
      const transcribed = yield* messages.findByNetworkId(number.phoneNumberId, sent.id).pipe(
        Effect.map(Option.filter((m) => m.transcript !== null)),
        Effect.flatMap(Effect.fromOption),
        Effect.retry({ schedule: Schedule.spaced("50 millis"), times: 200 })
      )
      assert.strictEqual(transcribed.transcript, "necesito ayuda con mi pedido")
      assert.match(transcribed.content!, /\nTranscript: necesito ayuda con mi pedido$/)
      const asked = (yield* inHost(Effect.service(ModelSimulator)).pipe(Effect.flatMap((sim) => sim.requests)))
        .filter((r) => r.path === "/audio/transcriptions")
      assert.deepStrictEqual(asked.map((r) => r.model), ["parley-sim"])
    }))

  it.live("the key never appears in an answer or a log line of the host", () =>
    Effect.sync(() => {
      assert.isAbove(host.logs.length, 0)
      for (const line of [...host.logs, ...host.answers]) assert.notInclude(line, SECRET)
    }))
})
