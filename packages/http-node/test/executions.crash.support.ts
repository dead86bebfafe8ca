/**
 * Crash injection for the execution engine: a real host process (`main.ts`,
 * as `npm start` runs it) on a PostgreSQL database, SIGKILLed at random
 * points and started again over the same database, while a driver starts
 * executions and resumes the waiting ones over HTTP. At the end every
 * execution must have reached the state an uninterrupted run reaches, and the
 * simulated network's outbox (persisted in `sim_outbox`, read back through
 * `GET /sandbox/outbox`) must hold each expected message exactly once.
 *
 * How sends in doubt count (decisions 10.4, never twice): a run whose send
 * was recorded but whose answer the crash lost fails with `send_in_doubt`
 * unless the network's status report settles it. Such a run is counted
 * apart: the message of the step in doubt may be there once or not at all,
 * later steps' messages must be absent, and nothing may be there twice.
 *
 * Three workflows, one contact per execution (each contact writes in first, so
 * the 24-hour window is open; that setup runs before the first kill):
 *   reply:   a → b (delay 1 s) → wait for a reply (no timeout; the driver
 *            resumes it over HTTP) → c with the answer
 *   timeout: a → wait for a reply (10 s timeout, the least allowed) → z
 *   agent:   a → an agent on the host's simulated model (it answers the
 *            contact's "hello" and waits; the driver resumes it with "bye" and
 *            the model calls complete_task) → z
 * An agent's send in doubt is not a failure: the model is told it is
 * unverified and the run goes on, so its reply may be there once or not at
 * all, never twice.
 */
import { crashHost, deliveredTexts, random, SHORT_EXECUTION_TRUST, sleep } from "./process.support.ts"

const KEY = "pk_test_crash_0123456789abcdef0123"
const PNID = "100000000000001"

export interface CrashOptions {
  readonly databaseUrl: string
  /** SIGKILLs before the final start. */
  readonly kills: number
  /** Executions started (half on each workflow), one contact each. */
  readonly executions: number
  /** Seed of the kill points (reported, so a failing run can be repeated). */
  readonly seed?: number | undefined
  /** The chance a host SIGKILLs itself at each of the engine's crash points (`PARLEY_TEST_CRASH_PROBABILITY`). */
  readonly crashProbability?: number | undefined
  readonly log?: ((line: string) => void) | undefined
}

export interface CrashReport {
  readonly seed: number
  readonly killPoints: number
  /** Of them, kills the host did itself at an engine crash point (after a commit, after a send). */
  readonly selfKills: number
  readonly executions: number
  /** Messages the network delivered more than once (extra copies). */
  readonly duplicates: number
  /** Executions not in a terminal state once the final host settled. */
  readonly stuck: number
  /** Executions that failed `send_in_doubt` (allowed; see above). */
  readonly inDoubt: number
  /** Of them, those whose message in doubt had in fact reached the contact. */
  readonly inDoubtDelivered: number
  /** Executions whose end state or messages differ from an uninterrupted run's. */
  readonly wrong: number
  readonly durationMs: number
  readonly problems: ReadonlyArray<string>
  /** The hosts' output, for a failing run. */
  readonly logFile: string
}



interface Planned {
  readonly k: string
  readonly workflow: "reply" | "timeout" | "agent"
  readonly phone: string
}

/** The send steps of each workflow, in the order of `expectedTexts`. */
const sendSteps = { reply: ["a", "b", "c"], timeout: ["a", "z"], agent: ["a", "agent", "z"] }

/** The simulated model's rule-driven answer to the contact's "hello" (decisions: model simulator rules). */
const AGENT_REPLY = "You said: hello"

const expectedTexts = (p: Planned) =>
  p.workflow === "reply"
    ? [`a ${p.k}`, `b ${p.k}`, `c yes-${p.k}`]
    : p.workflow === "agent"
    ? [`a ${p.k}`, AGENT_REPLY, `z ${p.k}`]
    : [`a ${p.k}`, `z ${p.k}`]

const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({
  id,
  position: { x: 0, y: 0 },
  data: { node_type, config }
})
const edge = (source: string, target: string) => ({ source, target })

