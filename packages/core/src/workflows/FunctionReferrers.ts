/** Functions' `FunctionReferrers` answered from the references stored with the workflows. */
import { Effect, Layer, Option } from "effect"
import { FunctionReferrers } from "../functions/FunctionReferrers.ts"
import type { WorkflowStatus } from "./Workflow.ts"
import { WorkflowsRepo } from "./WorkflowsRepo.ts"

/** Drafts first, then active, then archived workflows, newest first within each: the one a refusal names. */
const allStatuses: ReadonlyArray<WorkflowStatus> = ["draft", "active", "archived"]

export const layerFunctionReferrers = Layer.effect(
  FunctionReferrers,
  Effect.gen(function*() {
    const workflows = yield* WorkflowsRepo
    return FunctionReferrers.of({
      first: (projectId, functionId) =>
        Effect.map(
          workflows.referrers(projectId, { kind: "function", target: functionId }, allStatuses, 1),
          (found) => Option.fromNullishOr(found[0])
        )
    })
  })
)
