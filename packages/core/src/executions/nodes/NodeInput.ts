/** What a node step gets, and the small helpers every node uses. */
import { Effect, Predicate } from "effect"
import type { Node } from "../../workflows/Workflow.ts"
import type { ExecutionContext, ExecutionRecord } from "../Execution.ts"
import type { Graph } from "../Graph.ts"
import { interpolateText, interpolateValue, type Secrets } from "../Interpolation.ts"
import { type EventDraft, StepFailed } from "../Step.ts"

export interface StepInput {
  readonly execution: ExecutionRecord
  readonly graph: Graph
  readonly node: Node
  readonly secrets: Secrets
  readonly now: string
  /** `send_text` whose delay already passed. */
  readonly afterDelay: boolean
}

export const str = (u: unknown): string | undefined => (Predicate.isString(u) && u.length > 0 ? u : undefined)
export const num = (u: unknown): number | undefined => (Predicate.isNumber(u) && Number.isFinite(u) ? u : undefined)

export const fail = (message: string, code?: string, events?: ReadonlyArray<EventDraft>) =>
  Effect.fail(new StepFailed({ message, code, events }))

/** Interpolation failures (an unknown `${ENV:NAME}`) fail the step with their message. */
export const text = (template: string, ctx: ExecutionContext, secrets: Secrets) =>
  interpolateText(template, ctx, secrets).pipe(Effect.mapError((e) => new StepFailed({ message: e.message })))
export const value = (template: unknown, ctx: ExecutionContext, secrets: Secrets) =>
  interpolateValue(template, ctx, secrets).pipe(Effect.mapError((e) => new StepFailed({ message: e.message })))

export const withVars = (ctx: ExecutionContext, vars: Readonly<Record<string, unknown>>): ExecutionContext =>
  Object.keys(vars).length === 0 ? ctx : { ...ctx, vars: { ...ctx.vars, ...vars } }

/** The emitter's `system.event_chain_depth` (decisions 2.4.2): events it emits carry it (10.1). */
export const chainDepthOf = (e: ExecutionRecord): number => num(e.execution_context.system.event_chain_depth) ?? 0
