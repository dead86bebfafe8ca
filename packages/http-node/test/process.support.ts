/** Helpers of the tests that run host processes: a free loopback port, a pause, a host's lives. */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"

const ROOT = Path.resolve(import.meta.dirname, "../../..")
const MAIN = Path.join(ROOT, "packages/http-node/src/main.ts")

/** Mulberry32: small, seedable, good enough to spread kill points. */
export const random = (seed: number) => () => {
  seed = (seed + 0x6D2B79F5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** A port nothing listens on now (the OS picks it; closed before it is answered). */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = Net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as Net.AddressInfo
      server.close(() => resolve(port))
    })
  })

/**
 * One host process after another (`npm start`'s `main.ts`) on one address: each life appends to the log file `out`,
 * `kill` ends the current one (SIGKILL, or a graceful signal cut short after 10 s), `request` calls the host with
 * `key`. The crash tests drive it.
 */
export const hostLives = (options: {
  readonly main: string
  readonly root: string
  readonly base: string
  readonly key: string
  readonly env: NodeJS.ProcessEnv
  /** A file descriptor the lives write their output to. */
  readonly out: number
}) => {
  let child: ChildProcess.ChildProcess | undefined
  let lives = 0
  const spawn = (env: NodeJS.ProcessEnv = {}) => {
    lives++
    Fs.writeSync(options.out, `\n=== life ${lives} ===\n`)
    child = ChildProcess.spawn(process.execPath, ["--conditions=@parley/source", options.main], {
      cwd: options.root,
      env: { ...options.env, ...env },
      stdio: ["ignore", options.out, options.out]
    })
  }
  const exited = () => child === undefined || child.exitCode !== null || child.signalCode !== null
  const kill = (signal: NodeJS.Signals = "SIGKILL") =>
    new Promise<void>((resolve) => {
      const c = child
      child = undefined
      if (c === undefined || c.exitCode !== null || c.signalCode !== null) return resolve()
      // A graceful stop that hangs is cut short.
      const cut = signal === "SIGKILL" ? undefined : setTimeout(() => c.kill("SIGKILL"), 10_000)
      c.once("exit", () => {
        clearTimeout(cut)
        resolve()
      })
      c.kill(signal)
    })
  /** Ends the current life: gracefully when it still runs, else whatever is left of it. */
  const stop = () => kill(child !== undefined && child.exitCode === null ? "SIGTERM" : "SIGKILL")
  const request = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${options.base}${path}`, {
      method,
      headers: { "x-api-key": options.key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(10_000)
    })
    const text = await res.text()
    return { status: res.status, body: text.length > 0 ? JSON.parse(text) : undefined, text }
  }
  return { spawn, exited, kill, stop, request, lives: () => lives }
}

/**
 * The engine's trust periods shortened, so recovery happens within a crash test (defaults: 60 s, 60 s, 15 s), and a
 * rate limit the drivers' polling (many times a second) never reaches.
 */
export const SHORT_EXECUTION_TRUST = {
  PARLEY_EXECUTION_LEASE_MS: "1500",
  PARLEY_SEND_DOUBT_GRACE_MS: "6000",
  PARLEY_EXECUTION_SWEEP_MS: "300",
  PARLEY_RATE_LIMIT_PER_MINUTE: "1000000"
}

/**
 * The lives of `npm start`'s host for a crash test: on a free loopback port, over `databaseUrl`, with the simulated
 * network and `key`, `env` over that; their output in a fresh log file named in every failure. `close` ends the
 * last life (gracefully when it still runs) and the log.
 */
export const crashHost = async (options: {
  /** Names the log's folder (`parley-<name>-`). */
  readonly name: string
  readonly databaseUrl: string
  readonly key: string
  readonly env: NodeJS.ProcessEnv
}) => {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const logFile = Path.join(Fs.mkdtempSync(Path.join(Os.tmpdir(), `parley-${options.name}-`)), "hosts.log")
  const out = Fs.openSync(logFile, "a")
  const env = {
    ...process.env,
    DATABASE_URL: options.databaseUrl,
    HOST: "127.0.0.1",
    PORT: String(port),
    PARLEY_API_KEY: options.key,
    PARLEY_UPSTREAM: "simulator",
    ...options.env
  }
  const host = hostLives({ main: MAIN, root: ROOT, base, key: options.key, env, out })
  /** True once the host is ready (bootstrapped, its database answering); false when it died first; throws after `ms`. */
  const ready = async (ms: number) => {
    const deadline = Date.now() + ms
    while (Date.now() < deadline) {
      if (host.exited()) return false
      if (await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(1_000) }).then((r) => r.ok, () => false)) return true
      await sleep(25)
    }
    throw new Error(`the host did not start within ${ms} ms; see ${logFile}`)
  }
  const close = async () => {
    await host.stop()
    Fs.closeSync(out)
  }
  return { ...host, base, logFile, ready, close }
}

/**
 * What the simulated network delivered from a number, read from the host's `/sandbox/outbox`: each text's count by
 * `<to>|<body>`, and a problem line for each delivered more than once (`duplicates`: the extra copies).
 */
export const deliveredTexts = async (
  request: (method: string, path: string) => Promise<{ readonly status: number; readonly body: any; readonly text: string }>,
  phoneNumberId: string
) => {
  const outbox = await request("GET", `/sandbox/outbox?phone_number_id=${phoneNumberId}`)
  if (outbox.status !== 200) throw new Error(`outbox answered ${outbox.status}: ${outbox.text}`)
  const received = new Map<string, number>()
  for (const m of outbox.body.data as Array<{ to: string | null; type: string; envelope: { text?: { body: string } } }>) {
    if (m.type !== "text") continue
    const key = `${m.to}|${m.envelope.text?.body}`
    received.set(key, (received.get(key) ?? 0) + 1)
  }
  const problems: Array<string> = []
  let duplicates = 0
  for (const [key, count] of received) {
    if (count > 1) {
      duplicates += count - 1
      problems.push(`${key} delivered ${count} times`)
    }
  }
  return { received, duplicates, problems }
}
