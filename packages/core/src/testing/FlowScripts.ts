/**
 * Conversation scripts (docs/testing.md): a workflow test written as data, in
 * JSON or YAML, beside the workflow it tests (a file holding the JSON body of
 * `POST /platform/v1/workflows`). Each script runs on the workflow test kit
 * over a fresh Parley on memory ports and its own `TestClock`: no database,
 * no network. `parley test <files...>` runs them; another transport can call
 * `runFlowScriptFiles` the same way.
 */
import { Duration, Effect, FileSystem, Option, Path, References, Schema } from "effect"
import { TestClock } from "effect/testing"
import * as Yaml from "yaml"
import { ExecutionStatus } from "../index.ts"
import { layerMemoryParley } from "./MemoryParley.ts"
import { compareFacts, nodeFacts } from "./Recording.ts"
import { describeExpected, ExpectedMessage } from "./SentMessages.ts"
import { FlowExpectationFailed, testWorkflow, type WorkflowKitOptions, type WorkflowUnderTest } from "./WorkflowKit.ts"

const JsonObject = Schema.Record(Schema.String, Schema.Unknown)
const MediaType = Schema.Literals(["image", "video", "audio", "document", "sticker"])

/** One step: an object with one key saying what the contact does, or what must hold. */
export const FlowStep = Schema.Union([
  Schema.Struct({ say: Schema.String }),
  Schema.Struct({ say_at_once: Schema.Array(Schema.String) }),
  Schema.Struct({ tap: Schema.String }),
  Schema.Struct({ pick: Schema.String }),
  Schema.Struct({ send: Schema.Struct({ media: MediaType, caption: Schema.optionalKey(Schema.String), filename: Schema.optionalKey(Schema.String) }) }),
  Schema.Struct({ start: Schema.Struct({ variables: Schema.optionalKey(JsonObject) }) }),
  Schema.Struct({ wait: Schema.Union([Schema.Finite, Schema.String]) }),
  Schema.Struct({ expect: Schema.Union([Schema.String, ExpectedMessage]) }),
  Schema.Struct({ expect_no_reply: Schema.Literal(true) }),
  Schema.Struct({ expect_path: Schema.Array(Schema.String) }),
  Schema.Struct({ expect_edges: Schema.Array(Schema.String) }),
  Schema.Struct({ expect_vars: JsonObject }),
  Schema.Struct({ expect_status: ExecutionStatus }),
  Schema.Struct({ expect_events: Schema.Array(Schema.String) })
])
export type FlowStep = typeof FlowStep.Type

const ModelTurnSchema = Schema.Struct({
  text: Schema.optionalKey(Schema.String),
  tool_calls: Schema.optionalKey(Schema.Array(Schema.Struct({ name: Schema.String, arguments: Schema.Unknown }))),
  error: Schema.optionalKey(Schema.Struct({ status: Schema.Int, message: Schema.String })),
  delay_ms: Schema.optionalKey(Schema.Finite)
})

/** A conversation script. `workflow` is a path relative to the script's file. */
export const FlowScript = Schema.Struct({
  name: Schema.optionalKey(Schema.String),
  workflow: Schema.String,
  contact: Schema.optionalKey(Schema.Struct({ phone: Schema.optionalKey(Schema.String), name: Schema.optionalKey(Schema.String) })),
  trigger: Schema.optionalKey(Schema.Literals(["inbound_message", "api"])),
  functions: Schema.optionalKey(Schema.Record(
    Schema.String,
    Schema.Union([
      Schema.Struct({ code: Schema.String }),
      Schema.Struct({ answer: Schema.Unknown, status: Schema.optionalKey(Schema.Int) }),
      Schema.Struct({ answers: Schema.Array(Schema.Unknown) })
    ])
  )),
  templates: Schema.optionalKey(Schema.Record(Schema.String, Schema.Record(Schema.String, Schema.Unknown))),
  webhooks: Schema.optionalKey(Schema.Array(Schema.Struct({
    url: Schema.optionalKey(Schema.String),
    status: Schema.optionalKey(Schema.Int),
    body: Schema.optionalKey(Schema.Unknown)
  }))),
  model: Schema.optionalKey(Schema.Array(ModelTurnSchema)),
  models: Schema.optionalKey(Schema.Array(Schema.String)),
  steps: Schema.Array(FlowStep),
  /** What each node did in a recorded run (`parley test-export`): after the steps, the replay must do the same. */
  recorded: Schema.optionalKey(Schema.Record(Schema.String, Schema.Array(Schema.String)))
})
export type FlowScript = typeof FlowScript.Type

