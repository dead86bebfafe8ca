/**
 * The workflow lifecycle over real HTTP (issue 32 §3, §4), on memory ports (`lifecycle.http.test.ts`) and on
 * PostgreSQL (`lifecycle.http.pg.test.ts`): a workflow edited twice has three revisions, waiting runs stay on theirs,
 * a migration moves those whose node still exists, a restore brings the first graph back, a 50 % rollout splits new
 * runs by contact (sticky), and a split node's experiment reports entries and conversions per branch.
 */
import { createParleyClient } from "@parley/client"
import { inRollout, type RolloutRecord, wilson } from "@parley/core"
import { assert, describe, it } from "@effect/vitest"
import type { Effect, Layer, Scope } from "effect"
import { eventually, hostForSuite, type MessagingHost } from "./messaging.support.ts"

const node = (id: string, node_type: string, config: Record<string, unknown> = {}, display_name?: string) => ({
  id,
  position: { x: 0, y: 0 },
  data: { node_type, config, ...(display_name !== undefined ? { display_name } : {}) }
})
const edge = (source: string, target: string, label?: string) => ({ source, target, ...(label !== undefined ? { label } : {}) })
const wait = (save: string) => node(`ask_${save}`, "wait_for_response", { save_response_to: save })

/** First graph: start → ask_one → ask_two. */
const v1 = { nodes: [node("start", "start"), wait("one"), wait("two")], edges: [edge("start", "ask_one"), edge("ask_one", "ask_two")] }
/** Second: ask_two is gone, ask_three follows ask_one. */
const v2 = { nodes: [node("start", "start"), wait("one"), wait("three")], edges: [edge("start", "ask_one"), edge("ask_one", "ask_three")] }
/** Third: the second with ask_one renamed. */
const v3 = {
  nodes: [node("start", "start"), node("ask_one", "wait_for_response", { save_response_to: "one" }, "First question"), wait("three")],
  edges: [edge("start", "ask_one"), edge("ask_one", "ask_three")]
}

