/**
 * The pure parts of a workflow's lifecycle (issue 32 §3, §4): the split node's config and edge rules, comparing two
 * graphs, sticky assignment (rollouts and splits), and the Wilson interval of an experiment's conversion.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { wilson } from "../src/executions/lifecycle/Experiments.ts"
import { pickBranch } from "../src/executions/nodes/SplitNode.ts"
import { Ids } from "../src/shared/Ids.ts"
import { validateDefinition } from "../src/workflows/Definition.ts"
import { DefinitionReferences } from "../src/workflows/References.ts"
import { compareDefinitions, inRollout, type RolloutRecord, stickyPoint } from "../src/workflows/Revision.ts"
import type { Definition } from "../src/workflows/Workflow.ts"

const References = Layer.succeed(DefinitionReferences, {
  lookup: () => Effect.succeed(Option.none()),
  providerModel: () => Effect.succeed(Option.none())
})
const validate = (input: unknown) =>
  validateDefinition(input, { projectId: "p", workflowId: "w", previous: undefined }).pipe(
    Effect.provide(Layer.merge(References, Ids.layerSequential))
  )

const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({ id, position: { x: 0, y: 0 }, data: { node_type, config } })
const split = (config: Record<string, unknown>) => ({
  nodes: [node("start", "start"), node("s", "split", config), node("a", "handoff"), node("b", "handoff")],
  edges: [{ source: "start", target: "s" }, { source: "s", target: "a", label: "A" }, { source: "s", target: "b", label: "B" }]
})
const branches = [{ label: "A", weight: 3 }, { label: "B", weight: 1 }]

describe("split node definitions", () => {
  it.effect("stores weighted branches, a goal, and edges labelled by branch", () =>
    Effect.gen(function*() {
      const stored = yield* validate(split({ experiment: "promo", branches, goal: { type: "reply" } }))
      assert.deepStrictEqual(stored.nodes[1]!.data.config, { experiment: "promo", branches, goal: { type: "reply" } })
      assert.deepStrictEqual(stored.edges.slice(1).map((e) => e.label), ["A", "B"])
    }))

  const refused: ReadonlyArray<readonly [string, unknown, string]> = [
    ["one branch", split({ branches: [branches[0]] }), "nodes.s.config.branches must contain between 2 and 10 items"],
    ["a zero weight", split({ branches: [{ label: "A", weight: 0 }, branches[1]] }), "nodes.s.config.branches[0].weight must be between 1 and 10000"],
    ["a repeated label", split({ branches: [branches[0], { label: "A", weight: 1 }] }), "nodes.s.config.branches[1].label must be unique within the node"],
    ["an unknown goal", split({ branches, goal: { type: "click" } }), "nodes.s.config.goal.type must be one of event, node, reply"],
    ["an event goal without a name", split({ branches, goal: { type: "event" } }), "nodes.s.config.goal.event_name is required"],
    ["an edge without a branch", {
      ...split({ branches }),
      edges: [{ source: "start", target: "s" }, { source: "s", target: "a" }]
    }, "edges[1].label must equal a branch label of split node s (A, B)"],
    ["two edges for a branch", {
      ...split({ branches }),
      edges: [{ source: "start", target: "s" }, { source: "s", target: "a", label: "A" }, { source: "s", target: "b", label: "A" }]
    }, "edges[2].label names branch A of split node s, which already has an edge"]
  ]
  for (const [name, input, error] of refused) {
    it.effect(`refuses ${name}`, () =>
      Effect.gen(function*() {
        const e = yield* Effect.flip(validate(input))
        assert.strictEqual(e.error, error)
      }))
  }
})

describe("sticky assignment", () => {
  it("splits by weight, the same way for the same key", () => {
    const counts = { A: 0, B: 0 }
    for (let i = 0; i < 4000; i++) counts[pickBranch(branches, stickyPoint(`split:w:s:contact-${i}`))!.label as "A" | "B"]++
    assert.isTrue(counts.A > 2800 && counts.A < 3200, JSON.stringify(counts))
    assert.strictEqual(pickBranch(branches, stickyPoint("k")), pickBranch(branches, stickyPoint("k")))
    assert.strictEqual(pickBranch(branches, 0.74)!.label, "A")
    assert.strictEqual(pickBranch(branches, 0.76)!.label, "B")
  })

  it("a rollout's share only grows: a contact in at 20 % is in at 50 %", () => {
    const at = (percent: number): RolloutRecord => ({
      project_id: "p",
      workflow_id: "w",
      revision_id: "r",
      percent,
      started_by: { id: "k", name: "k" },
      started_at: "2026-01-01T00:00:00.000Z"
    })
    const contacts = Array.from({ length: 1000 }, (_, i) => `c${i}`)
    const in20 = contacts.filter((c) => inRollout(at(20), c))
    const in50 = contacts.filter((c) => inRollout(at(50), c))
    assert.isTrue(in20.every((c) => in50.includes(c)))
    assert.isTrue(in50.length > 430 && in50.length < 570, String(in50.length))
    assert.strictEqual(contacts.filter((c) => inRollout(at(0), c)).length, 0)
    assert.strictEqual(contacts.filter((c) => inRollout(at(100), c)).length, 1000)
  })
})

describe("comparing revisions", () => {
  it("names nodes added, removed and changed, and edges by source, target and label", () => {
    const n = (id: string, config: Record<string, unknown> = {}, display_name = id) => ({
      id,
      type: "custom",
      position: { x: 0, y: 0 },
      data: { node_type: "handoff", config, display_name }
    })
    const e = (id: string, source: string, target: string) => ({ id, source, target, type: "custom", label: null, flow_condition_id: null })
    const from: Definition = { nodes: [n("start"), n("a"), n("b")], edges: [e("1", "start", "a"), e("2", "a", "b")] }
    const to: Definition = { nodes: [n("start"), n("a", { reason: "x" }), n("c")], edges: [e("9", "start", "a"), e("3", "a", "c")] }
    const diff = compareDefinitions("r1", from, "r2", to)
    assert.deepStrictEqual(diff.nodes.added.map((x) => x.id), ["c"])
    assert.deepStrictEqual(diff.nodes.removed.map((x) => x.id), ["b"])
    assert.deepStrictEqual(diff.nodes.changed, [{ id: "a", node_type: "handoff", fields: ["config"] }])
    assert.deepStrictEqual(diff.edges, {
      added: [{ source: "a", target: "c", label: "next" }],
      removed: [{ source: "a", target: "b", label: "next" }]
    })
  })
})

describe("Wilson score interval", () => {
  it("matches the textbook values and stays inside [0, 1]", () => {
    const mid = wilson(5, 10)!
    assert.closeTo(mid.low, 0.2366, 0.0001)
    assert.closeTo(mid.high, 0.7634, 0.0001)
    const none = wilson(0, 20)!
    assert.strictEqual(none.low, 0)
    assert.closeTo(none.high, 0.1611, 0.0001)
    const all = wilson(20, 20)!
    assert.closeTo(all.low, 0.8389, 0.0001)
    assert.closeTo(all.high, 1, 1e-9)
    assert.strictEqual(wilson(0, 0), null)
  })
})