/** Unknown keys are mistakes (a misspelt step would otherwise check nothing). */
const decodeScript = Schema.decodeUnknownEffect(FlowScript)

/** What one script came to: every step held, or the first that did not. */
export type FlowScriptResult =
  | { readonly name: string; readonly ok: true; readonly steps: number }
  | {
    readonly name: string
    readonly ok: false
    /** 1-based; 0 when the script or its workflow could not be set up. */
    readonly step: number
    readonly action: string
    readonly message: string
  }

/** One line naming a step, for reports. */
export const describeStep = (step: FlowStep): string => {
  if ("expect" in step) return `expect ${typeof step.expect === "string" ? `text ${JSON.stringify(step.expect)}` : describeExpected(step.expect)}`
  const [[key, value]] = Object.entries(step) as [[string, unknown]]
  return `${key} ${JSON.stringify(value)}`
}

// Not the sandbox number itself (+1 555-010-0001): the network refuses a message to its sender.
const DEFAULT_PHONE = "+15557650001"

const runStep = (flow: WorkflowUnderTest, contact: Effect.Success<ReturnType<WorkflowUnderTest["contact"]>>, step: FlowStep) =>
  "say" in step
    ? contact.says(step.say)
    : "say_at_once" in step
    ? contact.saysAtOnce(step.say_at_once)
    : "tap" in step
    ? contact.taps(step.tap)
    : "pick" in step
    ? contact.picks(step.pick)
    : "send" in step
    ? contact.sends(step.send.media, step.send)
    : "start" in step
    ? Effect.asVoid(flow.start(contact, step.start.variables ?? {}))
    : "wait" in step
    ? Option.match(typeof step.wait === "number" ? Option.some(Duration.seconds(step.wait)) : Duration.fromInput(step.wait as Duration.Input), {
      onNone: () => Effect.fail(new FlowExpectationFailed({ message: `${JSON.stringify(step.wait)} is not a duration (seconds, or e.g. "1 hour")` })),
      onSome: flow.advance
    })
    : "expect" in step
    ? Effect.asVoid(contact.expectReply(typeof step.expect === "string" ? { text: step.expect } : step.expect))
    : "expect_no_reply" in step
    ? contact.expectNoReply
    : "expect_path" in step
    ? flow.expectPath(step.expect_path)
    : "expect_edges" in step
    ? flow.expectEdges(step.expect_edges)
    : "expect_vars" in step
    ? flow.expectVars(step.expect_vars)
    : "expect_status" in step
    ? flow.expectStatus(step.expect_status)
    : flow.expectEvents(step.expect_events)

/**
 * Runs one decoded script against a workflow body, on a fresh Parley over memory ports and a `TestClock` of its own
 * (logs below `Error` are dropped: the report says what matters).
 */
