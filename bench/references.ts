/**
 * Who calls a function or a workflow, at a project's scale (issue 30 §4): one workflow delete (`DELETE
 * /platform/v1/workflows/<id>` of a draft no workflow calls: the refusal check reads the active callers) and one
 * function check (`DELETE /platform/v1/functions/<id>` of a function the oldest workflow runs: refused with 422,
 * so it repeats) in a project of `REFERENCES_WORKFLOWS` (default 2,000) active workflows of 51 nodes. Each on two
 * hosts over PostgreSQL, same run: the stored references (`workflow_references`, migration 0042), and as the
 * lookups were before them (`WorkflowsRepo.referrers` paging every workflow of the statuses asked, 100 graphs at a
 * time, decoding each: what `activeCallers` and `FunctionReferrers` did). Per operation, the median of
 * `REFERENCES_N` (default 10): its time, the host thread's CPU (the bench's client shares the thread) and
 * PostgreSQL's (its process tree).
 *
 *   node --conditions=@parley/source bench/references.ts
 */
import { definitionReferences, type WorkflowRecord, WorkflowsRepo } from "@parley/core"
import { layerStorage } from "@parley/store-pg"
import { Context, Effect, Layer, Option, References } from "effect"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { processTreeCpuMicros } from "./cpu.ts"
import { chainDefinition } from "./executions.ts"
import { startBenchHost } from "./host.ts"

const KEY = "pk_bench_refs_0123456789abcdef0123"

/** The lookups as they were before 0042: every workflow of each status asked, 100 graphs a page, each decoded. */
const pagingEveryGraph = Layer.merge(
  layerStorage,
  Layer.effect(
    WorkflowsRepo,
    Effect.gen(function*() {
      const repo = yield* WorkflowsRepo
      return WorkflowsRepo.of({
        ...repo,
        referrers: Effect.fnUntraced(function*(projectId, reference, statuses, limit) {
          const found: Array<WorkflowRecord> = []
          for (const status of statuses) {
            for (let page = 1;; page++) {
              const slice = yield* repo.list(projectId, { status }, { mode: "page", page, perPage: 100 })
              for (const w of slice.items) {
                if (definitionReferences(w.definition).some((r) => r.kind === reference.kind && r.target === reference.target)) {
                  found.push(w)
                  if (found.length >= limit) return found.map(({ id, name, status }) => ({ id, name, status }))
                }
              }
              if (page * 100 >= slice.total) break
            }
          }
          return found.map(({ id, name, status }) => ({ id, name, status }))
        })
      })
    })
  ).pipe(Layer.provide(layerStorage))
)

