/**
 * Workflow definition (graph) validation and normalisation (spec "Workflow
 * definition (graph)", decisions 2.2 and 2.3).
 *
 * `validateDefinition` takes the write form (unknown JSON), checks every rule
 * and every node config, and answers the stored/read form; a failure is one
 * 422 whose `error` names the first problem and whose `details` list all of
 * them. `withReadOnlyNames` fills the read-only name fields on read.
 *
 * Problem order: definition keys, nodes (in order, each with its config),
 * the start-node count, edges (in order), then references (rule 10).
 * New uuids are drawn in order: decide conditions without id (node order),
 * then edges that keep no previous id (edge order).
 */
import { Effect, Option, Predicate } from "effect"
import { type Unprocessable, unprocessable } from "../shared/ApiError.ts"
import { Ids } from "../shared/Ids.ts"
import {
  at,
  type CheckedCondition,
  type CheckedConfig,
  Checker,
  checkConfig,
  defaultDisplayNames,
  type JsonObject,
  UuidPattern
} from "./NodeConfigs.ts"
import { DefinitionReferences, type ReferenceKind } from "./References.ts"
import { agentSettingsProblems } from "../ai/ProviderModels.ts"
import type { Definition, Edge, Node, NodeType } from "./Workflow.ts"
import { NodeTypes } from "./Workflow.ts"

export const NodeIdPattern = /^[A-Za-z][A-Za-z0-9_-]*$/
export const MaxNodeIdLength = 100
export const MaxNodes = 500
export const MaxEdges = 1000
export const StoredNodeType = "flow-node"
export const StoredEdgeType = "default"
export const DefaultEdgeLabel = "next"

export interface ValidateOptions {
  readonly projectId: string
  /** The workflow being written (a `call` node may not call it); undefined on create. */
  readonly workflowId: string | undefined
  /** The stored definition being replaced, so existing edge ids and decide-condition ids keep their identity. */
  readonly previous: Definition | undefined
}

/** A lone start node at (0,0): the graph of a workflow created without definition. */
export const defaultDefinition = (): Definition => ({
  nodes: [{
    id: "start",
    type: StoredNodeType,
    position: { x: 0, y: 0 },
    data: { node_type: "start", config: {}, display_name: "Start" }
  }],
  edges: []
})

// ---------------------------------------------------------------------------
// Synchronous checks
// ---------------------------------------------------------------------------

interface PlannedNode {
  readonly id: string
  readonly position: { readonly x: number; readonly y: number }
  readonly nodeType: NodeType
  readonly displayName: string
  readonly config: JsonObject
  readonly conditions: ReadonlyArray<CheckedCondition> | undefined
}

interface PlannedEdge {
  /** A previous edge id this edge keeps. */
  readonly keptId: string | undefined
  readonly source: string
  readonly target: string
  readonly label: string
  /** Edges leaving a decide node: the node's index in the plan and the condition's index. */
  readonly condition: { readonly node: number; readonly index: number } | undefined
}

/** What the edge checks need to know about a node id. */
interface KnownNode {
  /** Index in the plan when the node itself is valid. */
  readonly planned: number | undefined
  readonly nodeType: NodeType | undefined
  readonly conditions: ReadonlyArray<CheckedCondition> | undefined
  /** A split node's branch labels. */
  readonly branches?: ReadonlyArray<string> | undefined
}

const isNodeType = (u: unknown): u is NodeType =>
  typeof u === "string" && (NodeTypes as ReadonlyArray<string>).includes(u)

const checkPosition = (c: Checker, u: unknown, path: string): { x: number; y: number } | undefined => {
  if (u === undefined || u === null) {
    c.add(path, "is required")
    return undefined
  }
  if (!Predicate.isObject(u)) {
    c.add(path, "must be an object")
    return undefined
  }
  let ok = true
  for (const key of Object.keys(u)) {
    if (key !== "x" && key !== "y") {
      c.add(at(path, key), "is not allowed")
      ok = false
    }
  }
  for (const key of ["x", "y"] as const) {
    const v = u[key]
    if (v === undefined || v === null) {
      c.add(at(path, key), "is required")
      ok = false
    } else if (typeof v !== "number" || !Number.isFinite(v)) {
      c.add(at(path, key), "must be a number")
      ok = false
    }
  }
  return ok ? { x: u["x"] as number, y: u["y"] as number } : undefined
}

