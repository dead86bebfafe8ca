/** What a node step gets, and the small helpers every node uses. */
import { Effect, Schema } from "effect"
import { OptionalFinite, OptionalText } from "../../shared/Json.ts"
import type { Node } from "../../workflows/Workflow.ts"
import type { MessageConfigRecord } from "../../messaging/numbers/MessageConfig.ts"
import type { ExecutionContext, ExecutionRecord } from "../Execution.ts"
import type { Graph } from "../Graph.ts"
import { interpolateText, interpolateValue, type Secrets, withMoreVars } from "../Interpolation.ts"
import { type EventDraft, StepFailed } from "../Step.ts"

export interface StepInput {
  readonly execution: ExecutionRecord
  readonly graph: Graph
  readonly node: Node
  readonly secrets: Secrets
  readonly now: string
  /** `send_text` whose delay already passed. */
  readonly afterDelay: boolean
  /** The run's number as its starter read it a moment ago (`KickOptions.sender`), for a send from it. */
  readonly sender?: MessageConfigRecord | undefined
}

/**
 * A decode remembered per object decoded: a cached graph's node configs (and a run's context) are read again at
 * every step, and decoding a config's texts each time cost a chain of `set_variable` ~2.5% of the host's CPU. The
 * objects are never changed (records and graphs are replaced, not mutated).
 */
const perObject = <A>(decode: (input: unknown) => A) => {
  const known = new WeakMap<object, A>()
  return (input: unknown): A => {
    if (input === null || typeof input !== "object") return decode(input)
    const found = known.get(input)
    if (found !== undefined) return found
    const decoded = decode(input)
    known.set(input, decoded)
    return decoded
  }
}

/** The optional text fields node configs hold (the validator checked their shape on save), each absent when empty. */
export const NodeConfigTexts = Schema.Struct({
  function_id: OptionalText,
  save_response_to: OptionalText,
  decision_type: OptionalText,
  phone_number_id: OptionalText,
  msg_config_id: OptionalText,
  to_phone_number: OptionalText,
  template_id: OptionalText,
  method: OptionalText,
  workflow_id: OptionalText,
  value_type: OptionalText,
  occurred_at: OptionalText,
  reason: OptionalText,
  /** A decide condition's. */
  description: OptionalText
})
export const configTexts = perObject(Schema.decodeUnknownSync(NodeConfigTexts))
/** Who the run talks to (`context`) and what started it (`system`), each absent when empty. */
export const ContextTexts = Schema.Struct({ phone_number: OptionalText, recipient: OptionalText, trigger_msg_config_id: OptionalText })
export const contextTexts = perObject(Schema.decodeUnknownSync(ContextTexts))
/** The numbers the engine reads of a node's config (checked when the workflow was saved), each absent unless finite. */
export const NodeConfigNumbers = Schema.Struct({ timeout_seconds: OptionalFinite, delay_seconds: OptionalFinite })
export const configNumbers = perObject(Schema.decodeUnknownSync(NodeConfigNumbers))
/** How deep in a chain of event-started runs this one is (`system.event_chain_depth`), absent at the top. */
const chainDepth = Schema.decodeUnknownSync(Schema.Struct({ event_chain_depth: OptionalFinite }))

export const fail = (message: string, code?: string, events?: ReadonlyArray<EventDraft>) =>
  Effect.fail(new StepFailed({ message, code, events }))

/** Interpolation failures (an unknown `${ENV:NAME}`) fail the step with their message. */
export const text = (template: string, ctx: ExecutionContext, secrets: Secrets) =>
  interpolateText(template, ctx, secrets).pipe(Effect.mapError((e) => new StepFailed({ message: e.message })))
export const value = (template: unknown, ctx: ExecutionContext, secrets: Secrets) =>
  interpolateValue(template, ctx, secrets).pipe(Effect.mapError((e) => new StepFailed({ message: e.message })))

export const withVars = (ctx: ExecutionContext, vars: Readonly<Record<string, unknown>>): ExecutionContext =>
  Object.keys(vars).length === 0 ? ctx : withMoreVars(ctx, vars)

/** The emitter's `system.event_chain_depth` (decisions 2.4.2): events it emits carry it (10.1). */
export const chainDepthOf = (e: ExecutionRecord): number => chainDepth(e.execution_context.system).event_chain_depth ?? 0
