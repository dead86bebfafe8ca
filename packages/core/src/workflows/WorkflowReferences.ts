/**
 * What a workflow's current definition calls: the functions its nodes and agent tools run and the workflows its
 * `call` nodes start. Each adapter of `WorkflowsRepo` stores them with every write of the definition, so "who calls
 * function F / workflow W" is a keyed read, not a decode of every graph of the project (issue 30 §4).
 */
import type { Definition, WorkflowStatus } from "./Workflow.ts"

export type WorkflowReferenceKind = "function" | "workflow"

export interface WorkflowReference {
  readonly kind: WorkflowReferenceKind
  readonly target: string
}

/** A workflow referencing a record, as the lookups answer it. */
export interface WorkflowReferrer {
  readonly id: string
  readonly name: string
  readonly status: WorkflowStatus
}

const functionIdOfTool = (tool: unknown): unknown =>
  typeof tool === "object" && tool !== null ? (tool as { readonly function_id?: unknown }).function_id : undefined

/**
 * The references of `definition`, each once: function and decide nodes' `function_id`, agent nodes' function tools
 * (`flow_agent_function_tools[].function_id`), call nodes' `workflow_id`. Ids are strings; anything else names nothing.
 */
export const definitionReferences = (definition: Definition): ReadonlyArray<WorkflowReference> => {
  const seen = new Map<string, WorkflowReference>()
  const add = (kind: WorkflowReferenceKind, target: unknown) => {
    if (typeof target === "string") seen.set(`${kind}:${target}`, { kind, target })
  }
  for (const node of definition.nodes) {
    const config = node.data.config
    switch (node.data.node_type) {
      case "function":
      case "decide":
        add("function", config.function_id)
        break
      case "agent": {
        const tools = config.flow_agent_function_tools
        if (Array.isArray(tools)) for (const tool of tools) add("function", functionIdOfTool(tool))
        break
      }
      case "call":
        add("workflow", config.workflow_id)
        break
    }
  }
  return [...seen.values()]
}