/** Condition ids per node id of the previous definition's decide nodes. */
const previousConditions = (previous: Definition | undefined): Map<string, ReadonlySet<string>> => {
  const out = new Map<string, ReadonlySet<string>>()
  for (const node of previous?.nodes ?? []) {
    if (node.data.node_type !== "decide") continue
    const conditions = node.data.config["conditions"]
    const ids = new Set<string>()
    if (Array.isArray(conditions)) {
      for (const cond of conditions) {
        if (Predicate.isObject(cond) && typeof cond["id"] === "string") ids.add(cond["id"].toLowerCase())
      }
    }
    out.set(node.id, ids)
  }
  return out
}

const checkNodes = (
  c: Checker,
  rawNodes: ReadonlyArray<unknown>,
  options: ValidateOptions
): { readonly planned: Array<PlannedNode>; readonly known: Map<string, KnownNode> } => {
  const planned: Array<PlannedNode> = []
  const known = new Map<string, KnownNode>()
  const prevConditions = previousConditions(options.previous)
  let starts = 0

  rawNodes.forEach((raw, i) => {
    if (!Predicate.isObject(raw)) {
      c.add(`nodes[${i}]`, "must be an object")
      return
    }
    // Rule 2: the id names the node in paths when it is usable.
    const id = raw["id"]
    let usableId: string | undefined
    const idPath = `nodes[${i}].id`
    if (id === undefined || id === null) c.add(idPath, "is required")
    else if (typeof id !== "string") c.add(idPath, "must be a string")
    else if (id.length > MaxNodeIdLength) c.add(idPath, `must be at most ${MaxNodeIdLength} characters`)
    else if (!NodeIdPattern.test(id)) c.add(idPath, `must match ${NodeIdPattern.source}`)
    else if (known.has(id)) c.add(idPath, `must be unique (${id} is already used by another node)`)
    else usableId = id
    const base = usableId === undefined ? `nodes[${i}]` : `nodes.${usableId}`

    for (const key of Object.keys(raw)) {
      if (key !== "id" && key !== "type" && key !== "position" && key !== "data") c.add(at(base, key), "is not allowed")
    }
    if (raw["type"] !== undefined && raw["type"] !== null && typeof raw["type"] !== "string") {
      c.add(at(base, "type"), "must be a string")
    }
    const position = checkPosition(c, raw["position"], at(base, "position"))

    const dataPath = at(base, "data")
    const data = raw["data"]
    let nodeType: NodeType | undefined
    let checked: CheckedConfig | undefined
    let displayName: string | undefined
    if (data === undefined || data === null) {
      c.add(dataPath, "is required")
    } else if (!Predicate.isObject(data)) {
      c.add(dataPath, "must be an object")
    } else {
      for (const key of Object.keys(data)) {
        if (key !== "node_type" && key !== "config" && key !== "display_name") {
          c.add(at(dataPath, key), "is not allowed")
        }
      }
      // Rule 3: never defaulted.
      const type = data["node_type"]
      if (type === undefined || type === null) c.add(at(dataPath, "node_type"), "is required")
      else if (!isNodeType(type)) c.add(at(dataPath, "node_type"), `must be one of ${NodeTypes.join(", ")}`)
      else nodeType = type
      if (nodeType === "start") starts++

      const name = data["display_name"]
      if (name !== undefined && name !== null && typeof name !== "string") {
        c.add(at(dataPath, "display_name"), "must be a string")
      } else if (typeof name === "string" && name.trim() !== "") {
        displayName = name
      }

      // Rule 4.
      const config = data["config"]
      const configPath = at(base, "config")
      if (config === undefined || config === null) c.add(configPath, "is required")
      else if (!Predicate.isObject(config)) c.add(configPath, "must be an object")
      else if (nodeType !== undefined) {
        checked = checkConfig(nodeType, config, {
          checker: c,
          base: configPath,
          workflowId: options.workflowId,
          previousConditionIds: (usableId === undefined ? undefined : prevConditions.get(usableId)) ??
            new Set<string>()
        })
      }
    }

    if (usableId === undefined) return
    const valid = position !== undefined && nodeType !== undefined && checked !== undefined
    if (position !== undefined && nodeType !== undefined && checked !== undefined) {
      planned.push({
        id: usableId,
        position,
        nodeType,
        displayName: displayName ?? defaultDisplayNames[nodeType],
        config: checked.config,
        conditions: checked.conditions
      })
    }
    known.set(usableId, {
      planned: valid ? planned.length - 1 : undefined,
      nodeType,
      conditions: checked?.conditions,
      branches: checked?.branches
    })
  })

  // Rule 1.
  if (starts !== 1) c.add("nodes", `must contain exactly one start node (found ${starts})`)
  return { planned, known }
}

