/**
 * Experiments and drop-off (issue 32 §4). An experiment is a split node: its branches and weights, its goal, and
 * per branch the runs that entered, the ones that reached the goal, and the conversion with its 95 % Wilson score
 * interval (docs/decisions.md, "Workflow lifecycle"). The drop-off of a workflow: per node, the runs that entered
 * it, left it, and wait on it now.
 */
import { Context, Effect, Layer, Schema } from "effect"
import type { Principal } from "../../projects/Projects.ts"
import { type NotFound, notFound } from "../../shared/ApiError.ts"
import { Workflows } from "../../workflows/Workflows.ts"
import { SplitGoal, splitConfig } from "../nodes/SplitNode.ts"
import { WorkflowStatsRepo } from "./WorkflowStatsRepo.ts"

const Z95 = 1.959963984540054

/** The Wilson score interval of `successes` in `trials` at 95 %; null without trials. */
export const wilson = (successes: number, trials: number): { readonly low: number; readonly high: number } | null => {
  if (trials === 0) return null
  const p = successes / trials
  const z2 = Z95 * Z95
  const denominator = 1 + z2 / trials
  const center = (p + z2 / (2 * trials)) / denominator
  const half = (Z95 * Math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials))) / denominator
  // At 0 or all successes the bound is exactly 0 or 1; floating point would leave a trace either side.
  return { low: successes === 0 ? 0 : Math.max(0, center - half), high: successes === trials ? 1 : Math.min(1, center + half) }
}

export const ExperimentBranch = Schema.Struct({
  label: Schema.String,
  weight: Schema.Finite,
  entries: Schema.Int.annotate({ description: "Runs assigned to the branch" }),
  conversions: Schema.Int.annotate({ description: "Of those, runs that reached the goal after their assignment" }),
  conversion_rate: Schema.NullOr(Schema.Finite).annotate({ description: "conversions / entries; null without entries" }),
  confidence_interval: Schema.NullOr(Schema.Struct({
    method: Schema.Literal("wilson"),
    level: Schema.Finite,
    low: Schema.Finite,
    high: Schema.Finite
  })).annotate({ description: "The 95 % Wilson score interval of the conversion; null without entries" })
})

export const Experiment = Schema.Struct({
  workflow_id: Schema.String,
  node_id: Schema.String,
  name: Schema.String,
  goal: Schema.NullOr(SplitGoal),
  branches: Schema.Array(ExperimentBranch)
})
export type Experiment = typeof Experiment.Type

export const NodeDropOff = Schema.Struct({
  node_id: Schema.String,
  node_type: Schema.NullOr(Schema.String).annotate({ description: "Null for a node the current definition no longer has" }),
  entered: Schema.Int,
  left: Schema.Int,
  waiting: Schema.Int,
  dropped: Schema.Int.annotate({ description: "Entered, neither left nor waiting: runs that ended or failed there" })
})
export type NodeDropOff = typeof NodeDropOff.Type

export class Experiments extends Context.Service<Experiments, {
  readonly get: (principal: Principal, workflowId: string, nodeId: string) => Effect.Effect<Experiment, NotFound>
  readonly dropOff: (principal: Principal, workflowId: string) => Effect.Effect<ReadonlyArray<NodeDropOff>, NotFound>
}>()("@parley/core/executions/Experiments") {
  static readonly layer = Layer.effect(
    Experiments,
    Effect.gen(function*() {
      const workflows = yield* Workflows
      const stats = yield* WorkflowStatsRepo

      return Experiments.of({
        get: Effect.fn("Experiments.get")(function*(principal: Principal, workflowId: string, nodeId: string) {
          const workflow = yield* workflows.get(principal, workflowId)
          const node = workflow.definition.nodes.find((n) => n.id === nodeId && n.data.node_type === "split")
          if (node === undefined) return yield* notFound("Experiment", nodeId)
          const config = splitConfig(node.data.config)
          const goal = config.goal ?? null
          const counts = new Map((yield* stats.splitCounts(workflow.project_id, workflow.id, node.id, goal)).map((c) => [c.branch, c] as const))
          return {
            workflow_id: workflow.id,
            node_id: node.id,
            name: config.experiment ?? node.id,
            goal,
            branches: config.branches.map((b) => {
              const c = counts.get(b.label) ?? { entries: 0, conversions: 0 }
              const interval = wilson(c.conversions, c.entries)
              return {
                label: b.label,
                weight: b.weight,
                entries: c.entries,
                conversions: c.conversions,
                conversion_rate: c.entries === 0 ? null : c.conversions / c.entries,
                confidence_interval: interval === null ? null : { method: "wilson" as const, level: 0.95, ...interval }
              }
            })
          }
        }),
        dropOff: Effect.fn("Experiments.dropOff")(function*(principal: Principal, workflowId: string) {
          const workflow = yield* workflows.get(principal, workflowId)
          const flows = new Map((yield* stats.nodeFlow(workflow.project_id, workflow.id)).map((f) => [f.node_id, f] as const))
          const current = workflow.definition.nodes.map((n) => ({ id: n.id, type: n.data.node_type as string | null }))
          const gone = [...flows.keys()].filter((id) => !current.some((n) => n.id === id)).map((id) => ({ id, type: null }))
          return [...current, ...gone].map((n) => {
            const f = flows.get(n.id) ?? { entered: 0, left: 0, waiting: 0 }
            return {
              node_id: n.id,
              node_type: n.type,
              entered: f.entered,
              left: f.left,
              waiting: f.waiting,
              dropped: Math.max(0, f.entered - f.left - f.waiting)
            }
          })
        })
      })
    })
  )
}
