/**
 * A broadcast survives SIGKILLs of its host (decisions 3.4, 8.2): a real host
 * process (`main.ts`, as `npm start` runs it) on PostgreSQL sends a broadcast
 * of a few hundred recipients and is SIGKILLed at random moments while it
 * sends, then started again over the same database. The simulated network's
 * outbox (persisted in `sim_outbox`, read through `GET /sandbox/outbox`) must
 * hold each recipient's message exactly once and every recipient end `sent`:
 * none twice, none lost, none left pending. A send in doubt (recorded, answer
 * lost with the process) is settled by the network's status report carrying
 * its key — the simulated network delivers the reports it still owed after the
 * restart — or, when none came within the grace, sent again. Two more kills
 * come after it completed, while delivered and read reports arrive; then the
 * counters the store keeps must equal the recipients as read from their
 * messages.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { emptyDatabase } from "../../store-pg/test/pg.ts"
import { crashHost, sleep } from "./process.support.ts"

const KEY = "pk_test_broadcast_crash_0123456789abc"
const PNID = "100000000000001"
const RECIPIENTS = Number(process.env.PARLEY_BROADCAST_CHAOS_RECIPIENTS ?? 300)
const KILLS = Number(process.env.PARLEY_BROADCAST_CHAOS_KILLS ?? 4)
/** Kills once it completed, while the network's delivered and read reports still arrive. */
const AFTER_KILLS = 2

interface Recipient {
  readonly phone_number: string
  readonly status: string
  readonly delivered_at: string | null
  readonly read_at: string | null
  readonly responded_at: string | null
  readonly error_message: string | null
  readonly error_details: { error_code: string } | null
}

const counters = (b: Record<string, number>) => ({
  total: b["total_recipients"], sent: b["sent_count"], failed: b["failed_count"], delivered: b["delivered_count"],
  read: b["read_count"], responded: b["responded_count"], pending: b["pending_count"]
})

/** The counters as the recipients' rows say (decisions 2.14). */
const recount = (recipients: ReadonlyArray<Recipient>) => ({
  total: recipients.length,
  sent: recipients.filter((r) => r.status === "sent").length,
  failed: recipients.filter((r) => r.status === "failed" || r.status === "suppressed").length,
  delivered: recipients.filter((r) => r.delivered_at !== null).length,
  read: recipients.filter((r) => r.read_at !== null).length,
  responded: recipients.filter((r) => r.responded_at !== null).length,
  pending: recipients.filter((r) => r.status === "pending").length
})