const checkEdges = (
  c: Checker,
  rawEdges: ReadonlyArray<unknown>,
  known: Map<string, KnownNode>,
  previous: Definition | undefined
): Array<PlannedEdge> => {
  const planned: Array<PlannedEdge> = []
  const previousIds = new Set((previous?.edges ?? []).map((e) => e.id))
  const claimed = new Set<string>()
  const outgoing = new Set<string>()
  const usedConditions = new Map<string, Set<number>>()

  rawEdges.forEach((raw, i) => {
    const base = `edges[${i}]`
    if (!Predicate.isObject(raw)) {
      c.add(base, "must be an object")
      return
    }
    const before = c.problems.length
    for (const key of Object.keys(raw)) {
      if (!["id", "source", "target", "label", "type", "flow_condition_id"].includes(key)) {
        c.add(at(base, key), "is not allowed")
      }
    }
    const optionalString = (key: string): string | undefined => {
      const v = raw[key]
      if (v === undefined || v === null) return undefined
      if (typeof v !== "string") {
        c.add(at(base, key), "must be a string")
        return undefined
      }
      return v
    }
    const id = optionalString("id")
    optionalString("type")
    const givenLabel = optionalString("label")
    const conditionId = raw["flow_condition_id"]
    if (conditionId !== undefined && conditionId !== null && (typeof conditionId !== "string" || !UuidPattern.test(conditionId))) {
      c.add(at(base, "flow_condition_id"), "must be a uuid")
    }

    // Rule 5.
    const endpoint = (key: "source" | "target"): string | undefined => {
      const v = raw[key]
      const path = at(base, key)
      if (v === undefined || v === null) c.add(path, "is required")
      else if (typeof v !== "string") c.add(path, "must be a string")
      else if (!known.has(v)) c.add(path, `does not name a node (${v})`)
      else return v
      return undefined
    }
    const source = endpoint("source")
    const target = endpoint("target")
    if (target !== undefined && known.get(target)!.nodeType === "start") {
      c.add(at(base, "target"), "must not be the start node")
    }

    let label = givenLabel ?? DefaultEdgeLabel
    let condition: PlannedEdge["condition"]
    const from = source === undefined ? undefined : known.get(source)
    if (source !== undefined && from !== undefined && from.nodeType === "decide") {
      // Rules 8 and 9.
      const conditions = from.conditions
      if (conditions !== undefined) {
        let index: number
        let path: string
        if (typeof conditionId === "string" && UuidPattern.test(conditionId)) {
          path = at(base, "flow_condition_id")
          index = conditions.findIndex((cond) => cond.id?.toLowerCase() === conditionId.toLowerCase())
          if (index < 0) c.add(path, `does not name a condition of decide node ${source}`)
        } else {
          path = at(base, "label")
          index = conditions.findIndex((cond) => cond.label === label)
          if (index < 0) {
            c.add(
              path,
              `must equal a condition label of decide node ${source} (${conditions.map((x) => x.label).join(", ")})`
            )
          }
        }
        if (index >= 0) {
          const used = usedConditions.get(source) ?? new Set<number>()
          usedConditions.set(source, used)
          if (used.has(index)) {
            c.add(path, `names condition ${conditions[index]!.label} of decide node ${source}, which already has an edge`)
          } else {
            used.add(index)
            label = conditions[index]!.label
            condition = { node: from.planned ?? -1, index }
          }
        }
      }
    } else if (source !== undefined && from !== undefined && from.nodeType === "split") {
      // A split's edges carry its branch labels, one edge per branch.
      if (conditionId !== undefined && conditionId !== null) {
        c.add(at(base, "flow_condition_id"), "must be null: only edges leaving a decide node carry a condition")
      }
      if (from.branches !== undefined) {
        if (!from.branches.includes(label)) {
          c.add(at(base, "label"), `must equal a branch label of split node ${source} (${from.branches.join(", ")})`)
        } else if (outgoing.has(`${source}\u0000${label}`)) {
          c.add(at(base, "label"), `names branch ${label} of split node ${source}, which already has an edge`)
        }
        outgoing.add(`${source}\u0000${label}`)
      }
    } else if (source !== undefined && from !== undefined && from.nodeType !== undefined) {
      // Rules 6, 7 and 9.
      if (conditionId !== undefined && conditionId !== null) {
        c.add(at(base, "flow_condition_id"), "must be null: only edges leaving a decide node carry a condition")
      }
      if (label !== DefaultEdgeLabel) c.add(at(base, "label"), `must be ${DefaultEdgeLabel}`)
      if (outgoing.has(source)) {
        c.add(at(base, "source"), `names node ${source}, which already has an outgoing edge`)
      }
      outgoing.add(source)
    }

    if (c.problems.length > before || source === undefined || target === undefined) return
    const keptId = id !== undefined && previousIds.has(id) && !claimed.has(id) ? id : undefined
    if (keptId !== undefined) claimed.add(keptId)
    planned.push({ keptId, source, target, label, condition })
  })
  return planned
}

