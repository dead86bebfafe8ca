/**
 * The split node (issue 32 §4): picks one of its weighted branches, the same one every time for a contact (a hash of
 * workflow, node and contact: no stored assignment, the same answer on every host and after every edit that keeps
 * the node), and records the pick in the step log (`split_assigned`, and the `step_completed` edge label) where the
 * experiment's report counts it. A run without a contact is placed by its own id.
 */
import { Effect, Option, Schema } from "effect"
import { stickyPoint } from "../../workflows/Revision.ts"
import type { StepOutcome } from "../Step.ts"
import type { StepInput } from "./NodeInput.ts"

/** An experiment's goal: a project event in the run's conversation, a node the run reaches, or a reply. */
export const SplitGoal = Schema.Union([
  Schema.Struct({ type: Schema.Literal("event"), event_name: Schema.String }),
  Schema.Struct({ type: Schema.Literal("node"), node_id: Schema.String }),
  Schema.Struct({ type: Schema.Literal("reply") })
])
export type SplitGoal = typeof SplitGoal.Type

const Branch = Schema.Struct({ label: Schema.String, weight: Schema.Finite })
type Branch = typeof Branch.Type

/** A split node's config as the validator stored it (`NodeConfigs.split`). */
export const SplitConfig = Schema.Struct({
  experiment: Schema.optionalKey(Schema.NullOr(Schema.String)),
  branches: Schema.Array(Branch),
  goal: Schema.optionalKey(Schema.NullOr(SplitGoal))
})
export type SplitConfig = typeof SplitConfig.Type

export const splitConfig = (config: unknown): SplitConfig =>
  Option.getOrElse(Schema.decodeUnknownOption(SplitConfig)(config), () => ({ branches: [] }))

/** The branch at `point` (in [0, 1)) of the branches laid end to end by weight. */
export const pickBranch = (branches: ReadonlyArray<Branch>, point: number): Branch | undefined => {
  const total = branches.reduce((sum, b) => sum + b.weight, 0)
  let edge = 0
  for (const branch of branches) {
    edge += branch.weight / total
    if (point < edge) return branch
  }
  return branches.at(-1)
}

export const splitNode = (input: StepInput): Effect.Effect<StepOutcome> => {
  const { execution, node } = input
  const config = splitConfig(node.data.config)
  const experiment = config.experiment ?? node.id
  const subject = execution.contact_id ?? execution.id
  const branch = pickBranch(config.branches, stickyPoint(`split:${execution.workflow_id}:${node.id}:${subject}`))
  return Effect.succeed({
    context: execution.execution_context,
    events: [{ event_type: "split_assigned", payload: { experiment, branch: branch?.label ?? null } }],
    next: { _tag: "Follow", label: branch?.label ?? "", noEdge: "no_edge" }
  })
}
