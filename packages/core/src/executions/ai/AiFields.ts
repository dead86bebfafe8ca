/**
 * AI fields (decisions 2.3.14): a string field of a send or webhook node
 * holding `{"$ai": {}}` gets its value from the node's model at run time,
 * following `ai_field_config.<field>.prompt` (interpolated). Values are
 * generated once per step visit: a webhook's pending request keeps them, so
 * the request made is the one logged.
 */
import { Effect, Predicate } from "effect"
import { Prompt } from "effect/ai"
import { isAiMarker } from "../../workflows/NodeConfigs.ts"
import type { Node } from "../../workflows/Workflow.ts"
import { interpolateText } from "../Interpolation.ts"
import type { StepInput } from "../nodes/NodeInput.ts"
import { StepFailed } from "../Step.ts"
import { recentMessages } from "../agent/BuiltInTools.ts"
import { callSettings, generateText, modelFailure, nodeModel } from "./ModelCall.ts"

/** The fields of a node that may hold AI markers (decisions 2.3.14). */
export const aiFieldsOf = (node: Node): ReadonlyArray<string> => {
  switch (node.data.node_type) {
    case "send_text":
      return ["message"]
    case "send_template":
      return ["parameters"]
    case "webhook":
      return ["url", "headers", "body_template"]
    default:
      return Object.keys(node.data.config).filter((k) => k !== "ai_field_config")
  }
}

/** Dotted paths (`body_template.customer.note`) of the markers inside `fields` of a config. */
export const aiFieldPaths = (config: Readonly<Record<string, unknown>>, fields: ReadonlyArray<string>): ReadonlyArray<string> => {
  const out: Array<string> = []
  const walk = (v: unknown, path: string): void => {
    if (isAiMarker(v)) out.push(path)
    else if (Array.isArray(v)) v.forEach((item, i) => walk(item, `${path}.${i}`))
    else if (Predicate.isObject(v)) for (const [k, item] of Object.entries(v)) walk(item, `${path}.${k}`)
  }
  for (const f of fields) walk(config[f], f)
  return out
}

const setPath = (root: unknown, keys: ReadonlyArray<string>, value: string): unknown => {
  if (keys.length === 0) return value
  const [head, ...rest] = keys as [string, ...Array<string>]
  if (Array.isArray(root)) return root.map((item, i) => (String(i) === head ? setPath(item, rest, value) : item))
  const obj = Predicate.isObject(root) ? root as Record<string, unknown> : {}
  return { ...obj, [head]: setPath(obj[head], rest, value) }
}

/** The node with generated values in place of its markers. */
export const withAiValues = (node: Node, values: Readonly<Record<string, string>> | undefined): Node =>
  values === undefined || Object.keys(values).length === 0 ? node : {
    ...node,
    data: {
      ...node.data,
      config: Object.entries(values).reduce(
        (config, [path, value]) => setPath(config, path.split("."), value) as Record<string, unknown>,
        node.data.config as unknown
      ) as Node["data"]["config"]
    }
  }

const SYSTEM = "You write the value of one field of a message or an HTTP request. Answer with the value only: no quotes, no explanations."

/** A value for each marker in `fields`, written by the node's model. */
export const generateAiFields = Effect.fnUntraced(function*(input: StepInput, fields: ReadonlyArray<string>) {
  const config = input.node.data.config
  const paths = aiFieldPaths(config, fields)
  if (paths.length === 0) return {} as Record<string, string>
  const e = input.execution
  const model = yield* nodeModel(config)
  const aiConfig = Predicate.isObject(config.ai_field_config) ? config.ai_field_config as Record<string, unknown> : {}
  const transcript = e.msg_conversation_id === null
    ? []
    : (yield* recentMessages(e, e.msg_conversation_id, 20)).map((m) => `${m.direction === "inbound" ? "Contact" : "Business"}: ${m.content ?? `[${m.type}]`}`)
  const values: Record<string, string> = {}
  for (const path of paths) {
    const entry = aiConfig[path]
    const instructions = Predicate.isObject(entry) && Predicate.isString((entry as Record<string, unknown>).prompt)
      ? (entry as Record<string, unknown>).prompt as string
      : ""
    const prompt = yield* interpolateText(instructions, e.execution_context, input.secrets).pipe(
      Effect.mapError((err) => new StepFailed({ message: err.message }))
    )
    const user = [
      `Field: ${path}`,
      `Instructions: ${prompt}`,
      ...(transcript.length > 0 ? ["", "Recent messages, oldest first:", ...transcript] : []),
      "",
      `Variables: ${JSON.stringify(e.execution_context.vars)}`
    ].join("\n")
    const answer = yield* generateText(model, callSettings(model, { temperature: 0 }), Prompt.make([
      { role: "system", content: SYSTEM },
      { role: "user", content: user }
    ])).pipe(Effect.mapError((error) => new StepFailed({ message: `AI field ${path}: ${modelFailure(model, error)}`, code: "model_error" })))
    values[path] = answer.trim()
  }
  return values
})
