/**
 * Executions survive SIGKILLs of their host (see `executions.crash.support.ts`):
 * 20+ kill points at random moments of a real host process on PostgreSQL;
 * every execution ends as an uninterrupted run does, no contact receives a
 * step's message twice, none is stuck. `npm run chaos` runs the same with
 * 200 kill points (`PARLEY_CHAOS_KILLS`, `PARLEY_CHAOS_EXECUTIONS`,
 * `PARLEY_CHAOS_SEED`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { emptyDatabase } from "../../store-pg/test/pg.ts"
import { runCrash } from "./executions.crash.support.ts"

const kills = Number(process.env.PARLEY_CHAOS_KILLS ?? 20)
const executions = Number(process.env.PARLEY_CHAOS_EXECUTIONS ?? 24)
const seed = process.env.PARLEY_CHAOS_SEED === undefined ? undefined : Number(process.env.PARLEY_CHAOS_SEED)
const crashProbability = Number(process.env.PARLEY_CHAOS_CRASH_PROBABILITY ?? 0.05)

describe("executions across SIGKILLs of the host (postgres)", () => {
  it.live(`${kills} kill points, ${executions} executions: each ends as uninterrupted, nothing sent twice, none stuck`, () =>
    Effect.gen(function*() {
      const databaseUrl = yield* emptyDatabase
      const report = yield* Effect.promise(() => runCrash({ databaseUrl, kills, executions, seed, crashProbability, log: (line) => console.log(line) }))
      console.log(
        `chaos: kill points ${report.killPoints} (${report.selfKills} at engine crash points), executions ${report.executions}, duplicates ${report.duplicates}, ` +
          `stuck ${report.stuck}, in doubt ${report.inDoubt} (${report.inDoubtDelivered} of them delivered), wrong ${report.wrong}, ` +
          `duration ${(report.durationMs / 1000).toFixed(1)} s, seed ${report.seed}, hosts' log ${report.logFile}`
      )
      for (const problem of report.problems) console.log(`  ${problem}`)
      assert.strictEqual(report.duplicates, 0, "no message delivered twice")
      assert.strictEqual(report.stuck, 0, "no execution left unfinished")
      assert.strictEqual(report.wrong, 0, "every execution ends as an uninterrupted run does")
    }).pipe(Effect.scoped), Math.max(300_000, kills * 12_000))
})
