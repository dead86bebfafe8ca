/**
 * Crash injection for the inbound path (decisions "One hop from the network to the run"): a real host process
 * (`main.ts`) on PostgreSQL, SIGKILLed at random points and started again over the same database, while this driver
 * plays the network: it POSTs signed upstream webhooks to the host, bursts of one to four contacts' messages per
 * POST, each POST again until the host acknowledges it (a 200), and some acknowledged POSTs once more (the network
 * delivers at least once). Each contact writes twice: its first message starts a run of the number's
 * `inbound_message` workflow (it answers `a <message>` and waits), its second, POSTed once that run waits, resumes
 * it (it answers `c <message>` and ends).
 *
 * At the end: every acknowledged message is stored once, every contact has one run, which took both messages and
 * ended, and the simulated network's outbox holds each answer exactly once (an answer whose send the crash left in
 * doubt may be missing, never doubled: decisions 10.4).
 */
import { createHmac } from "node:crypto"
import { crashHost, deliveredTexts, random, SHORT_EXECUTION_TRUST, sleep } from "./process.support.ts"

const KEY = "pk_test_inbound_crash_0123456789ab"
const PNID = "100000000000001"
const APP_SECRET = "inbound-crash-app-secret"

export interface InboundCrashOptions {
  readonly databaseUrl: string
  readonly kills: number
  /** Contacts, two messages each. */
  readonly contacts: number
  readonly seed?: number | undefined
  readonly log?: ((line: string) => void) | undefined
}

export interface InboundCrashReport {
  readonly seed: number
  readonly killPoints: number
  readonly contacts: number
  /** POSTs the host acknowledged (redeliveries included). */
  readonly acknowledged: number
  /** Acknowledged messages stored more than once, or never. */
  readonly notOnce: number
  readonly duplicates: number
  readonly stuck: number
  readonly inDoubt: number
  readonly wrong: number
  readonly durationMs: number
  readonly problems: ReadonlyArray<string>
  readonly logFile: string
}


const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({ id, position: { x: 0, y: 0 }, data: { node_type, config } })
const edge = (source: string, target: string) => ({ source, target })
const definition = {
  nodes: [
    node("start", "start"),
    node("a", "send_text", { message: "a {{vars.last_user_input}}" }),
    node("ask", "wait_for_response", { save_response_to: "answer" }),
    node("c", "send_text", { message: "c {{vars.answer}}" })
  ],
  edges: [edge("start", "a"), edge("a", "ask"), edge("ask", "c")]
}

interface Message {
  readonly phone: string
  readonly id: string
  readonly body: string
}

/** The network's webhook POST carrying these messages (one change, as the network batches a number's messages). */
const payload = (messages: ReadonlyArray<Message>) => {
  const seconds = String(Math.floor(Date.now() / 1000))
  return JSON.stringify({
    object: "whatsapp_business_account",
    entry: [{
      id: "crash-waba",
      changes: [{
        field: "messages",
        value: {
          messaging_product: "whatsapp",
          metadata: { display_phone_number: "15550000001", phone_number_id: PNID },
          contacts: messages.map((m) => ({ wa_id: m.phone, profile: { name: `Contact ${m.phone}` } })),
          messages: messages.map((m) => ({ from: m.phone, id: m.id, timestamp: seconds, type: "text", text: { body: m.body } }))
        }
      }]
    }]
  })
}

