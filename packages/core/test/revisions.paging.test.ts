/**
 * `GET /workflows/<id>/revisions` is paged like every list, including for a workflow saved before revisions were
 * recorded, whose current graph is listed first without being stored: every mode walks the same list, each
 * revision once.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { WorkflowRevisions } from "../src/executions/lifecycle/Revisions.ts"
import type { ListWindow } from "../src/shared/Pagination.ts"
import { at, makeWorkflow } from "../src/testing/conformance/fixtures.ts"
import { layerMemoryParley, sandboxProject } from "../src/testing/MemoryParley.ts"
import { RevisionsRepo } from "../src/workflows/RevisionsRepo.ts"
import { revisionId } from "../src/workflows/Revision.ts"
import { WorkflowsRepo } from "../src/workflows/WorkflowsRepo.ts"

const graph = (label: string) => ({
  nodes: [{ id: "start", type: "flow-node", position: { x: 0, y: 0 }, data: { node_type: "start", config: {}, display_name: label } }],
  edges: []
})

describe("workflow revisions, paged", () => {
  it.effect("walks the current unrecorded graph and the stored ones in page and cursor mode", () =>
    Effect.gen(function*() {
      const { principal } = yield* sandboxProject("Acme")
      const workflow = makeWorkflow(principal.project.id, { definition: graph("now") as never, updated_at: at(10_000) })
      yield* (yield* WorkflowsRepo).insert(workflow)
      const repo = yield* RevisionsRepo
      const stored = Array.from({ length: 4 }, (_, i) => `${workflow.id}:g${i}`)
      for (const [i, id] of stored.entries()) {
        yield* repo.recordSave({
          id: `save-${i}`,
          project_id: workflow.project_id,
          workflow_id: workflow.id,
          revision_id: id,
          action: "update",
          saved_by: { id: "k", name: "k" },
          saved_at: at(i * 1000)
        }, graph(`g${i}`) as never)
      }
      const expected = [revisionId(workflow.id, workflow.definition), ...[...stored].reverse()]
      const revisions = yield* WorkflowRevisions
      const list = (window: ListWindow) => revisions.list(principal, workflow.id, window)

      for (const perPage of [1, 2, 3, 5]) {
        const seen: Array<string> = []
        for (let page = 1; page <= Math.ceil(5 / perPage); page++) {
          const slice = yield* list({ mode: "page", page, perPage })
          assert.strictEqual(slice.total, 5)
          seen.push(...slice.items.map((r) => r.id))
        }
        assert.deepStrictEqual(seen, expected, `per_page ${perPage}`)
      }

      for (const limit of [1, 2, 3, 5]) {
        // Older and older, from the newest.
        const seen: Array<string> = []
        let after: { sortKey: string; id: string } | undefined
        for (;;) {
          const slice = yield* list({ mode: "cursor", limit, ...(after === undefined ? {} : { after }) })
          seen.push(...slice.items.map((r) => r.id))
          const last = slice.items.at(-1)
          if (!slice.hasMore || last === undefined) break
          after = { sortKey: last.created_at, id: last.id }
        }
        assert.deepStrictEqual(seen, expected, `limit ${limit}`)
        // Back towards the newest, from the oldest.
        const back: Array<string> = []
        let before = { sortKey: at(0), id: stored[0]! }
        for (;;) {
          const slice = yield* list({ mode: "cursor", limit, before })
          back.unshift(...slice.items.map((r) => r.id))
          const first = slice.items[0]
          if (!slice.hasMore || first === undefined) break
          before = { sortKey: first.created_at, id: first.id }
        }
        assert.deepStrictEqual(back, expected.slice(0, -1), `limit ${limit}, backwards`)
      }
    }).pipe(Effect.provide(layerMemoryParley)))
})
