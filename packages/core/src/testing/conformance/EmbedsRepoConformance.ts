/**
 * The behaviour every embed repo owes (`InboxEmbedsRepo`, `WorkflowEmbedsRepo`): written once, run against each
 * port's adapters with that port's record and filters.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import type { EmbedRecordOf } from "../../embeds/Embed.ts"
import type { EmbedsRepo } from "../../embeds/EmbedsRepo.ts"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import { at, givenProject, uniqueId } from "./fixtures.ts"

export interface EmbedsRepoCase<R extends EmbedRecordOf<string>, F, I> {
  readonly repo: Effect.Effect<EmbedsRepo<R, F>, never, I>
  /** The kind's own fields of an embed made for a test (the shared ones are an active project-wide embed's). */
  readonly own: Omit<R, keyof EmbedRecordOf<string>>
  /** Fields set on the first stored embed beyond the defaults (a narrower scope, origins, ...). */
  readonly rich: Partial<R>
  /** Every field an update may change, changed. */
  readonly edited: Partial<R>
  /** Fields an update may not change, changed (scope, token). */
  readonly fixed: Partial<R>
  /** The list test's embeds: `first` and `second` made with these (a third is revoked), and filters naming one. */
  readonly listed: {
    readonly first: Partial<R>
    readonly second: Partial<R>
    readonly filters: ReadonlyArray<readonly [F, "first" | "second"]>
  }
}

/** An active project-wide embed of the project. */
const sharedFields = (projectId: string): EmbedRecordOf<"project"> => ({
  id: uniqueId("emb"),
  project_id: projectId,
  name: "Support",
  scope_type: "project",
  scope_id: null,
  scope_name: "Acme",
  status: "active",
  allowed_origins: [],
  default_mode: "system",
  language: "en",
  expires_at: null,
  last_used_at: null,
  token_hash: uniqueId("hash"),
  created_at: at(0),
  updated_at: at(0)
})

export const embedsRepoConformance = <R extends EmbedRecordOf<string>, F, I, E>(
  name: string,
  storage: Layer.Layer<I | ProjectsRepo, E>,
  c: EmbedsRepoCase<R, F, I>
): void =>
  layer(storage, { excludeTestServices: true })(name, (it) => {
    const make = (projectId: string, overrides: Partial<EmbedRecordOf<string>> | Partial<R> = {}): R =>
      ({ ...sharedFields(projectId), ...c.own, ...overrides }) as R

    it.effect("stores an embed, finds it by id within its project and by token hash", () =>
      Effect.gen(function*() {
        const repo = yield* c.repo
        const a = yield* givenProject()
        const b = yield* givenProject()
        const embed = make(a.id, { ...c.rich, expires_at: at(1000) })
        yield* repo.insert(embed)
        assert.deepStrictEqual(yield* repo.findById(a.id, embed.id), Option.some(embed))
        assert.isTrue(Option.isNone(yield* repo.findById(b.id, embed.id)))
        assert.deepStrictEqual(yield* repo.findByTokenHash(embed.token_hash), Option.some(embed))
        assert.isTrue(Option.isNone(yield* repo.findByTokenHash(uniqueId("hash"))))
      }))

    it.effect("refuses a second embed with the same token hash", () =>
      Effect.gen(function*() {
        const repo = yield* c.repo
        const p = yield* givenProject()
        const first = make(p.id)
        yield* repo.insert(first)
        const exit = yield* Effect.exit(repo.insert(make(p.id, { token_hash: first.token_hash })))
        assert.isTrue(exit._tag === "Failure")
        assert.deepStrictEqual(yield* repo.findByTokenHash(first.token_hash), Option.some(first))
      }))

    it.effect("updates the editable fields and status, never the scope or token, only within its project", () =>
      Effect.gen(function*() {
        const repo = yield* c.repo
        const a = yield* givenProject()
        const b = yield* givenProject()
        const embed = make(a.id)
        yield* repo.insert(embed)
        const changed: R = { ...embed, ...c.edited, status: "revoked", expires_at: at(50), updated_at: at(9) }
        assert.deepStrictEqual(yield* repo.update({ ...changed, ...c.fixed, token_hash: "other" }), Option.some(changed))
        assert.deepStrictEqual(yield* repo.findById(a.id, embed.id), Option.some(changed))
        assert.isTrue(Option.isNone(yield* repo.update({ ...changed, project_id: b.id })))
        assert.isTrue(Option.isNone(yield* repo.update(make(a.id))))
      }))

    it.effect("touch moves last_used_at forward only", () =>
      Effect.gen(function*() {
        const repo = yield* c.repo
        const p = yield* givenProject()
        const embed = make(p.id)
        yield* repo.insert(embed)
        yield* repo.touch(embed.id, at(100))
        yield* repo.touch(embed.id, at(40))
        const found = yield* repo.findById(p.id, embed.id)
        assert.strictEqual(Option.getOrThrow(found).last_used_at, at(100))
        yield* repo.touch(uniqueId("emb"), at(100))
      }))

    it.effect("lists newest first with filters, in both paging modes", () =>
      Effect.gen(function*() {
        const repo = yield* c.repo
        const p = yield* givenProject()
        const e1 = make(p.id, { ...c.listed.first, created_at: at(1), updated_at: at(1) })
        const e2 = make(p.id, { ...c.listed.second, created_at: at(2), updated_at: at(2) })
        const e3 = make(p.id, { created_at: at(3), updated_at: at(3), status: "revoked" })
        for (const e of [e1, e2, e3]) yield* repo.insert(e)
        const all = (filter: F) => repo.list(p.id, filter, { mode: "page", page: 1, perPage: 10 })
        const page = yield* repo.list(p.id, {} as F, { mode: "page", page: 1, perPage: 2 })
        assert.deepStrictEqual(page.items.map((e) => e.id), [e3.id, e2.id])
        assert.strictEqual(page.total, 3)
        const second = yield* repo.list(p.id, {} as F, { mode: "page", page: 2, perPage: 2 })
        assert.deepStrictEqual(second.items.map((e) => e.id), [e1.id])
        const cursor = yield* repo.list(p.id, {} as F, { mode: "cursor", limit: 2, after: { sortKey: e3.created_at, id: e3.id } })
        assert.deepStrictEqual(cursor.items.map((e) => e.id), [e2.id, e1.id])
        assert.deepStrictEqual((yield* all({ status: "active" } as F)).items.map((e) => e.id), [e2.id, e1.id])
        for (const [filter, which] of c.listed.filters) {
          assert.deepStrictEqual((yield* all(filter)).items.map((e) => e.id), [(which === "first" ? e1 : e2).id], JSON.stringify(filter))
        }
      }))
  })