const referenceNames: Record<ReferenceKind, string> = {
  function: "function",
  workflow: "workflow",
  template: "template",
  provider_model: "provider model",
  phone_number: "phone number",
  msg_config: "message config",
  event_definition: "event definition"
}

const referenceKey = (kind: ReferenceKind, id: string) => `${kind}\u0000${id}`

// ---------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------

/** Validates a write-form definition (unknown input) and returns the normalised read/stored form, or fails 422 naming the first problem in `error` and listing all problems in `details`. */
export const validateDefinition = Effect.fn("validateDefinition")(
  function*(input: unknown, options: ValidateOptions): Effect.fn.Return<Definition, Unprocessable, DefinitionReferences | Ids> {
    const c = new Checker()
    if (!Predicate.isObject(input)) return yield* unprocessable("definition must be an object", [{ path: "definition", message: "must be an object" }])

    for (const key of Object.keys(input)) {
      if (key !== "nodes" && key !== "edges") c.add(key, "is not allowed")
    }
    // Omitted on update: unchanged.
    const list = (key: "nodes" | "edges", max: number): ReadonlyArray<unknown> => {
      const v = input[key] === undefined ? options.previous?.[key] ?? [] : input[key]
      if (!Array.isArray(v)) {
        c.add(key, "must be an array")
        return []
      }
      // Rule 11.
      if (v.length > max) c.add(key, `must contain at most ${max} ${key}`)
      return v
    }
    const rawNodes = list("nodes", MaxNodes)
    const rawEdges = list("edges", MaxEdges)

    const { known, planned: nodes } = checkNodes(c, rawNodes, options)
    const edges = checkEdges(c, rawEdges, known, options.previous)

    // Rule 10.
    if (c.references.length > 0) {
      const refs = yield* DefinitionReferences
      const unique = new Map(c.references.map((r) => [referenceKey(r.kind, r.id), r] as const))
      const found = new Map(
        yield* Effect.forEach(
          unique,
          ([key, r]) =>
            refs.lookup(options.projectId, r.kind, r.id).pipe(Effect.map((o) => [key, Option.isSome(o)] as const)),
          { concurrency: 8 }
        )
      )
      for (const r of c.references) {
        if (found.get(referenceKey(r.kind, r.id)) !== true) {
          const what = referenceNames[r.kind]
          c.add(r.path, `does not name ${/^[aeiou]/.test(what) ? "an" : "a"} ${what} in this project`)
        }
      }
    }

    // 2.3.9: reasoning effort and cache TTL against the agent's model, once it is found.
    if (c.modelSettings.length > 0) {
      const refs = yield* DefinitionReferences
      for (const check of c.modelSettings) {
        const model = yield* refs.providerModel(check.model)
        if (Option.isSome(model)) for (const p of agentSettingsProblems(model.value, check, check.base)) c.add(p.path, p.message)
      }
    }

    const first = c.problems[0]
    if (first !== undefined) return yield* unprocessable(`${first.path} ${first.message}`, c.problems)

    const ids = yield* Ids
    const storedNodes: Array<Node> = []
    const conditionIds: Array<ReadonlyArray<string>> = []
    for (const node of nodes) {
      let config = node.config
      const resolved: Array<string> = []
      if (node.conditions !== undefined) {
        const conditions: Array<JsonObject> = []
        for (const cond of node.conditions) {
          const id = cond.id ?? (yield* ids.uuid)
          resolved.push(id)
          conditions.push({ id, label: cond.label, ...cond.rest })
        }
        config = { ...config, conditions }
      }
      conditionIds.push(resolved)
      storedNodes.push({
        id: node.id,
        type: StoredNodeType,
        position: { x: node.position.x, y: node.position.y },
        data: { node_type: node.nodeType, config, display_name: node.displayName }
      })
    }
    const storedEdges: Array<Edge> = []
    for (const edge of edges) {
      storedEdges.push({
        id: edge.keptId ?? (yield* ids.uuid),
        source: edge.source,
        target: edge.target,
        type: StoredEdgeType,
        label: edge.label,
        flow_condition_id: edge.condition === undefined ? null : conditionIds[edge.condition.node]![edge.condition.index]!
      })
    }
    return { nodes: storedNodes, edges: storedEdges }
  }
)

