/** Projects and keys on memory ports: hashing, authentication, and that revoking or disabling acts at once. */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { hashKey, Ids, Projects, ProjectsRepo } from "../src/index.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"

const Services = Projects.layer.pipe(Layer.provideMerge(Layer.mergeAll(layerMemoryStorage, Ids.layerSequential)))

layer(Services)("Projects", (it) => {
  it.effect("stores only the key's hash and authenticates with the key", () =>
    Effect.gen(function*() {
      const projects = yield* Projects
      const project = yield* projects.create("Acme")
      const { key, secret } = yield* projects.createKey(project.id, "ci")
      assert.match(secret, /^pk_[A-Za-z0-9_-]{43}$/)
      assert.strictEqual(key.key_hash, yield* hashKey(secret))
      assert.notInclude(JSON.stringify(yield* (yield* ProjectsRepo).listKeys(project.id)), secret)
      const principal = yield* projects.authenticate(secret)
      assert.deepStrictEqual(principal.apiKey, { id: key.id, name: "ci" })
      assert.strictEqual(principal.project.id, project.id)
    }))

  it.effect("refuses unknown, empty and too-short keys", () =>
    Effect.gen(function*() {
      const projects = yield* Projects
      assert.strictEqual((yield* projects.authenticate("pk_unknown").pipe(Effect.flip)).error, "Invalid API key")
      assert.strictEqual((yield* projects.authenticate("").pipe(Effect.flip)).error, "Invalid API key")
      const project = yield* projects.create("Short")
      const short = yield* projects.createKey(project.id, "x", "tooshort").pipe(Effect.flip)
      assert.strictEqual(short.error, "An API key must be at least 16 characters")
    }))

  it.effect("a revoked key and a disabled project's key stop working at once, even when cached", () =>
    Effect.gen(function*() {
      const projects = yield* Projects
      const project = yield* projects.create("Revocable")
      const one = yield* projects.createKey(project.id, "one")
      const two = yield* projects.createKey(project.id, "two")
      yield* projects.authenticate(one.secret)
      yield* projects.authenticate(two.secret)
      yield* projects.revokeKey(project.id, one.key.id)
      assert.strictEqual((yield* projects.authenticate(one.secret).pipe(Effect.flip)).error, "Invalid API key")
      yield* projects.authenticate(two.secret)
      yield* projects.setDisabled(project.id, true)
      assert.strictEqual((yield* projects.authenticate(two.secret).pipe(Effect.flip)).error, "Invalid API key")
      yield* projects.setDisabled(project.id, false)
      assert.strictEqual((yield* projects.authenticate(two.secret)).project.id, project.id)
    }))

})

// A store of its own: bootstrap behaves differently once any project exists.
layer(Layer.fresh(Services))("Projects.bootstrap", (it) => {
  it.effect("bootstrap creates one default project and shows its key once; an explicit key is honoured", () =>
    Effect.gen(function*() {
      const projects = yield* Projects
      const first = yield* projects.bootstrap(undefined)
      assert.isTrue(first.createdSecret._tag === "Some")
      const second = yield* projects.bootstrap(undefined)
      assert.isTrue(second.createdSecret._tag === "None")
      assert.strictEqual(second.project.id, first.project.id)
      const explicit = yield* projects.bootstrap("pk_operator_chosen_key_123")
      assert.strictEqual(explicit.project.id, first.project.id)
      assert.strictEqual((yield* projects.authenticate("pk_operator_chosen_key_123")).project.id, first.project.id)
    }))
})