const definitions = {
  reply: {
    nodes: [
      node("start", "start"),
      node("a", "send_text", { message: "a {{vars.k}}" }),
      node("b", "send_text", { message: "b {{vars.k}}", delay_seconds: 1 }),
      node("ask", "wait_for_response", { save_response_to: "answer" }),
      node("c", "send_text", { message: "c {{vars.answer}}" })
    ],
    edges: [edge("start", "a"), edge("a", "b"), edge("b", "ask"), edge("ask", "c")]
  },
  timeout: {
    nodes: [
      node("start", "start"),
      node("a", "send_text", { message: "a {{vars.k}}" }),
      node("ask", "wait_for_response", { save_response_to: "answer", has_timeout: true, timeout_seconds: 10 }),
      node("z", "send_text", { message: "z {{vars.k}}" })
    ],
    edges: [edge("start", "a"), edge("a", "ask"), edge("ask", "z")]
  },
  agent: {
    nodes: [
      node("start", "start"),
      node("a", "send_text", { message: "a {{vars.k}}" }),
      node("agent", "agent", { provider_model_name: "parley-sim", system_prompt: "Answer briefly." }),
      node("z", "send_text", { message: "z {{vars.k}}" })
    ],
    edges: [edge("start", "a"), edge("a", "agent"), edge("agent", "z")]
  }
}

interface Known {
  readonly k: string
  status: string
  waitingReason: string | null
  errorCode: string | null
  failedStep: string | null
  answer: unknown
}

