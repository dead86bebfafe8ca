/**
 * Guardrail settings are read from the store once, not on every send or inbound message (`ActiveGuardrails`), and
 * read again after a change: this process's own (`Guardrails.putSettings` forgets them) or any process's (the
 * store's change signal).
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { ActiveGuardrails } from "../src/guardrails/ActiveGuardrails.ts"
import { GuardrailsRepo } from "../src/guardrails/GuardrailsRepo.ts"
import { layerMemoryStorage } from "../src/MemoryStorage.ts"
import { givenProject } from "../src/testing/conformance/fixtures.ts"
import { makeSettings } from "../src/testing/conformance/GuardrailsRepoConformance.ts"

let reads = 0
/** The memory repo, counting reads of settings. */
const layerCounting = Layer.effect(
  GuardrailsRepo,
  Effect.map(GuardrailsRepo, (inner) =>
    GuardrailsRepo.of({
      ...inner,
      listSettings: (projectId) => Effect.suspend(() => {
        reads++
        return inner.listSettings(projectId)
      })
    }))
)

const settings = (projectId: string, keywords: ReadonlyArray<string>) => makeSettings(projectId, { opt_out_keywords: keywords })

describe("guardrail settings cache", () => {
  layer(
    ActiveGuardrails.layer.pipe(Layer.provideMerge(layerCounting), Layer.provideMerge(Layer.fresh(layerMemoryStorage))),
    { excludeTestServices: true }
  )((it) => {
    it.effect("reads the settings once for many sends, and again once they changed", () =>
      Effect.gen(function*() {
        const active = yield* ActiveGuardrails
        const repo = yield* GuardrailsRepo
        const project = yield* givenProject()
        yield* repo.putSettings(settings(project.id, ["PARA"]))
        yield* Effect.sleep("10 millis") // the change signal of the write above drops what nothing remembered yet
        const before = reads
        for (let i = 0; i < 5; i++) {
          assert.deepStrictEqual([...(yield* active.settings(project.id, "n1")).optOutKeywords], ["PARA"])
        }
        assert.strictEqual(reads - before, 1)

        // A write signals `changes` (as another process's would): the next send reads the new settings.
        yield* repo.putSettings(settings(project.id, ["BASTA"]))
        yield* Effect.sleep("10 millis")
        assert.deepStrictEqual([...(yield* active.settings(project.id, "n1")).optOutKeywords], ["BASTA"])
        assert.strictEqual(reads - before, 2)

        // This process's writers forget at once.
        yield* active.forget
        yield* active.settings(project.id, "n1")
        assert.strictEqual(reads - before, 3)
      }))
  })
})
