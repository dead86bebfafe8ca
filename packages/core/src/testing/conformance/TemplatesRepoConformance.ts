/** The behaviour every `TemplatesRepo` adapter owes (the template mirror, decisions 4.8.1), written once. */
import { assert, layer } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import type { TemplateRecord } from "../../messaging/templates/Template.ts"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import { TemplatesRepo } from "../../messaging/templates/TemplatesRepo.ts"
import { at, givenProject, uniqueId } from "./fixtures.ts"

const makeTemplate = (projectId: string, overrides: Partial<TemplateRecord> = {}): TemplateRecord => ({
  id: crypto.randomUUID(),
  project_id: projectId,
  business_account_id: "waba-1",
  upstream_template_id: uniqueId("hsm"),
  name: "order_update",
  language: "en_US",
  status: "approved",
  category: "UTILITY",
  sub_category: null,
  parameter_format: "POSITIONAL",
  components: [{ type: "BODY", text: "Hi {{1}}, your order shipped." }],
  created_at: at(0),
  updated_at: at(0),
  ...overrides
})

const page = { mode: "page", page: 1, perPage: 100 } as const

export const templatesRepoConformance = <E>(name: string, storage: Layer.Layer<TemplatesRepo | ProjectsRepo, E>): void =>
  layer(storage, { excludeTestServices: true })(name, (it) => {
    it.effect("upserts, finds and removes a template, only within its project", () =>
      Effect.gen(function*() {
        const repo = yield* TemplatesRepo
        const a = yield* givenProject()
        const b = yield* givenProject()
        const t = makeTemplate(a.id)
        assert.deepStrictEqual(yield* repo.upsert(t), t)
        assert.deepStrictEqual(yield* repo.findById(a.id, t.id), Option.some(t))
        assert.isTrue(Option.isNone(yield* repo.findById(b.id, t.id)))
        // A later sighting replaces the fields but keeps the first sighting's time.
        const paused = { ...t, status: "paused", components: [{ type: "BODY", text: "Changed {{1}}" }], created_at: at(9), updated_at: at(9) }
        const stored = yield* repo.upsert(paused)
        assert.deepStrictEqual(stored, { ...paused, created_at: at(0) })
        assert.deepStrictEqual(yield* repo.findById(a.id, t.id), Option.some(stored))
        assert.isFalse(yield* repo.remove(b.id, t.id))
        assert.isTrue(yield* repo.remove(a.id, t.id))
        assert.isTrue(Option.isNone(yield* repo.findById(a.id, t.id)))
        assert.isFalse(yield* repo.remove(a.id, t.id))
      }))

    it.effect("replaces one business account's templates and leaves the others", () =>
      Effect.gen(function*() {
        const repo = yield* TemplatesRepo
        const p = yield* givenProject()
        const kept = makeTemplate(p.id, { name: "kept", created_at: at(1), updated_at: at(1) })
        const gone = makeTemplate(p.id, { name: "gone", created_at: at(2), updated_at: at(2) })
        const other = makeTemplate(p.id, { name: "other", business_account_id: "waba-2", created_at: at(3), updated_at: at(3) })
        yield* repo.replaceAccount(p.id, "waba-1", [kept, gone])
        yield* repo.replaceAccount(p.id, "waba-2", [other])
        const added = makeTemplate(p.id, { name: "added", created_at: at(4), updated_at: at(4) })
        yield* repo.replaceAccount(p.id, "waba-1", [{ ...kept, status: "disabled", created_at: at(4), updated_at: at(4) }, added])
        const all = yield* repo.list(p.id, {}, page)
        assert.deepStrictEqual(all.items.map((t) => t.name), ["added", "other", "kept"])
        const k = Option.getOrThrow(yield* repo.findById(p.id, kept.id))
        assert.strictEqual(k.status, "disabled")
        assert.strictEqual(k.created_at, at(1))
        assert.strictEqual(k.updated_at, at(4))
        yield* repo.replaceAccount(p.id, "waba-1", [])
        assert.deepStrictEqual((yield* repo.list(p.id, {}, page)).items.map((t) => t.name), ["other"])
      }))

    it.effect("lists newest first with filters, in both paging modes", () =>
      Effect.gen(function*() {
        const repo = yield* TemplatesRepo
        const p = yield* givenProject()
        const q = yield* givenProject()
        const t1 = makeTemplate(p.id, { name: "one", created_at: at(1), updated_at: at(1) })
        const t2 = makeTemplate(p.id, { name: "two", language: "es", status: "pending", created_at: at(2), updated_at: at(2) })
        const t3 = makeTemplate(p.id, { name: "three", category: "MARKETING", business_account_id: "waba-9", created_at: at(3), updated_at: at(3) })
        for (const t of [t1, t2, t3]) yield* repo.upsert(t)
        yield* repo.upsert(makeTemplate(q.id, { name: "one" }))
        const names = (slice: { readonly items: ReadonlyArray<TemplateRecord> }) => slice.items.map((t) => t.name)
        assert.deepStrictEqual(names(yield* repo.list(p.id, {}, page)), ["three", "two", "one"])
        assert.deepStrictEqual(names(yield* repo.list(p.id, { name: "one" }, page)), ["one"])
        assert.deepStrictEqual(names(yield* repo.list(p.id, { language: "es" }, page)), ["two"])
        assert.deepStrictEqual(names(yield* repo.list(p.id, { status: "approved" }, page)), ["three", "one"])
        assert.deepStrictEqual(names(yield* repo.list(p.id, { category: "MARKETING" }, page)), ["three"])
        assert.deepStrictEqual(names(yield* repo.list(p.id, { business_account_id: "waba-1" }, page)), ["two", "one"])
        const first = yield* repo.list(p.id, {}, { mode: "page", page: 1, perPage: 2 })
        assert.deepStrictEqual([names(first), first.total, first.hasMore], [["three", "two"], 3, true])
        const cursor = yield* repo.list(p.id, {}, { mode: "cursor", limit: 2, after: { sortKey: t3.created_at, id: t3.id } })
        assert.deepStrictEqual([names(cursor), cursor.hasMore], [["two", "one"], false])
      }))
  })
