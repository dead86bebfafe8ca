/** Functions' `FunctionReferrers` answered from the stored workflows. */
import { Effect, Layer, Option } from "effect"
import { FunctionReferrers } from "../functions/FunctionReferrers.ts"
import type { WorkflowRecord, WorkflowStatus } from "./Workflow.ts"
import { WorkflowsRepo } from "./WorkflowsRepo.ts"

/** Workflow nodes and agent tools that call the function: function nodes, function decides, agent function tools. */
export const workflowReferencesFunction = (workflow: WorkflowRecord, functionId: string): boolean =>
  workflow.definition.nodes.some((node) => {
    const config = node.data.config
    switch (node.data.node_type) {
      case "function":
      case "decide":
        return config.function_id === functionId
      case "agent": {
        const tools = config.flow_agent_function_tools
        return Array.isArray(tools) &&
          tools.some((tool) => typeof tool === "object" && tool !== null && (tool as { function_id?: unknown }).function_id === functionId)
      }
      default:
        return false
    }
  })

const allStatuses: ReadonlyArray<WorkflowStatus> = ["draft", "active", "archived"]

export const layerFunctionReferrers = Layer.effect(
  FunctionReferrers,
  Effect.gen(function*() {
    const workflows = yield* WorkflowsRepo
    return FunctionReferrers.of({
      first: Effect.fnUntraced(function*(projectId: string, id: string) {
        for (const status of allStatuses) {
          for (let page = 1;; page++) {
            const slice = yield* workflows.list(projectId, { status }, { mode: "page", page, perPage: 100 })
            const found = slice.items.find((w) => workflowReferencesFunction(w, id))
            if (found !== undefined) return Option.some(found)
            if (page * 100 >= slice.total) break
          }
        }
        return Option.none<WorkflowRecord>()
      })
    })
  })
)
