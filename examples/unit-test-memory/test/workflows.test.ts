/**
 * Unit-testing against Parley's domain with memory ports only: no HTTP, no
 * database. The services are the ones the host runs; the ports are the
 * in-memory implementations from `@parley/core/testing`, and sequential ids
 * make every id predictable.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Ids, Parley, Projects, Workflows } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { SimulatedUpstream } from "@parley/core/simulators"

const ParleyInMemory = Parley.layerServices.pipe(
  Layer.provideMerge(SimulatedUpstream.layerSimulatorConfig),
    Layer.provideMerge(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layerSequential))
)

/** A fresh project and the principal its API key authenticates as. */
const newProject = (name: string) =>
  Effect.gen(function*() {
    const projects = yield* Projects
    const project = yield* projects.create(name)
    const { secret } = yield* projects.createKey(project.id, "unit tests")
    return yield* projects.authenticate(secret)
  })

describe("workflows on memory ports", () => {
  layer(ParleyInMemory)((it) => {
    it.effect("creates a draft workflow with the defaults", () =>
      Effect.gen(function*() {
        const principal = yield* newProject("Acme")
        const workflows = yield* Workflows
        const created = yield* workflows.create(principal, { name: "Order status" })
        assert.strictEqual(created.project_id, principal.project.id)
        assert.strictEqual(created.slug, "order-status")
        assert.strictEqual(created.status, "draft")
        assert.strictEqual(created.lock_version, 0)
        assert.deepStrictEqual(created.definition.nodes.map((node) => node.data.node_type), ["start"])
        assert.deepStrictEqual(yield* workflows.get(principal, created.id), created)
      }))

    it.effect("updates a workflow, bumping lock_version and refusing a stale one", () =>
      Effect.gen(function*() {
        const principal = yield* newProject("Acme")
        const workflows = yield* Workflows
        const created = yield* workflows.create(principal, { name: "Greeter" })
        yield* TestClock.adjust("1 minute")
        const updated = yield* workflows.update(principal, created.id, {
          description: "Says hello",
          status: "active",
          lock_version: created.lock_version
        })
        assert.strictEqual(updated.description, "Says hello")
        assert.strictEqual(updated.status, "active")
        assert.strictEqual(updated.lock_version, 1)
        assert.isTrue(updated.updated_at > created.updated_at)

        const stale = yield* Effect.flip(workflows.update(principal, created.id, { name: "Late", lock_version: 0 }))
        assert.strictEqual(stale._tag, "Conflict")
        assert.strictEqual(stale.code, "stale_lock_version")
      }))

    it.effect("keeps projects apart: another project's workflow is not found", () =>
      Effect.gen(function*() {
        const acme = yield* newProject("Acme")
        const globex = yield* newProject("Globex")
        const workflows = yield* Workflows
        const created = yield* workflows.create(acme, { name: "Private" })
        const error = yield* Effect.flip(workflows.get(globex, created.id))
        assert.strictEqual(error._tag, "NotFound")
        assert.strictEqual(error.error, "Workflow not found")
      }))

    it.effect("refuses an invalid slug with a field-level detail", () =>
      Effect.gen(function*() {
        const principal = yield* newProject("Acme")
        const workflows = yield* Workflows
        const error = yield* Effect.flip(workflows.create(principal, { name: "X", slug: "Not A Slug" }))
        assert.strictEqual(error._tag, "Unprocessable")
        assert.deepStrictEqual(error.details, [{ path: "workflow.slug", message: "is invalid" }])
      }))
  })
})