/** Fills read-only name fields (function_name, workflow_name, template_name, provider_model_name where resolvable) for GET /workflows/<id>/definition. */
export const withReadOnlyNames = Effect.fn("withReadOnlyNames")(
  function*(projectId: string, definition: Definition): Effect.fn.Return<Definition, never, DefinitionReferences> {
    const refs = yield* DefinitionReferences
    const wanted = new Map<string, { readonly kind: ReferenceKind; readonly id: string }>()
    const want = (kind: ReferenceKind, id: unknown) => {
      if (typeof id === "string" && id !== "") wanted.set(referenceKey(kind, id), { kind, id })
    }
    for (const node of definition.nodes) {
      const config = node.data.config
      want("provider_model", config["provider_model_id"])
      switch (node.data.node_type) {
        case "function":
        case "decide":
          want("function", config["function_id"])
          break
        case "call":
          want("workflow", config["workflow_id"])
          break
        case "send_template":
          want("template", config["template_id"])
          break
        case "agent": {
          const tools = config["flow_agent_function_tools"]
          if (Array.isArray(tools)) for (const t of tools) if (Predicate.isObject(t)) want("function", t["function_id"])
          break
        }
      }
    }
    if (wanted.size === 0) return definition
    const names = new Map(
      yield* Effect.forEach(
        wanted,
        ([key, r]) => refs.lookup(projectId, r.kind, r.id).pipe(Effect.map((o) => [key, Option.getOrNull(o)] as const)),
        { concurrency: 8 }
      )
    )
    const name = (kind: ReferenceKind, id: unknown): string | null =>
      typeof id === "string" ? names.get(referenceKey(kind, id)) ?? null : null

    const nodes = definition.nodes.map((node): Node => {
      const config: JsonObject = { ...node.data.config }
      const modelName = name("provider_model", config["provider_model_id"])
      if (modelName !== null) config["provider_model_name"] = modelName
      switch (node.data.node_type) {
        case "function":
        case "decide":
          if (typeof config["function_id"] === "string") config["function_name"] = name("function", config["function_id"])
          break
        case "call":
          if (typeof config["workflow_id"] === "string") config["workflow_name"] = name("workflow", config["workflow_id"])
          break
        case "send_template":
          if (typeof config["template_id"] === "string") config["template_name"] = name("template", config["template_id"])
          break
        case "agent": {
          const tools = config["flow_agent_function_tools"]
          if (Array.isArray(tools)) {
            config["flow_agent_function_tools"] = tools.map((t: unknown) =>
              Predicate.isObject(t) && typeof t["function_id"] === "string"
                ? { ...t, function_name: name("function", t["function_id"]) }
                : t
            )
          }
          break
        }
      }
      return { ...node, data: { ...node.data, config } }
    })
    return { nodes, edges: definition.edges }
  }
)
