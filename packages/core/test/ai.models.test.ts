/**
 * The production adapter (`ai/OpenAiCompatible.ts`) over the in-process model
 * simulator: prompts, tools and call settings in the chat-completions wire
 * format, answers back as effect/ai responses, streaming, errors, and the
 * simulator's rules when nothing is scripted.
 */
import { assert, describe, it, layer } from "@effect/vitest"
import { Effect, Fiber, Schema, Stream } from "effect"
import { TestClock } from "effect/testing"
import { LanguageModel, Prompt, Tool, Toolkit } from "effect/ai"
import { ModelSimulator, ruleTurn } from "../src/simulators/model/ModelSimulator.ts"
import { LanguageModels, withCallSettings } from "../src/ai/LanguageModels.ts"
import { layerMemoryLanguageModels, memoryModelEndpoint } from "../src/testing/index.ts"

const GetWeather = Tool.make("get_weather", {
  description: "The forecast of a city",
  parameters: Schema.Struct({ city: Schema.String, days: Schema.Number })
})
const CompleteTask = Tool.make("complete_task", {
  description: "Ends the conversation",
  parameters: Schema.Struct({ summary: Schema.String })
})
const Tools = Toolkit.make(GetWeather, CompleteTask)

const modelOf = (upstream?: string) =>
  Effect.flatMap(Effect.service(LanguageModels), (models) => models.languageModel(memoryModelEndpoint(upstream)))

const withModel = (upstream?: string) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(modelOf(upstream), (model) => Effect.provideService(effect, LanguageModel.LanguageModel, model))

const streamWithModel = <A, E, R>(stream: Stream.Stream<A, E, R>) =>
  Stream.unwrap(Effect.map(modelOf(), (model) => Stream.provideService(stream, LanguageModel.LanguageModel, model)))

const lastRequest = Effect.map(Effect.service(ModelSimulator), (sim) => sim.requests).pipe(
  Effect.flatten,
  Effect.map((all) => all[all.length - 1]!)
)