export const runFlowScript = Effect.fn("FlowScripts.run")(function*(name: string, script: FlowScript, workflowBody: unknown) {
  const options: WorkflowKitOptions = {
    ...(script.trigger === undefined ? {} : { trigger: script.trigger }),
    ...(script.functions === undefined ? {} : { functions: script.functions }),
    ...(script.templates === undefined ? {} : { templates: script.templates }),
    ...(script.webhooks === undefined ? {} : { webhooks: script.webhooks }),
    ...(script.model === undefined ? {} : { model: script.model }),
    ...(script.models === undefined ? {} : { models: script.models })
  }
  const setUp = Effect.gen(function*() {
    const flow = yield* testWorkflow(workflowBody, options)
    const contact = yield* flow.contact(script.contact?.phone ?? DEFAULT_PHONE, script.contact?.name)
    return { flow, contact }
  })
  const run = Effect.gen(function*() {
    const set = yield* Effect.result(setUp)
    if (set._tag === "Failure") {
      return { name, ok: false, step: 0, action: "set up the workflow", message: set.failure.message } satisfies FlowScriptResult
    }
    const { contact, flow } = set.success
    for (const [i, step] of script.steps.entries()) {
      // A defect (a bug, or code the kit could not run) fails the step too, so the report still names it.
      const outcome = yield* Effect.result(runStep(flow, contact, step).pipe(
        Effect.catchDefect((defect) => Effect.fail(new FlowExpectationFailed({ message: `unexpected error: ${String(defect)}` })))
      ))
      if (outcome._tag === "Failure") {
        return { name, ok: false, step: i + 1, action: describeStep(step), message: outcome.failure.message } satisfies FlowScriptResult
      }
    }
    if (script.recorded !== undefined) {
      const differences = compareFacts(script.recorded, nodeFacts(yield* Effect.orDie(flow.events)))
      if (differences.length > 0) {
        return {
          name,
          ok: false,
          step: script.steps.length + 1,
          action: "compare with the recording",
          message: differences.join("\n    ")
        } satisfies FlowScriptResult
      }
    }
    return { name, ok: true, steps: script.steps.length } satisfies FlowScriptResult
  })
  return yield* run.pipe(
    Effect.provide(layerMemoryParley),
    Effect.provide(TestClock.layer()),
    Effect.provideService(References.MinimumLogLevel, "Error"),
    Effect.scoped
  )
})

const isYaml = (file: string) => /\.ya?ml$/i.test(file)

/** Reads a JSON or YAML file (by its extension; YAML is a superset of JSON, so anything else is read as YAML too). */
const readData = Effect.fn("FlowScripts.readData")(function*(file: string) {
  const text = yield* (yield* FileSystem.FileSystem).readFileString(file)
  return yield* Effect.try({
    try: () => (isYaml(file) ? Yaml.parse(text) as unknown : JSON.parse(text) as unknown),
    catch: (e) => new FlowExpectationFailed({ message: `${file} is not valid ${isYaml(file) ? "YAML" : "JSON"}: ${String(e)}` })
  })
})

/** Reads, decodes and runs each script file, in order; a file that cannot be read or decoded is a failed script. */
export const runFlowScriptFiles = Effect.fn("FlowScripts.runFiles")(function*(files: ReadonlyArray<string>) {
  const path = yield* Path.Path
  const results: Array<FlowScriptResult & { readonly file: string }> = []
  for (const file of files) {
    const result = yield* Effect.gen(function*() {
      const data = yield* readData(file)
      const script = yield* decodeScript(data, { onExcessProperty: "error" }).pipe(
        // A step matches none of the union's members: each says the same; once is enough.
        Effect.mapError((e) =>
          new FlowExpectationFailed({
            message: `${file} is not a conversation script: ${[...new Set(e.message.split("\n").map((l) => l.trim()))].join(" ")}`
          })
        )
      )
      const workflow = yield* readData(path.resolve(path.dirname(file), script.workflow))
      return yield* runFlowScript(script.name ?? path.basename(file), script, workflow)
    }).pipe(
      Effect.catch((e) =>
        Effect.succeed<FlowScriptResult>({
          name: path.basename(file),
          ok: false,
          step: 0,
          action: "read the script",
          message: "message" in e ? String(e.message) : String(e)
        })
      )
    )
    results.push({ ...result, file })
  }
  return results
})

/** The report `parley test` prints: one line per script, the failing step and why under it. */
export const formatFlowResults = (results: ReadonlyArray<FlowScriptResult & { readonly file: string }>): string => {
  const lines = results.flatMap((r) =>
    r.ok
      ? [`✓ ${r.file}: ${r.name} (${r.steps} steps)`]
      : [`✗ ${r.file}: ${r.name}`, `  step ${r.step} (${r.action}): ${r.message}`]
  )
  const failed = results.filter((r) => !r.ok).length
  const scripts = `${results.length} script${results.length === 1 ? "" : "s"}`
  lines.push(failed === 0 ? `${scripts} passed` : `${failed} of ${scripts} failed`)
  return lines.join("\n")
}
