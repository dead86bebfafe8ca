/**
 * Guardrail settings are remembered per host (`ActiveGuardrails`) and stay true across hosts: two hosts in this
 * process, each with its own pool on one PostgreSQL database; a change written through one reaches the other's
 * cache through the store's change signal, well before the entries' backstop expiry (60 s).
 */
import { assert, describe, it } from "@effect/vitest"
import { ActiveGuardrails, GuardrailsRepo } from "@parley/core"
import { givenProject, makeSettings } from "@parley/core/testing/conformance"
import { layerFromUrl, layerStorage } from "@parley/store-pg"
import { Context, Effect, Layer } from "effect"
import { freshDatabase } from "./pg.ts"

const startHost = (url: string) =>
  Layer.build(ActiveGuardrails.layer.pipe(Layer.provideMerge(layerStorage), Layer.provideMerge(layerFromUrl(url))))

const settings = (projectId: string, keywords: ReadonlyArray<string>) => makeSettings(projectId, { opt_out_keywords: keywords })

describe("guardrail settings cache with two hosts on one database (postgres)", () => {
  it.live("a change through one host reaches the other host's remembered settings", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabase
      const a = yield* startHost(url)
      const b = yield* startHost(url)
      const project = yield* givenProject().pipe(Effect.provideContext(a))
      const keywordsOn = (host: Context.Context<ActiveGuardrails>) =>
        Effect.map(Context.get(host, ActiveGuardrails).settings(project.id, "any-number"), (s) => [...s.optOutKeywords].sort())

      yield* Context.get(a, GuardrailsRepo).putSettings(settings(project.id, ["PARA"]))
      // Both remember what they read.
      assert.deepStrictEqual(yield* keywordsOn(a), ["PARA"])
      assert.deepStrictEqual(yield* keywordsOn(b), ["PARA"])

      // Host A changes the settings; B never wrote, only its listener can tell it.
      yield* Context.get(a, GuardrailsRepo).putSettings(settings(project.id, ["BASTA"]))
      const deadline = Date.now() + 5_000
      let seen = yield* keywordsOn(b)
      while (seen[0] !== "BASTA" && Date.now() < deadline) {
        yield* Effect.sleep("50 millis")
        seen = yield* keywordsOn(b)
      }
      assert.deepStrictEqual(seen, ["BASTA"])
    }).pipe(Effect.scoped), 60_000)
})