export interface ReferencesCost {
  readonly lookup: string
  readonly operation: string
  /** Medians per operation, ms. */
  readonly ms: number
  readonly hostCpuMs: number
  readonly postgresCpuMs: number | undefined
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const request = (url: string, method: string, path: string, body?: unknown) =>
  Effect.promise(() =>
    fetch(`${url}${path}`, {
      method,
      headers: { "x-api-key": KEY, "content-type": "application/json" },
      body: body === undefined ? null : JSON.stringify(body)
    }).then(async (r) => ({ status: r.status, text: await r.text() }))
  )

const expect = (answer: { status: number; text: string }, status: number, what: string) =>
  answer.status === status ? Effect.void : Effect.die(new Error(`${what}: ${answer.status} ${answer.text}`))

const onePart = (lookup: string, storage: typeof layerStorage, options: { readonly workflows: number; readonly n: number }) =>
  Effect.gen(function*() {
    const { context, postgresPid, project, url } = yield* startBenchHost(KEY, { storage })
    const repo = Context.get(context, WorkflowsRepo)
    // One workflow made through the API gives the stored (read) form of a 51-node graph; the rest are its copies.
    const made = yield* request(url, "POST", "/platform/v1/workflows", { workflow: { name: "Template", definition: chainDefinition(50) } })
    yield* expect(made, 201, "create")
    const template = Option.getOrThrow(yield* repo.findById(project.id, JSON.parse(made.text).data.id))
    const fn = yield* request(url, "POST", "/platform/v1/functions", {
      function: { name: "Used", code: `async function handler() { return new Response("{}") }` }
    })
    yield* expect(fn, 201, "function")
    const functionId: string = JSON.parse(fn.text).data.id
    const base = Date.parse("2026-01-01T00:00:00Z")
    const copy = (i: number, status: WorkflowRecord["status"], extra: ReadonlyArray<WorkflowRecord["definition"]["nodes"][number]> = []) => {
      const id = crypto.randomUUID()
      return {
        ...template,
        id,
        name: `${status} ${i}`,
        slug: `${status}-${i}`,
        status,
        created_at: new Date(base + i * 1000).toISOString(),
        updated_at: new Date(base + i * 1000).toISOString(),
        definition: { ...template.definition, nodes: [...template.definition.nodes, ...extra] }
      } satisfies WorkflowRecord
    }
    // The oldest active workflow runs the function: the check finds it last, as a user's oldest workflow would be.
    const runs = { ...template.definition.nodes[1]!, id: "fn", data: { node_type: "function", config: { function_id: functionId }, display_name: "fn" } }
    for (let i = 0; i < options.workflows; i++) yield* repo.insert(copy(i, "active", i === 0 ? [runs] : []))
    // The drafts deleted, newest of all; the template goes first, as a warm-up.
    const drafts: Array<string> = []
    for (let i = 0; i < options.n; i++) {
      const draft = copy(options.workflows + i, "draft")
      yield* repo.insert(draft)
      drafts.push(draft.id)
    }
    yield* expect(yield* request(url, "DELETE", `/platform/v1/workflows/${template.id}`), 204, "warm-up delete")
    yield* expect(yield* request(url, "DELETE", `/platform/v1/functions/${functionId}`), 422, "warm-up check")

    const timed = (operation: string, paths: ReadonlyArray<string>, status: number) =>
      Effect.gen(function*() {
        const ms: Array<number> = []
        const host: Array<number> = []
        const postgres: Array<number> = []
        for (const path of paths) {
          const pgBefore = processTreeCpuMicros(postgresPid)
          const cpuBefore = process.threadCpuUsage()
          const start = performance.now()
          const answer = yield* request(url, "DELETE", path)
          ms.push(performance.now() - start)
          const cpu = process.threadCpuUsage(cpuBefore)
          const pgAfter = processTreeCpuMicros(postgresPid)
          yield* expect(answer, status, operation)
          host.push((cpu.user + cpu.system) / 1000)
          if (pgBefore !== undefined && pgAfter !== undefined) postgres.push((pgAfter - pgBefore) / 1000)
        }
        return {
          lookup,
          operation,
          ms: median(ms),
          hostCpuMs: median(host),
          postgresCpuMs: postgres.length === 0 ? undefined : median(postgres)
        } satisfies ReferencesCost
      })
    return [
      yield* timed("function check (422)", Array.from({ length: options.n }, () => `/platform/v1/functions/${functionId}`), 422),
      yield* timed("workflow delete (204)", drafts.map((id) => `/platform/v1/workflows/${id}`), 204)
    ]
  }).pipe(Effect.scoped)

export const benchReferences = (options: { readonly workflows: number; readonly n: number }) =>
  Effect.gen(function*() {
    const before = yield* onePart("paging every graph", pagingEveryGraph, options)
    const after = yield* onePart("stored references", layerStorage, options)
    return { workflows: options.workflows, n: options.n, results: [...before, ...after] }
  })

export const formatReferences = (run: { readonly workflows: number; readonly n: number; readonly results: ReadonlyArray<ReferencesCost> }) =>
  [
    `Callers of a function or workflow: ${run.workflows} active workflows of 51 nodes, median of ${run.n} per operation`,
    ...run.results.map((r) =>
      `  ${r.operation.padEnd(22)} ${r.lookup.padEnd(19)} ${r.ms.toFixed(1).padStart(8)} ms   host CPU ${r.hostCpuMs.toFixed(1).padStart(7)} ms   PostgreSQL CPU ${
        r.postgresCpuMs === undefined ? "n/a" : `${r.postgresCpuMs.toFixed(1).padStart(7)} ms`
      }`
    ),
    ""
  ].join("\n")

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const workflows = Number(process.env.REFERENCES_WORKFLOWS ?? 2000)
  const n = Number(process.env.REFERENCES_N ?? 10)
  Effect.runPromise(benchReferences({ workflows, n }).pipe(
    Effect.map((r) => console.log(formatReferences(r))),
    Effect.provideService(References.MinimumLogLevel, "Warn")
  )).catch((error) => {
    console.error(error)
    process.exitCode = 1
  })
}
