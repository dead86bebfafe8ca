/** `parley projects plan` against a real Postgres database: show and change a project's event plan. */
import { assert, layer } from "@effect/vitest"
import { EventPlans, Ids, Parley, Projects } from "@parley/core"
import { layerMemoryJobQueue } from "@parley/core/testing"
import { layerStorage } from "@parley/store-pg"
import { Effect, Layer, Redacted } from "effect"
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { DatabaseUrl } from "../../store-pg/src/Database.ts"
import { layerTestDatabase } from "../../store-pg/test/pg.ts"
import { SimulatedUpstream } from "@parley/core/simulators"

const cli = fileURLToPath(new URL("../src/cli.ts", import.meta.url))

const parley = (url: string, ...args: Array<string>) =>
  Effect.callback<{ code: number; stdout: string; stderr: string }>((resume) => {
    execFile(
      process.execPath,
      ["--conditions=@parley/source", cli, ...args],
      { env: { ...process.env, DATABASE_URL: url, PARLEY_LOG_LEVEL: "Warn" } },
      (error, stdout, stderr) => resume(Effect.succeed({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr }))
    )
  })

// This process only reads what the CLI wrote; its own job queue can stay in memory.
const Services = Parley.layerServices.pipe(
  Layer.provideMerge(SimulatedUpstream.layerSimulatorConfig),
    Layer.provideMerge(Layer.mergeAll(layerStorage, layerMemoryJobQueue, Ids.layer)),
  Layer.provideMerge(layerTestDatabase)
)

layer(Services, { excludeTestServices: true, timeout: 120_000 })("parley projects plan (postgres)", (it) => {
  it.effect("shows the defaults, changes given settings only, and refuses bad values", () =>
    Effect.gen(function*() {
      const url = Redacted.value(yield* DatabaseUrl)
      const project = yield* (yield* Projects).create("Planned")
      const plans = yield* EventPlans

      const shown = yield* parley(url, "projects", "plan", project.id, "--json")
      assert.strictEqual(shown.code, 0, shown.stderr)
      const defaults = JSON.parse(shown.stdout)
      assert.deepStrictEqual(
        { ...defaults, period: typeof defaults.period },
        {
          project_id: project.id,
          events_enabled: true,
          monthly_allowance: 100_000,
          metered_overage: false,
          retention_days: 365,
          period: "string",
          used_this_period: 0
        }
      )

      const changed = yield* parley(
        url, "projects", "plan", project.id, "--events", "off", "--allowance", "250", "--metered", "true", "--json"
      )
      assert.strictEqual(changed.code, 0, changed.stderr)
      assert.deepStrictEqual(
        yield* plans.effective(project.id),
        { events_enabled: false, monthly_allowance: 250, metered_overage: true, retention_days: 365 }
      )
      const partly = yield* parley(url, "projects", "plan", project.id, "--events", "on", "--retention-days", "30")
      assert.strictEqual(partly.code, 0, partly.stderr)
      assert.include(partly.stdout, "project events    on")
      assert.include(partly.stdout, "monthly allowance 250 (0 used in ")
      assert.deepStrictEqual(
        yield* plans.effective(project.id),
        { events_enabled: true, monthly_allowance: 250, metered_overage: true, retention_days: 30 }
      )

      const bad = yield* parley(url, "projects", "plan", project.id, "--retention-days", "0")
      assert.notStrictEqual(bad.code, 0)
      assert.include(bad.stderr, "retention_days must be between 1 and 3650")
      const unknown = yield* parley(url, "projects", "plan", "00000000-0000-4000-8000-000000000000")
      assert.notStrictEqual(unknown.code, 0)
      assert.include(unknown.stderr, "Project not found")
    }), { timeout: 120_000 })
})