export const lifecycleOverHttp = (storage: string, ports: Effect.Effect<Layer.Layer<any, any, never>, unknown, Scope.Scope>) => {
  let host: MessagingHost
  let pnid: string
  hostForSuite(ports, (h, p) => {
    host = h
    pnid = p
  })

  const ok = async (method: string, path: string, body?: unknown, status = 200) => {
    const res = await host.request(method, `/platform/v1${path}`, body === undefined ? {} : { body })
    assert.strictEqual(res.status, status, `${method} ${path}: ${res.text}`)
    return res.body?.data
  }
  const createWorkflow = async (definition: unknown) =>
    (await ok("POST", "/workflows", { workflow: { name: `L ${Math.random()}`, status: "active", definition } }, 201)).id as string
  const update = async (id: string, definition: unknown) => {
    const current = await ok("GET", `/workflows/${id}`)
    return ok("PATCH", `/workflows/${id}`, { workflow: { definition, lock_version: current.lock_version } })
  }
  let phones = 0
  const nextPhone = () => `1555888${String(1000 + phones++).padStart(4, "0")}`
  /** Starts a run for the contact; the start burst per workflow (decisions 8.1) is waited out as a client would. */
  const start = async (workflowId: string, phone: string): Promise<string> => {
    const body = { workflow_execution: { phone_number: `+${phone}`, phone_number_id: pnid } }
    for (;;) {
      const res = await host.request("POST", `/platform/v1/workflows/${workflowId}/executions`, { body })
      if (res.status === 429) {
        await new Promise((resolve) => setTimeout(resolve, 1000))
        continue
      }
      assert.strictEqual(res.status, 202, res.text)
      return res.body.data.id as string
    }
  }
  const run = (id: string) => ok("GET", `/workflow_executions/${id}`)
  const waitingOn = async (id: string, nodeId: string) => {
    await eventually(`run ${id} waits on ${nodeId}`, async () => {
      const r = await run(id)
      return r.status === "waiting" && r.current_step?.identifier === nodeId
    })
    return run(id)
  }
  const resume = (id: string) => ok("POST", `/workflow_executions/${id}/resume`, { message: { kind: "text", data: "yes" } })

  describe(`workflow lifecycle over HTTP (${storage})`, () => {
    it("three revisions after two edits; runs keep theirs; a migration moves those whose node exists; a restore brings the first graph back", async () => {
      const id = await createWorkflow(v1)
      const a = await start(id, nextPhone())
      const b = await start(id, nextPhone())
      const r1 = (await waitingOn(a, "ask_one")).revision_id as string
      await waitingOn(b, "ask_one")
      await resume(b)
      assert.strictEqual((await waitingOn(b, "ask_two")).revision_id, r1)

      await update(id, v2)
      const c = await start(id, nextPhone())
      const r2 = (await waitingOn(c, "ask_one")).revision_id as string
      await update(id, v3)

      // The typed client reads the same contract.
      const client = createParleyClient({ baseUrl: host.url, apiKey: host.key })
      const listed = (await client.workflowLifecycle.listRevisions({ params: { id }, query: {} })).body.data
      assert.strictEqual(listed.length, 3)
      // Paged as every list: one at a time, following `paging.next`.
      const firstPage = await client.workflowLifecycle.listRevisions({ params: { id }, query: { limit: "1" } })
      assert.deepStrictEqual(firstPage.body.data.map((r) => r.id), [listed[0]!.id])
      assert.isTrue("paging" in firstPage.body && firstPage.body.paging.next !== null)
      const pageTwo = await client.workflowLifecycle.listRevisions({ params: { id }, query: { page: "2", per_page: "2" } })
      assert.deepStrictEqual(pageTwo.body.data.map((r) => r.id), [listed[2]!.id])
      assert.isTrue("meta" in pageTwo.body && pageTwo.body.meta.total_count === 3)
      const [r3, second, first] = listed
      assert.deepStrictEqual([second!.id, first!.id], [r2, r1])
      assert.deepStrictEqual(listed.map((r) => r.current), [true, false, false])
      assert.deepStrictEqual(listed.map((r) => r.saves.map((s) => s.action)), [["update"], ["update"], ["create"]])
      assert.deepStrictEqual(listed.map((r) => [r.execution_count, r.waiting_count]), [[0, 0], [1, 1], [2, 2]])
      assert.strictEqual(first!.saves[0]!.saved_by.name.length > 0, true)

      // Runs stay on the revision they started on.
      assert.strictEqual((await run(a)).revision_id, r1)
      assert.strictEqual((await run(c)).revision_id, r2)

      const fetched = await ok("GET", `/workflows/${id}/revisions/${encodeURIComponent(r1)}`)
      assert.deepStrictEqual(fetched.definition.nodes.map((n: { id: string }) => n.id), ["start", "ask_one", "ask_two"])
      const diff = await ok("GET", `/workflows/${id}/revisions/${encodeURIComponent(r1)}/compare?with=${encodeURIComponent(r3!.id)}`)
      assert.deepStrictEqual(diff.nodes.added.map((n: { id: string }) => n.id), ["ask_three"])
      assert.deepStrictEqual(diff.nodes.removed.map((n: { id: string }) => n.id), ["ask_two"])
      assert.deepStrictEqual(diff.nodes.changed, [{ id: "ask_one", node_type: "wait_for_response", fields: ["display_name"] }])
      assert.deepStrictEqual(diff.edges, {
        added: [{ source: "ask_one", target: "ask_three", label: "next" }],
        removed: [{ source: "ask_one", target: "ask_two", label: "next" }]
      })

      // A dry run counts and moves nothing.
      const target = encodeURIComponent(r3!.id)
      const dry = await ok("POST", `/workflows/${id}/revisions/${target}/migrate`, { dry_run: true, on_missing_node: "end" })
      assert.deepStrictEqual(dry, { revision_id: r3!.id, dry_run: true, examined: 3, moved: 2, stayed: 0, ended: 1, skipped: 0 })
      assert.strictEqual((await run(a)).revision_id, r1)

      const moved = await ok("POST", `/workflows/${id}/revisions/${target}/migrate`, {})
      assert.deepStrictEqual(moved, { revision_id: r3!.id, dry_run: false, examined: 3, moved: 2, stayed: 1, ended: 0, skipped: 0 })
      assert.strictEqual((await run(a)).revision_id, r3!.id)
      assert.strictEqual((await run(c)).revision_id, r3!.id)
      assert.strictEqual((await run(b)).revision_id, r1)
      // The moved run goes on along the new graph.
      await resume(a)
      assert.strictEqual((await waitingOn(a, "ask_three")).revision_id, r3!.id)
      const events = await ok("GET", `/workflow_executions/${a}/events?limit=50`)
      assert.isTrue(events.some((e: { event_type: string }) => e.event_type === "revision_migrated"))

      // Sent again, it finds nothing more to move; asked to end the rest, it ends the run whose node is gone.
      const ended = await ok("POST", `/workflows/${id}/revisions/${target}/migrate`, { on_missing_node: "end" })
      assert.deepStrictEqual(ended, { revision_id: r3!.id, dry_run: false, examined: 1, moved: 0, stayed: 0, ended: 1, skipped: 0 })
      assert.strictEqual((await run(b)).status, "ended")

      // Restore: the first graph is the current definition again (a stale lock_version is refused).
      const current = await ok("GET", `/workflows/${id}`)
      const stale = await host.request("POST", `/platform/v1/workflows/${id}/revisions/${encodeURIComponent(r1)}/restore`, {
        body: { lock_version: current.lock_version - 1 }
      })
      assert.strictEqual(stale.status, 409, stale.text)
      await ok("POST", `/workflows/${id}/revisions/${encodeURIComponent(r1)}/restore`, { lock_version: current.lock_version })
      const definition = await ok("GET", `/workflows/${id}/definition`)
      assert.deepStrictEqual(definition.definition.nodes.map((n: { id: string }) => n.id), ["start", "ask_one", "ask_two"])
      const after = await ok("GET", `/workflows/${id}/revisions`)
      assert.strictEqual(after.length, 3)
      assert.strictEqual(after.find((r: { current: boolean }) => r.current).id, r1)
      assert.deepStrictEqual(after.find((r: { id: string }) => r.id === r1).saves.map((s: { action: string }) => s.action), ["restore", "create"])
      const d = await start(id, nextPhone())
      assert.strictEqual((await waitingOn(d, "ask_one")).revision_id, r1)

      // Drop-off: per node, runs that entered, left and wait there.
      const drop = await ok("GET", `/workflows/${id}/drop_off`)
      const at = (nodeId: string) => drop.find((n: { node_id: string }) => n.node_id === nodeId)
      assert.deepStrictEqual(at("ask_one"), { node_id: "ask_one", node_type: "wait_for_response", entered: 4, left: 2, waiting: 2, dropped: 0 })
      assert.deepStrictEqual(at("ask_two"), { node_id: "ask_two", node_type: "wait_for_response", entered: 1, left: 0, waiting: 0, dropped: 1 })
      assert.deepStrictEqual(at("ask_three"), { node_id: "ask_three", node_type: null, entered: 1, left: 0, waiting: 1, dropped: 0 })
    })

    it("answers missing revisions, workflows and bad requests in the contract's shape", async () => {
      const id = await createWorkflow(v1)
      const missing = await host.request("GET", `/platform/v1/workflows/${id}/revisions/nope`)
      assert.strictEqual(missing.status, 404, missing.text)
      assert.deepStrictEqual(missing.body, { error: "Revision not found" })
      const other = await host.request("GET", `/platform/v1/workflows/${id}/revisions`, { key: host.otherKey })
      assert.strictEqual(other.status, 404, other.text)
      const migrate = await host.request("POST", `/platform/v1/workflows/${id}/revisions/nope/migrate`, { body: {} })
      assert.strictEqual(migrate.status, 404, migrate.text)
      const badMode = await host.request("POST", `/platform/v1/workflows/${id}/revisions/nope/migrate`, { body: { on_missing_node: "drop" } })
      assert.strictEqual(badMode.status, 422, badMode.text)
      const draft = await host.request("POST", `/platform/v1/workflows/${id}/revisions`, { body: { revision: { definition: { nodes: [] } } } })
      assert.strictEqual(draft.status, 422, draft.text)
      const percent = await host.request("PUT", `/platform/v1/workflows/${id}/rollout`, { body: { rollout: { revision_id: "x", percent: 150 } } })
      assert.strictEqual(percent.status, 422, percent.text)
      const unknown = await host.request("PUT", `/platform/v1/workflows/${id}/rollout`, { body: { rollout: { revision_id: "x", percent: 50 } } })
      assert.strictEqual(unknown.status, 422, unknown.text)
      const none = await host.request("POST", `/platform/v1/workflows/${id}/rollout/promote`, { body: {} })
      assert.strictEqual(none.status, 404, none.text)
      const noExperiment = await host.request("GET", `/platform/v1/workflows/${id}/experiments/ask_one`)
      assert.strictEqual(noExperiment.status, 404, noExperiment.text)
    })

    it("a 50 % rollout starts new runs on the staged revision for half the contacts, sticky per contact, until promoted", async () => {
      const id = await createWorkflow(v1)
      const current = (await ok("GET", `/workflows/${id}/revisions`))[0].id as string
      const staged = await ok("POST", `/workflows/${id}/revisions`, { revision: { definition: v2 } }, 201)
      assert.strictEqual(staged.current, false)
      assert.deepStrictEqual(staged.saves.map((s: { action: string }) => s.action), ["draft"])
      const rollout = await ok("PUT", `/workflows/${id}/rollout`, { rollout: { revision_id: staged.id, percent: 50 } })
      assert.strictEqual(rollout.percent, 50)
      assert.deepStrictEqual(await ok("GET", `/workflows/${id}/rollout`), rollout)

      const record: RolloutRecord = { ...rollout, project_id: host.projectA, workflow_id: id }
      const runs: Array<{ phone: string; contact: string; revision: string }> = []
      for (let i = 0; i < 60; i++) {
        const phone = nextPhone()
        const r = await waitingOn(await start(id, phone), "ask_one")
        runs.push({ phone, contact: r.execution_context.context.contact.id, revision: r.revision_id })
      }
      // Each run's revision is the one its contact's place on the rollout line gives.
      for (const r of runs) assert.strictEqual(r.revision, inRollout(record, r.contact) ? staged.id : current, r.contact)
      const onStaged = runs.filter((r) => r.revision === staged.id).length
      assert.isTrue(onStaged >= 15 && onStaged <= 45, `${onStaged} of 60 on the staged revision`)
      // Sticky: the same contacts start on the same revisions again.
      for (const r of runs.slice(0, 6)) {
        assert.strictEqual((await waitingOn(await start(id, r.phone), "ask_one")).revision_id, r.revision)
      }

      // Rolled back, every new run takes the current definition; promoted, the staged one is current.
      const back = await host.request("DELETE", `/platform/v1/workflows/${id}/rollout`)
      assert.strictEqual(back.status, 204, back.text)
      assert.strictEqual(await ok("GET", `/workflows/${id}/rollout`), null)
      const inside = runs.find((r) => r.revision === staged.id)!
      assert.strictEqual((await waitingOn(await start(id, inside.phone), "ask_one")).revision_id, current)
      await ok("PUT", `/workflows/${id}/rollout`, { rollout: { revision_id: staged.id, percent: 10 } })
      const workflow = await ok("GET", `/workflows/${id}`)
      await ok("POST", `/workflows/${id}/rollout/promote`, { lock_version: workflow.lock_version })
      assert.strictEqual(await ok("GET", `/workflows/${id}/rollout`), null)
      const revisions = await ok("GET", `/workflows/${id}/revisions`)
      assert.strictEqual(revisions.find((r: { current: boolean }) => r.current).id, staged.id)
      const outside = runs.find((r) => r.revision === current)!
      assert.strictEqual((await waitingOn(await start(id, outside.phone), "ask_one")).revision_id, staged.id)
    })

    it("a split node's experiment reports entries and goal conversions per branch, sticky per contact", async () => {
      const set = (nodeId: string) => node(nodeId, "set_variable", { variable_name: "outcome", variable_value: nodeId })
      const id = await createWorkflow({
        nodes: [
          node("start", "start"),
          node("exp", "split", {
            experiment: "greeting",
            branches: [{ label: "a", weight: 1 }, { label: "b", weight: 1 }],
            goal: { type: "node", node_id: "win" }
          }),
          set("win"),
          wait("later")
        ],
        edges: [edge("start", "exp"), edge("exp", "win", "a"), edge("exp", "ask_later", "b")]
      })
      const branchOf = new Map<string, string>()
      const phonesUsed: Array<string> = []
      for (let i = 0; i < 30; i++) {
        const phone = nextPhone()
        phonesUsed.push(phone)
        const runId = await start(id, phone)
        await eventually(`run ${runId} settles`, async () => ["ended", "waiting"].includes((await run(runId)).status))
        const events = await ok("GET", `/workflow_executions/${runId}/events?limit=50`)
        const assigned = events.find((e: { event_type: string }) => e.event_type === "split_assigned")
        branchOf.set(phone, assigned.payload.branch)
      }
      // The same contact lands in the same branch again.
      for (const phone of phonesUsed.slice(0, 5)) {
        const runId = await start(id, phone)
        await eventually(`run ${runId} settles`, async () => ["ended", "waiting"].includes((await run(runId)).status))
        const events = await ok("GET", `/workflow_executions/${runId}/events?limit=50`)
        assert.strictEqual(events.find((e: { event_type: string }) => e.event_type === "split_assigned").payload.branch, branchOf.get(phone))
      }
      const a = [...branchOf.values()].filter((b) => b === "a").length
      const report = await ok("GET", `/workflows/${id}/experiments/exp`)
      assert.strictEqual(report.name, "greeting")
      assert.deepStrictEqual(report.goal, { type: "node", node_id: "win" })
      const [ra, rb] = report.branches
      // Runs again for five contacts count as entries too (each run is one entry).
      const again = phonesUsed.slice(0, 5).filter((p) => branchOf.get(p) === "a").length
      assert.deepStrictEqual([ra.label, ra.entries, ra.conversions], ["a", a + again, a + again])
      assert.deepStrictEqual([rb.label, rb.entries, rb.conversions], ["b", 35 - a - again, 0])
      const interval = wilson(ra.conversions, ra.entries)!
      assert.deepStrictEqual(ra.confidence_interval, { method: "wilson", level: 0.95, ...interval })
      assert.strictEqual(rb.conversion_rate, 0)
      assert.isTrue(rb.confidence_interval.low === 0 && rb.confidence_interval.high > 0)

      const drop = await ok("GET", `/workflows/${id}/drop_off`)
      const exp = drop.find((n: { node_id: string }) => n.node_id === "exp")
      assert.deepStrictEqual([exp.entered, exp.left], [35, 35])
    })
  })
}