describe("OpenAI-compatible adapter over the model simulator (in process)", () => {
  layer(layerMemoryLanguageModels())((it) => {
    it.effect("a plain prompt: the rule-driven answer quotes the user, with usage and finish reason", () =>
      Effect.gen(function*() {
        const response = yield* LanguageModel.generateText({ prompt: "hello there" }).pipe(withModel())
        assert.strictEqual(response.text, "You said: hello there")
        assert.strictEqual(response.finishReason, "stop")
        assert.strictEqual(response.usage.inputTokens.total, 2)
        const request = yield* lastRequest
        assert.deepStrictEqual(request.body, { model: "parley-sim", messages: [{ role: "user", content: "hello there" }] })
      }))

    it.effect("tools go out as functions; a tool call comes back; its result goes back as a tool message", () =>
      Effect.gen(function*() {
        const first = yield* LanguageModel.generateText({
          prompt: [{ role: "system", content: "You forecast." }, { role: "user", content: "get the weather in Paris for 3 days" }],
          toolkit: Tools,
          disableToolCallResolution: true
        }).pipe(withModel())
        const request = (yield* lastRequest).body as any
        assert.deepStrictEqual(request.tools.map((t: any) => [t.type, t.function.name, t.function.description]), [
          ["function", "get_weather", "The forecast of a city"],
          ["function", "complete_task", "Ends the conversation"]
        ])
        assert.deepStrictEqual(request.tools[0].function.parameters.required, ["city", "days"])
        assert.strictEqual(request.tool_choice, "auto")
        assert.strictEqual(first.finishReason, "tool-calls")
        const call = first.toolCalls[0]!
        assert.strictEqual(call.name, "get_weather")
        assert.deepStrictEqual(call.params, { city: "get the weather in Paris for 3 days", days: 3 })

        const prompt = Prompt.make([
          { role: "user", content: "get the weather in Paris for 3 days" },
          { role: "assistant", content: [{ type: "tool-call", id: call.id, name: call.name, params: call.params, providerExecuted: false }] },
          { role: "tool", content: [{ type: "tool-result", id: call.id, name: call.name, isFailure: false, result: { forecast: "sunny" } }] }
        ])
        const second = yield* LanguageModel.generateText({ prompt, toolkit: Tools, disableToolCallResolution: true }).pipe(withModel())
        assert.strictEqual(second.text, `Result of get_weather: {"forecast":"sunny"}`)
        const sent = ((yield* lastRequest).body as any).messages
        assert.deepStrictEqual(sent.slice(1), [
          { role: "assistant", content: null, tool_calls: [{ id: call.id, type: "function", function: { name: "get_weather", arguments: JSON.stringify(call.params) } }] },
          { role: "tool", tool_call_id: call.id, content: `{"forecast":"sunny"}` }
        ])
      }))

    it.effect("call settings (temperature, max_tokens, reasoning_effort) and tool choice travel on the request", () =>
      Effect.gen(function*() {
        yield* LanguageModel.generateText({ prompt: "hi", toolkit: Tools, toolChoice: { tool: "complete_task" }, disableToolCallResolution: true }).pipe(
          withModel(),
          withCallSettings({ temperature: 0.2, maxTokens: 50, reasoningEffort: "low" })
        )
        const body = (yield* lastRequest).body as any
        assert.strictEqual(body.temperature, 0.2)
        assert.strictEqual(body.max_tokens, 50)
        assert.strictEqual(body.reasoning_effort, "low")
        assert.deepStrictEqual(body.tool_choice, { type: "function", function: { name: "complete_task" } })
        yield* LanguageModel.generateText({ prompt: "hi", toolkit: Tools, toolChoice: { oneOf: ["get_weather"] }, disableToolCallResolution: true }).pipe(withModel())
        assert.deepStrictEqual(((yield* lastRequest).body as any).tools.map((t: any) => t.function.name), ["get_weather"])
      }))

    it.effect("scripted turns per model, first in first out; an error status becomes an AiError with the endpoint's message", () =>
      Effect.gen(function*() {
        const sim = yield* ModelSimulator
        yield* sim.script([{ text: "one" }, { error: { status: 500, message: "upstream exploded" } }], { model: "scripted" })
        const one = yield* LanguageModel.generateText({ prompt: "x" }).pipe(withModel("scripted"))
        assert.strictEqual(one.text, "one")
        const error = yield* LanguageModel.generateText({ prompt: "x" }).pipe(withModel("scripted"), Effect.flip)
        assert.strictEqual(error._tag, "AiError")
        assert.strictEqual(error.reason._tag, "InternalProviderError")
        assert.include(error.message, "HTTP 500")
        assert.include(error.message, "upstream exploded")
        // The queue is empty again: the rules answer.
        assert.strictEqual((yield* LanguageModel.generateText({ prompt: "x" }).pipe(withModel("scripted"))).text, "You said: x")
      }))

    it.effect("a scripted delay waits on the Clock", () =>
      Effect.gen(function*() {
        const sim = yield* ModelSimulator
        yield* sim.script([{ text: "late", delay_ms: 5_000 }], { model: "slow" })
        const fiber = yield* LanguageModel.generateText({ prompt: "x" }).pipe(withModel("slow"), Effect.forkChild)
        yield* TestClock.adjust("4 seconds")
        assert.isUndefined(fiber.pollUnsafe())
        yield* TestClock.adjust("1 second")
        assert.strictEqual((yield* Fiber.join(fiber)).text, "late")
      }))

    it.effect("streams text deltas and whole tool calls, then the finish", () =>
      Effect.gen(function*() {
        const sim = yield* ModelSimulator
        yield* sim.script([{ text: "Hello from the stream" }, { tool_calls: [{ name: "get_weather", arguments: { city: "Oslo", days: 2 } }] }])
        const parts = yield* Stream.runCollect(LanguageModel.streamText({ prompt: "go" }).pipe(streamWithModel))
        assert.isTrue((yield* lastRequest).stream)
        const text = parts.flatMap((p) => (p.type === "text-delta" ? [p.delta] : [])).join("")
        assert.strictEqual(text, "Hello from the stream")
        assert.isTrue(parts.filter((p) => p.type === "text-delta").length > 1)
        assert.strictEqual(parts[parts.length - 1]!.type, "finish")

        const calls = (
          yield* Stream.runCollect(LanguageModel.streamText({ prompt: "go", toolkit: Tools, disableToolCallResolution: true }).pipe(streamWithModel))
        ).flatMap((p) => (p.type === "tool-call" ? [p] : []))
        assert.deepStrictEqual(calls.map((c) => [c.name, c.params]), [["get_weather", { city: "Oslo", days: 2 }]])
      }))

    it.effect("rules: farewells complete the task, label lists pick the closest label", () =>
      Effect.gen(function*() {
        const done = yield* LanguageModel.generateText({ prompt: "thanks, that's all", toolkit: Tools, disableToolCallResolution: true }).pipe(withModel())
        assert.strictEqual(done.toolCalls[0]!.name, "complete_task")
        const label = yield* LanguageModel.generateText({
          prompt: [
            { role: "system", content: "Answer with exactly one label:\n- billing: invoices and payments\n- shipping: where is my order\n- other" },
            { role: "user", content: "I want to know where my order is" }
          ]
        }).pipe(withModel())
        assert.strictEqual(label.text, "shipping")
      }))

    it.effect("transcribes: UTF-8 text to itself, other bytes to a placeholder", () =>
      Effect.gen(function*() {
        const models = yield* LanguageModels
        const endpoint = memoryModelEndpoint("whisper-sim")
        const text = yield* models.transcribe(endpoint, { bytes: new TextEncoder().encode("hola, ¿qué tal?"), mimeType: "audio/ogg", filename: "a.ogg" })
        assert.strictEqual(text, "hola, ¿qué tal?")
        const audio = yield* models.transcribe(endpoint, { bytes: new Uint8Array([0, 159, 146, 150, 1, 2]), mimeType: "audio/ogg", filename: "a.ogg" })
        assert.strictEqual(audio, "[voice note 6 bytes]")
        assert.deepStrictEqual((yield* lastRequest).model, "whisper-sim")
      }))
  })
})

describe("the model simulator's rules", () => {
  it("reads a knowledge base's result as the words of its passages", () => {
    const turn = ruleTurn({
      model: "parley-sim",
      messages: [
        { role: "user", content: "When are you open?" },
        { role: "assistant", content: null, tool_calls: [{ id: "c1", function: { name: "hours", arguments: "{}" } }] },
        { role: "tool", tool_call_id: "c1", content: JSON.stringify({ passages: ["Opening hours\n\nMonday to Friday 9:00 to 17:00."] }) }
      ]
    } as Parameters<typeof ruleTurn>[0])
    assert.strictEqual(turn.text, "Result of hours: Opening hours Monday to Friday 9:00 to 17:00.")
  })
})
