/** Migration 0042 backfills the references of the workflows stored before it, as the repository writes them since. */
import { givenProject, makeWorkflow } from "@parley/core/testing/conformance"
import { type WorkflowReference, WorkflowsRepo, type WorkflowStatus } from "@parley/core"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { layerFromUrl } from "../src/Database.ts"
import migration0042 from "../src/migrations/0042_workflow_references.ts"
import { layerStorage } from "../src/Storage.ts"
import { freshDatabase } from "./pg.ts"

const EVERY_STATUS: ReadonlyArray<WorkflowStatus> = ["draft", "active", "archived"]

const node = (i: number, node_type: string, config: Readonly<Record<string, unknown>>) => ({
  id: `n${i}`,
  type: node_type,
  position: { x: 0, y: 0 },
  data: { node_type, config, display_name: node_type }
})

describe("workflow references (postgres)", () => {
  it.live("0042 backfills every stored workflow's references, past one batch", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabase
      yield* Effect.gen(function*() {
        const repo = yield* WorkflowsRepo
        const sql = yield* SqlClient.SqlClient
        const [a, b] = [yield* givenProject(), yield* givenProject()]
        const fn = `fn_${crypto.randomUUID()}`
        const callee = `wf_${crypto.randomUUID()}`
        // 520 workflows (the migration reads 500 at a time): every 10th runs the function, every 13th calls the callee.
        for (let i = 0; i < 520; i++) {
          yield* repo.insert(makeWorkflow(i % 2 === 0 ? a.id : b.id, {
            status: EVERY_STATUS[i % 3]!,
            created_at: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
            definition: {
              nodes: [
                node(0, "start", {}),
                ...(i % 10 === 0 ? [node(1, "function", { function_id: fn })] : []),
                ...(i % 13 === 0 ? [node(2, "call", { workflow_id: callee })] : [])
              ],
              edges: []
            }
          }))
        }
        const answers = Effect.gen(function*() {
          const lookups: Array<ReadonlyArray<unknown>> = []
          for (const project of [a, b]) {
            for (const ref of [{ kind: "function", target: fn }, { kind: "workflow", target: callee }] as const satisfies ReadonlyArray<WorkflowReference>) {
              lookups.push(yield* repo.referrers(project.id, ref, EVERY_STATUS, 1000))
            }
          }
          return lookups
        })
        const written = yield* answers
        assert.deepStrictEqual(written.map((found) => found.length), [52, 20, 0, 20])

        // As the database stood before 0042: the workflows and no references.
        yield* sql`DROP TABLE workflow_references`
        yield* migration0042
        assert.deepStrictEqual(yield* answers, written)
        assert.strictEqual((yield* sql`SELECT 1 FROM workflow_references`).length, 52 + 40, "one row per reference")
      }).pipe(Effect.provide(layerStorage.pipe(Layer.provideMerge(layerFromUrl(url)))))
    }).pipe(Effect.scoped))
})
