/**
 * The inbound path survives SIGKILLs of its host (see `inbound.crash.support.ts`): a short run here; `npm run
 * chaos:inbound` runs 60 kill points (`PARLEY_CHAOS_KILLS`, `PARLEY_CHAOS_CONTACTS`, `PARLEY_CHAOS_SEED`).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { emptyDatabase } from "../../store-pg/test/pg.ts"
import { runInboundCrash } from "./inbound.crash.support.ts"

const kills = Number(process.env.PARLEY_CHAOS_KILLS ?? 6)
const contacts = Number(process.env.PARLEY_CHAOS_CONTACTS ?? 16)
const seed = process.env.PARLEY_CHAOS_SEED === undefined ? undefined : Number(process.env.PARLEY_CHAOS_SEED)

describe("inbound messages across SIGKILLs of the host (postgres)", () => {
  it.live(`${kills} kill points, ${contacts} contacts: each acknowledged message stored once, each run resumed once, nothing sent twice`, () =>
    Effect.gen(function*() {
      const databaseUrl = yield* emptyDatabase
      const report = yield* Effect.promise(() => runInboundCrash({ databaseUrl, kills, contacts, seed, log: (line) => console.log(line) }))
      console.log(
        `chaos inbound: kill points ${report.killPoints}, contacts ${report.contacts}, POSTs acknowledged ${report.acknowledged}, ` +
          `not stored once ${report.notOnce}, duplicates ${report.duplicates}, stuck ${report.stuck}, in doubt ${report.inDoubt}, ` +
          `wrong ${report.wrong}, duration ${(report.durationMs / 1000).toFixed(1)} s, seed ${report.seed}, hosts' log ${report.logFile}`
      )
      for (const problem of report.problems) console.log(`  ${problem}`)
      assert.strictEqual(report.notOnce, 0, "every acknowledged message stored once")
      assert.strictEqual(report.duplicates, 0, "no answer delivered twice")
      assert.strictEqual(report.stuck, 0, "no run left unfinished")
      assert.strictEqual(report.wrong, 0, "every contact's run took both messages and ended")
    }).pipe(Effect.scoped), Math.max(300_000, kills * 30_000))
})