export const runInboundCrash = async (options: InboundCrashOptions): Promise<InboundCrashReport> => {
  const began = Date.now()
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31)
  const rand = random(seed)
  const log = options.log ?? (() => {})
  const host = await crashHost({
    name: "inbound-crash",
    databaseUrl: options.databaseUrl,
    key: KEY,
    env: { PARLEY_UPSTREAM_APP_SECRET: APP_SECRET, PARLEY_LOG_LEVEL: "Warn", ...SHORT_EXECUTION_TRUST }
  })
  const { base, logFile, exited, kill, ready, request } = host

  /** One POST as the network makes it: true when the host acknowledged it (200). */
  const post = async (body: string) => {
    const signature = `sha256=${createHmac("sha256", APP_SECRET).update(body).digest("hex")}`
    try {
      const res = await fetch(`${base}/platform/v1/msg/upstream/webhook`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-hub-signature-256": signature },
        body,
        signal: AbortSignal.timeout(10_000)
      })
      await res.text()
      if (res.status !== 200 && res.status < 500) throw new Error(`the host refused an upstream POST: ${res.status}`)
      return res.status === 200
    } catch (error) {
      if (error instanceof Error && error.message.startsWith("the host refused")) throw error
      return false
    }
  }

  const contacts = Array.from({ length: options.contacts }, (_, i) => `1555${String(8000000 + i)}`)
  const first = new Map(contacts.map((phone, i) => [phone, { phone, id: `wamid.crash.first.${i}`, body: `hello-${i}` }]))
  const second = new Map(contacts.map((phone, i) => [phone, { phone, id: `wamid.crash.second.${i}`, body: `yes-${i}` }]))
  const acked = new Set<string>()
  const sentSecond = new Set<string>()
  let acknowledged = 0
  let workflowId = ""
  /** Contact of each run, by the first message it started with. */
  const runs = new Map<string, { readonly phone: string; status: string; waitingReason: string | null; answer: unknown; errorCode: string | null }>()

  const refresh = async () => {
    for (let page = 1;; page++) {
      const res = await request("GET", `/platform/v1/workflows/${workflowId}/executions?page=${page}&per_page=100`)
      if (res.status !== 200) throw new Error(`list answered ${res.status}`)
      const items = res.body.data as Array<{ id: string; status: string }>
      for (const item of items) {
        const known = runs.get(item.id)
        if (known !== undefined && known.status === item.status) continue
        const d = (await request("GET", `/platform/v1/workflow_executions/${item.id}`)).body.data
        const index = String(d.execution_context.vars.last_user_input ?? "").split("-")[1]
        const phone = known?.phone ?? contacts[Number(index)] ?? "?"
        runs.set(item.id, {
          phone,
          status: d.status,
          waitingReason: d.waiting_reason,
          answer: d.execution_context.vars.answer,
          errorCode: d.error_details?.code ?? null
        })
      }
      if (items.length < 100) return
    }
  }

  /** One pass: a burst of messages not acknowledged yet (second messages once their run waits), some redelivered. */
  const drive = async () => {
    await refresh()
    const waiting = new Set([...runs.values()].filter((r) => r.status === "waiting" && r.waitingReason === "wait_for_response").map((r) => r.phone))
    const due: Array<Message> = []
    for (const phone of contacts) {
      const m1 = first.get(phone)!
      if (!acked.has(m1.id)) due.push(m1)
      else if (waiting.has(phone) || sentSecond.has(phone)) {
        const m2 = second.get(phone)!
        if (!acked.has(m2.id)) due.push(m2)
      }
    }
    const bursts: Array<Array<Message>> = []
    for (let i = 0; i < due.length && bursts.length < 8;) {
      const size = 1 + Math.floor(rand() * 4)
      bursts.push(due.slice(i, i + size))
      i += size
    }
    await Promise.all(bursts.map(async (burst) => {
      for (const m of burst) if (m.id.includes(".second.")) sentSecond.add(m.phone)
      const body = payload(burst)
      if (await post(body)) {
        acknowledged++
        for (const m of burst) acked.add(m.id)
        // The network delivers at least once.
        if (rand() < 0.2 && (await post(body))) acknowledged++
      }
    }))
  }

  try {
    host.spawn({})
    if (!(await ready(180_000))) throw new Error(`the host exited during start; see ${logFile}`)
    // Setup before any kill: each contact's window opened on the simulated network (it refuses answers otherwise),
    // then the workflow and its trigger.
    for (const phone of contacts) {
      const res = await request("POST", "/sandbox/inbound", { phone_number_id: PNID, from: phone, message: { type: "text", text: { body: "hi" } } })
      if (res.status !== 202) throw new Error(`inbound answered ${res.status}: ${res.text}`)
    }
    const by = Date.now() + 30_000
    while ((await request("GET", `/platform/v1/msg/conversations?per_page=1`)).body.meta.total_count < contacts.length) {
      if (Date.now() > by) throw new Error("the contacts' windows did not open")
      await sleep(50)
    }
    const created = await request("POST", "/platform/v1/workflows", {
      workflow: { name: "inbound crash", status: "active", definition, message_debounce_seconds: 0 }
    })
    if (created.status !== 201) throw new Error(`create answered ${created.status}: ${created.text}`)
    workflowId = created.body.data.id
    const trigger = await request("POST", `/platform/v1/workflows/${workflowId}/triggers`, {
      trigger: { trigger_type: "inbound_message", phone_number_id: PNID }
    })
    if (trigger.status !== 201) throw new Error(`trigger answered ${trigger.status}: ${trigger.text}`)

    let killPoints = 0
    while (killPoints < options.kills) {
      if (exited()) host.spawn({})
      const duringStart = rand() < 0.2
      if (duringStart) await sleep(Math.floor(rand() * 1_200))
      else if (await ready(180_000)) {
        const until = Date.now() + 50 + Math.floor(rand() * 1_000)
        while (Date.now() < until && !exited()) {
          await drive().catch(() => {})
          await sleep(10)
        }
      }
      if (!exited()) await kill()
      killPoints++
      log(`kill ${killPoints}/${options.kills}${duringStart ? " (during start)" : ""}`)
    }

    // The last life: every message acknowledged, every run ended.
    host.spawn({})
    if (!(await ready(180_000))) throw new Error(`the host exited during its last start; see ${logFile}`)
    const settleBy = Date.now() + 90_000
    const done = () => acked.size === contacts.length * 2 && [...runs.values()].every((r) => r.status === "ended" || r.status === "failed")
    while (!done() && Date.now() < settleBy) {
      await drive()
      await sleep(50)
    }
    await refresh()

    const problems: Array<string> = []
    // Stored once: each acknowledged message, by its network id.
    let notOnce = 0
    const stored = new Map<string, number>()
    for (let cursor: string | undefined = undefined;;) {
      const page: { status: number; body: any } = await request(
        "GET",
        `/platform/v1/msg/messages?direction=inbound&phone_number_id=${PNID}&limit=100${cursor === undefined ? "" : `&after=${cursor}`}`
      )
      if (page.status !== 200) throw new Error(`messages answered ${page.status}`)
      for (const m of page.body.data as Array<{ id: string }>) stored.set(m.id, (stored.get(m.id) ?? 0) + 1)
      if (page.body.paging?.next === null || page.body.paging?.next === undefined) break
      cursor = page.body.paging.cursors.after
    }
    for (const id of acked) {
      if (stored.get(id) !== 1) {
        notOnce++
        problems.push(`${id} stored ${stored.get(id) ?? 0} times`)
      }
    }
    const delivered = await deliveredTexts(request, PNID)
    const { received, duplicates } = delivered
    problems.push(...delivered.problems)
    let stuck = 0
    let inDoubt = 0
    let wrong = 0
    contacts.forEach((phone, i) => {
      const mine = [...runs.values()].filter((r) => r.phone === phone)
      const expected = [`a hello-${i}`, `c yes-${i}`].map((text) => received.get(`${phone}|${text}`) ?? 0)
      if (mine.length !== 1) {
        wrong++
        problems.push(`${phone}: ${mine.length} runs`)
        return
      }
      const run = mine[0]!
      if (run.status !== "ended" && run.status !== "failed") {
        stuck++
        problems.push(`${phone}: stuck in ${run.status}`)
      } else if (run.status === "failed" && run.errorCode === "send_in_doubt") {
        inDoubt++
        if (expected.some((n) => n > 1)) wrong++
      } else if (run.status !== "ended" || run.answer !== `yes-${i}` || expected.some((n) => n !== 1)) {
        wrong++
        problems.push(`${phone}: ${run.status} (${run.errorCode}), answer ${String(run.answer)}, answers sent ${expected.join(",")}`)
      }
    })
    return {
      seed,
      killPoints,
      contacts: contacts.length,
      acknowledged,
      notOnce,
      duplicates,
      stuck,
      inDoubt,
      wrong,
      durationMs: Date.now() - began,
      problems,
      logFile
    }
  } finally {
    await host.close()
  }
}