const crashRun = async (databaseUrl: string) => {
  const host = await crashHost({
    name: "broadcast-crash",
    databaseUrl,
    key: KEY,
    env: {
      PARLEY_UPSTREAM_APP_SECRET: "broadcast-crash-app-secret",
      PARLEY_LOG_LEVEL: "Info",
      // Short trust periods, so a dead host's broadcast is taken over within the test (defaults: 30 s, 15 s, 60 s).
      PARLEY_BROADCAST_LEASE_MS: "1500",
      PARLEY_BROADCAST_SWEEP_MS: "300",
      // Long enough for the reports the network still owed to arrive after a restart on a loaded machine.
      PARLEY_BROADCAST_DOUBT_GRACE_MS: "10000",
      PARLEY_BROADCAST_PROGRESS_MS: "1000"
    }
  })
  const { kill, lives, logFile, request, spawn } = host
  const started = async () => {
    if (!(await host.ready(60_000))) throw new Error(`the host died while starting; see ${logFile}`)
  }
  const until = async (what: string, check: () => Promise<boolean>, ms: number) => {
    const deadline = Date.now() + ms
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`still waiting for ${what}; see ${logFile}`)
      await sleep(100)
    }
  }

  try {
    spawn()
    await started()
    // An approved template of the number's account: created through the proxy, reviewed by the network.
    const numbers = await request("GET", "/platform/v1/msg/phone_numbers")
    const number = numbers.body.data.find((n: { phone_number_id: string }) => n.phone_number_id === PNID)
    const created = await request("POST", `/proxy/${number.business_account_id}/message_templates`, {
      name: "crash_sale",
      category: "MARKETING",
      language: "en_US",
      components: [{ type: "BODY", text: "Hi {{1}}, the sale is on!", example: { body_text: [["Ada"]] } }]
    })
    if (created.status !== 200) throw new Error(`template: ${created.status} ${created.text}`)
    let templateId = ""
    await until("the template approved", async () => {
      const listed = await request("GET", "/platform/v1/msg/templates?name=crash_sale&status=approved")
      templateId = listed.body?.data?.[0]?.id ?? ""
      return templateId !== ""
    }, 30_000)
    const broadcast = await request("POST", "/platform/v1/msg/broadcasts", {
      msg_broadcast: { name: "Crash sale", phone_number_id: PNID, msg_template_id: templateId }
    })
    const id = broadcast.body.data.id as string
    const phones = Array.from({ length: RECIPIENTS }, (_, i) => `1555${String(8000000 + i)}`)
    const added = await request("POST", `/platform/v1/msg/broadcasts/${id}/recipients`, {
      recipients: phones.map((phone_number, i) => ({ phone_number, template_parameters: [`r${i}`] }))
    })
    assert.deepStrictEqual(added.body.data, { added: RECIPIENTS, duplicates: 0, errors: [] })
    assert.strictEqual((await request("POST", `/platform/v1/msg/broadcasts/${id}/send`)).status, 202)

    // Kill the host while it sends, at random moments of each life.
    for (let k = 0; k < KILLS; k++) {
      await sleep(300 + Math.floor(Math.random() * 900))
      await kill()
      spawn()
      await started()
    }
    await until("the broadcast completed", async () => (await request("GET", `/platform/v1/msg/broadcasts/${id}`)).body?.data?.status === "completed", 90_000)
    // And while the network's delivered and read reports come in: the counters they move are written with them.
    for (let k = 0; k < AFTER_KILLS; k++) {
      await sleep(100 + Math.floor(Math.random() * 400))
      await kill()
      spawn()
      await started()
    }

    const outbox = await request("GET", `/sandbox/outbox?phone_number_id=${PNID}`)
    const received = new Map<string, number>()
    for (const m of outbox.body.data as Array<{ to: string | null; type: string }>) {
      if (m.type === "template" && m.to !== null) received.set(m.to, (received.get(m.to) ?? 0) + 1)
    }
    const listRecipients = async () => {
      const recipients: Array<Recipient> = []
      for (let page = 1;; page++) {
        const res = await request("GET", `/platform/v1/msg/broadcasts/${id}/recipients?page=${page}&per_page=100`)
        recipients.push(...res.body.data)
        if (res.body.data.length < 100) break
      }
      return recipients
    }
    // The counters against the recipients as read from their messages, at a moment no report moved them between the
    // two reads of the broadcast.
    let final: Record<string, number> = {}
    let recipients: Array<Recipient> = []
    let recounted: Record<string, number> = {}
    for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
      final = (await request("GET", `/platform/v1/msg/broadcasts/${id}`)).body.data
      recipients = await listRecipients()
      const again = (await request("GET", `/platform/v1/msg/broadcasts/${id}`)).body.data
      recounted = recount(recipients)
      if (JSON.stringify(counters(final)) === JSON.stringify(counters(again)) && JSON.stringify(counters(final)) === JSON.stringify(recounted)) break
      await sleep(500)
    }
    return { final, received, recipients, recounted, lives: lives(), logFile }
  } finally {
    await host.close()
  }
}

describe("a broadcast across SIGKILLs of its host (postgres)", () => {
  it.live(`${RECIPIENTS} recipients, ${KILLS} kills while sending: every recipient sent exactly once, none lost, none left pending`, () =>
    Effect.gen(function*() {
      const databaseUrl = yield* emptyDatabase
      const { final, received, recipients, recounted, lives, logFile } = yield* Effect.promise(() => crashRun(databaseUrl))
      const duplicates = [...received.entries()].filter(([, n]) => n > 1)
      const lost = recipients.filter((r) => received.get(r.phone_number) !== 1)
      const notSent = recipients.filter((r) => r.status !== "sent")
      console.log(
        `broadcast chaos: lives ${lives}, recipients ${recipients.length}, counters ${JSON.stringify(counters(final))}, ` +
          `duplicates ${duplicates.length}, missing ${lost.length}, hosts' log ${logFile}`
      )
      for (const r of notSent) console.log(`  ${r.phone_number}: ${r.status} ${r.error_details?.error_code} ${r.error_message}`)
      assert.strictEqual(recipients.length, RECIPIENTS)
      assert.deepStrictEqual(duplicates, [], "no recipient sent twice")
      assert.deepStrictEqual(lost.map((r) => r.phone_number), [], "every recipient reached the network")
      assert.deepStrictEqual(notSent.map((r) => `${r.phone_number}: ${r.status} ${r.error_details?.error_code} ${r.error_message}`), [], "every recipient sent")
      assert.deepStrictEqual([final["sent_count"], final["failed_count"], final["pending_count"]], [RECIPIENTS, 0, 0])
      assert.deepStrictEqual(counters(final), recounted, "the kept counters equal the recipients as read")
      assert.isAbove(recounted.delivered, 0, "the network's reports moved the counters")
    }).pipe(Effect.scoped), 240_000)
})