export const runCrash = async (options: CrashOptions): Promise<CrashReport> => {
  const began = Date.now()
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31)
  const rand = random(seed)
  const log = options.log ?? (() => {})
  const host = await crashHost({
    name: "crash",
    databaseUrl: options.databaseUrl,
    key: KEY,
    env: {
      // Fixed, so a status report signed by one life of the host is accepted by the next.
      PARLEY_UPSTREAM_APP_SECRET: "crash-test-app-secret",
      PARLEY_LOG_LEVEL: "Warn",
      ...SHORT_EXECUTION_TRUST
    }
  })
  const { logFile, exited, kill, ready, request } = host
  const spawn = (crashProbability = 0) => host.spawn({ PARLEY_TEST_CRASH_PROBABILITY: String(crashProbability) })

  const started = async () => {
    if (!(await ready(60_000))) throw new Error(`the host exited during start; see ${logFile}`)
  }

  const planned: Array<Planned> = Array.from({ length: options.executions }, (_, i) => ({
    k: String(i),
    workflow: (["reply", "timeout", "agent"] as const)[i % 3]!,
    phone: `1555${String(7000000 + i)}`
  }))
  const workflowIds: Record<Planned["workflow"], string> = { reply: "", timeout: "", agent: "" }
  const known = new Map<string, Known>()
  const byK = new Map<string, string>()
  const inFlight = new Set<string>()
  // Starts are spread over the lives, so kills keep landing on work in progress rather than on an idle host.
  // (Most lives that get driven start some: 80% are driven; the rest of the budget is slack for the last ones.)
  const startsPerLife = planned.length / Math.max(1, options.kills * 0.7)
  let startsLeft = Infinity

  /** Reads every execution of both workflows; new ones by detail, to learn which contact they serve. */
  const refresh = async () => {
    for (const workflowId of Object.values(workflowIds)) {
      for (let page = 1;; page++) {
        const res = await request("GET", `/platform/v1/workflows/${workflowId}/executions?page=${page}&per_page=100`)
        if (res.status !== 200) throw new Error(`list answered ${res.status}: ${res.text}`)
        const items = res.body.data as Array<{ id: string; status: string; waiting_reason: string | null }>
        for (const item of items) {
          let entry = known.get(item.id)
          if (entry === undefined || entry.status !== item.status) {
            const detail = await request("GET", `/platform/v1/workflow_executions/${item.id}`)
            if (detail.status !== 200) throw new Error(`get answered ${detail.status}: ${detail.text}`)
            const d = detail.body.data
            entry = {
              k: String(d.execution_context.vars.k),
              status: d.status,
              waitingReason: d.waiting_reason,
              errorCode: d.error_details?.code ?? null,
              failedStep: d.error_details?.step_identifier ?? null,
              answer: d.execution_context.vars.answer
            }
            known.set(item.id, entry)
            byK.set(entry.k, item.id)
          }
        }
        if (items.length < 100) break
      }
    }
  }

  /** One pass of the driver: start what has not started, resume the replies' waits. */
  const drive = async () => {
    await refresh()
    const work: Array<Promise<unknown>> = []
    for (const p of planned) {
      if (inFlight.has(p.k)) continue
      const id = byK.get(p.k)
      if (id === undefined) {
        if (startsLeft <= 0) continue
        startsLeft--
        inFlight.add(p.k)
        work.push(
          request("POST", `/platform/v1/workflows/${workflowIds[p.workflow]}/executions`, {
            workflow_execution: { phone_number: `+${p.phone}`, variables: { k: p.k } }
          }).then((res) => {
            if (res.status !== 202) throw new Error(`start answered ${res.status}: ${res.text}`)
          }).finally(() => inFlight.delete(p.k))
        )
      } else if (p.workflow === "reply" && known.get(id)!.status === "waiting" && known.get(id)!.waitingReason === "wait_for_response") {
        inFlight.add(p.k)
        work.push(
          request("POST", `/platform/v1/workflow_executions/${id}/resume`, { message: { kind: "text", data: `yes-${p.k}` } })
            .then((res) => {
              // 422/409: another resume or a move won the race; the next pass reads the outcome.
              if (res.status !== 200 && res.status !== 422 && res.status !== 409) throw new Error(`resume answered ${res.status}: ${res.text}`)
            })
            .finally(() => inFlight.delete(p.k))
        )
      } else if (p.workflow === "agent" && known.get(id)!.status === "waiting" && known.get(id)!.waitingReason === "agent") {
        inFlight.add(p.k)
        work.push(
          request("POST", `/platform/v1/workflow_executions/${id}/resume`, { message: { kind: "text", data: "bye" } })
            .then((res) => {
              if (res.status !== 200 && res.status !== 422 && res.status !== 409) throw new Error(`resume answered ${res.status}: ${res.text}`)
            })
            .finally(() => inFlight.delete(p.k))
        )
      }
    }
    await Promise.all(work)
  }

  /** Drives until `stop` says so; a request cut by the kill ends the loop quietly. */
  const driveUntil = async (stop: () => boolean) => {
    while (!stop()) {
      try {
        await drive()
      } catch (error) {
        if (stop()) return
        throw error
      }
      await sleep(20)
    }
  }

  const isConnectionError = (error: unknown) =>
    error instanceof TypeError || (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError"))

  try {
    // Setup, before any kill: workflows and the contacts' open windows.
    spawn()
    await started()
    for (const name of ["reply", "timeout", "agent"] as const) {
      const res = await request("POST", "/platform/v1/workflows", { workflow: { name: `crash ${name}`, status: "active", definition: definitions[name] } })
      if (res.status !== 201) throw new Error(`create answered ${res.status}: ${res.text}`)
      workflowIds[name] = res.body.data.id
    }
    for (const p of planned) {
      const res = await request("POST", "/sandbox/inbound", { phone_number_id: PNID, from: p.phone, message: { type: "text", text: { body: "hello" } } })
      if (res.status !== 202) throw new Error(`inbound answered ${res.status}: ${res.text}`)
    }
    const windowsBy = Date.now() + 30_000
    for (const p of planned) {
      while ((await request("GET", `/platform/v1/msg/conversations?phone_number=${p.phone}`)).body?.data?.length !== 1) {
        if (Date.now() > windowsBy) throw new Error(`no conversation for ${p.phone}`)
        await sleep(20)
      }
    }

    // The kill points: ours, some while the host starts, the others a random while into driving it; and the
    // host's own at the engine's crash points.
    let killPoints = 0
    let selfKills = 0
    let alive = !exited()
    while (killPoints < options.kills) {
      if (!alive) spawn(options.crashProbability ?? 0)
      alive = true
      const duringStart = rand() < 0.2
      if (duringStart) {
        await sleep(Math.floor(rand() * 1_200))
      } else if (await ready(60_000)) {
        startsLeft = Math.floor(startsPerLife) + (rand() < startsPerLife % 1 ? 1 : 0)
        const until = Date.now() + 50 + Math.floor(rand() * 1_500)
        await driveUntil(() => Date.now() >= until || exited()).catch((error) => {
          if (!isConnectionError(error)) throw error
        })
      }
      const itself = exited()
      if (itself) selfKills++
      else await kill()
      alive = false
      killPoints++
      log(`kill ${killPoints}/${options.kills}${itself ? " (the host, at a crash point)" : duringStart ? " (during start)" : ""}`)
    }

    // The last life runs undisturbed until every execution has ended (or it gives up).
    spawn()
    await started()
    startsLeft = Infinity
    const settleBy = Date.now() + 60_000
    const allTerminal = () =>
      planned.every((p) => {
        const id = byK.get(p.k)
        const status = id === undefined ? undefined : known.get(id)!.status
        return status === "ended" || status === "failed"
      })
    await driveUntil(() => allTerminal() || Date.now() > settleBy)
    await refresh()

    // What contacts received, by (contact, text).
    const delivered = await deliveredTexts(request, PNID)
    const { received, duplicates } = delivered
    const problems: Array<string> = [...delivered.problems]
    let stuck = 0
    let inDoubt = 0
    let inDoubtDelivered = 0
    let wrong = 0
    const executionsPerK = new Map<string, number>()
    for (const e of known.values()) executionsPerK.set(e.k, (executionsPerK.get(e.k) ?? 0) + 1)
    for (const p of planned) {
      const id = byK.get(p.k)
      const e = id === undefined ? undefined : known.get(id)
      const expected = expectedTexts(p)
      const got = expected.map((text) => received.get(`${p.phone}|${text}`) ?? 0)
      const extra = [...received.keys()].filter((key) => key.startsWith(`${p.phone}|`) && !expected.includes(key.slice(p.phone.length + 1)))
      if ((executionsPerK.get(p.k) ?? 0) > 1) {
        wrong++
        problems.push(`${p.k}: started ${executionsPerK.get(p.k)} times`)
      }
      if (e === undefined || (e.status !== "ended" && e.status !== "failed")) {
        stuck++
        problems.push(`${p.k}: ${e === undefined ? "never started" : `stuck in ${e.status}`}`)
      } else if (e.status === "failed" && e.errorCode === "send_in_doubt") {
        inDoubt++
        // Steps before the one in doubt sent once, that one once or never, none after it.
        const at = sendSteps[p.workflow].indexOf(e.failedStep ?? "")
        if (got[at] === 1) inDoubtDelivered++
        if (at === -1 || got.some((n, i) => (i < at ? n !== 1 : i > at ? n !== 0 : n > 1)) || extra.length > 0) {
          wrong++
          problems.push(`${p.k}: in doubt at ${e.failedStep}, messages ${got.join(",")}`)
        }
      } else if (
        e.status !== "ended" || extra.length > 0 || (p.workflow === "reply" && e.answer !== `yes-${p.k}`) ||
        // The agent's reply may have been in doubt (0 or 1); everything else exactly once.
        got.some((n, i) => (p.workflow === "agent" && i === 1 ? n > 1 : n !== 1))
      ) {
        wrong++
        problems.push(`${p.k}: ${e.status}${e.errorCode !== null ? ` (${e.errorCode})` : ""}, messages ${got.join(",")}${extra.length > 0 ? `, extra ${extra.join(";")}` : ""}`)
      }
    }
    return {
      seed,
      killPoints,
      selfKills,
      executions: planned.length,
      duplicates,
      stuck,
      inDoubt,
      inDoubtDelivered,
      wrong,
      durationMs: Date.now() - began,
      problems,
      logFile
    }
  } finally {
    // A graceful stop of the last life; a kill if the run failed midway.
    await host.close()
  }
}
