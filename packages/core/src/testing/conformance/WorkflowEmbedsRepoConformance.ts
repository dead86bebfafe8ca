/** The behaviour every `WorkflowEmbedsRepo` adapter owes, written once and run against each adapter. */
import { assert, layer } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import type { WorkflowEmbedRecord } from "../../viewer/WorkflowEmbed.ts"
import { WorkflowEmbedsRepo } from "../../viewer/WorkflowEmbedsRepo.ts"
import { at, givenProject, uniqueId } from "./fixtures.ts"

const makeEmbed = (projectId: string, overrides: Partial<WorkflowEmbedRecord> = {}): WorkflowEmbedRecord => ({
  id: uniqueId("wemb"),
  project_id: projectId,
  name: "Order bot",
  scope_type: "project",
  scope_id: null,
  scope_name: "Acme",
  access: "view",
  status: "active",
  allowed_origins: [],
  default_mode: "system",
  language: "en",
  expires_at: null,
  last_used_at: null,
  token_hash: uniqueId("hash"),
  created_at: at(0),
  updated_at: at(0),
  ...overrides
})

export const workflowEmbedsRepoConformance = <E>(name: string, storage: Layer.Layer<WorkflowEmbedsRepo | ProjectsRepo, E>): void =>
  layer(storage, { excludeTestServices: true })(name, (it) => {
    it.effect("stores an embed, finds it by id within its project and by token hash", () =>
      Effect.gen(function*() {
        const repo = yield* WorkflowEmbedsRepo
        const a = yield* givenProject()
        const b = yield* givenProject()
        const embed = makeEmbed(a.id, {
          scope_type: "workflow",
          scope_id: "wf_1",
          scope_name: "Order bot",
          access: "edit",
          allowed_origins: ["https://app.example.com", "http://localhost:3000"],
          expires_at: at(1000)
        })
        yield* repo.insert(embed)
        assert.deepStrictEqual(yield* repo.findById(a.id, embed.id), Option.some(embed))
        assert.isTrue(Option.isNone(yield* repo.findById(b.id, embed.id)))
        assert.deepStrictEqual(yield* repo.findByTokenHash(embed.token_hash), Option.some(embed))
        assert.isTrue(Option.isNone(yield* repo.findByTokenHash(uniqueId("hash"))))
      }))

    it.effect("refuses a second embed with the same token hash", () =>
      Effect.gen(function*() {
        const repo = yield* WorkflowEmbedsRepo
        const p = yield* givenProject()
        const first = makeEmbed(p.id)
        yield* repo.insert(first)
        const exit = yield* Effect.exit(repo.insert(makeEmbed(p.id, { token_hash: first.token_hash })))
        assert.isTrue(exit._tag === "Failure")
        assert.deepStrictEqual(yield* repo.findByTokenHash(first.token_hash), Option.some(first))
      }))

    it.effect("updates the editable fields and status, never the scope or token, only within its project", () =>
      Effect.gen(function*() {
        const repo = yield* WorkflowEmbedsRepo
        const a = yield* givenProject()
        const b = yield* givenProject()
        const embed = makeEmbed(a.id)
        yield* repo.insert(embed)
        const changed: WorkflowEmbedRecord = {
          ...embed,
          name: "Night shift",
          access: "edit",
          status: "revoked",
          allowed_origins: ["https://x.example"],
          default_mode: "dark",
          language: "es",
          expires_at: at(50),
          updated_at: at(9)
        }
        const attempted = { ...changed, scope_type: "workflow" as const, scope_id: "wf_9", token_hash: "other" }
        assert.deepStrictEqual(yield* repo.update(attempted), Option.some(changed))
        assert.deepStrictEqual(yield* repo.findById(a.id, embed.id), Option.some(changed))
        assert.isTrue(Option.isNone(yield* repo.update({ ...changed, project_id: b.id })))
        assert.isTrue(Option.isNone(yield* repo.update(makeEmbed(a.id))))
      }))

    it.effect("touch moves last_used_at forward only", () =>
      Effect.gen(function*() {
        const repo = yield* WorkflowEmbedsRepo
        const p = yield* givenProject()
        const embed = makeEmbed(p.id)
        yield* repo.insert(embed)
        yield* repo.touch(embed.id, at(100))
        yield* repo.touch(embed.id, at(40))
        const found = yield* repo.findById(p.id, embed.id)
        assert.strictEqual(Option.getOrThrow(found).last_used_at, at(100))
        yield* repo.touch(uniqueId("wemb"), at(100))
      }))

    it.effect("lists newest first with filters, in both paging modes", () =>
      Effect.gen(function*() {
        const repo = yield* WorkflowEmbedsRepo
        const p = yield* givenProject()
        const e1 = makeEmbed(p.id, { created_at: at(1), updated_at: at(1) })
        const e2 = makeEmbed(p.id, { created_at: at(2), updated_at: at(2), scope_type: "workflow", scope_id: "wf_2" })
        const e3 = makeEmbed(p.id, { created_at: at(3), updated_at: at(3), status: "revoked" })
        for (const e of [e1, e2, e3]) yield* repo.insert(e)
        const page = yield* repo.list(p.id, {}, { mode: "page", page: 1, perPage: 2 })
        assert.deepStrictEqual(page.items.map((e) => e.id), [e3.id, e2.id])
        assert.strictEqual(page.total, 3)
        const second = yield* repo.list(p.id, {}, { mode: "page", page: 2, perPage: 2 })
        assert.deepStrictEqual(second.items.map((e) => e.id), [e1.id])
        const cursor = yield* repo.list(p.id, {}, { mode: "cursor", limit: 2, after: { sortKey: e3.created_at, id: e3.id } })
        assert.deepStrictEqual(cursor.items.map((e) => e.id), [e2.id, e1.id])
        const active = yield* repo.list(p.id, { status: "active" }, { mode: "page", page: 1, perPage: 10 })
        assert.deepStrictEqual(active.items.map((e) => e.id), [e2.id, e1.id])
        const byScope = yield* repo.list(p.id, { scope_type: "workflow", scope_id: "wf_2" }, { mode: "page", page: 1, perPage: 10 })
        assert.deepStrictEqual(byScope.items.map((e) => e.id), [e2.id])
      }))
  })
