/** Helpers of the tests that run host processes: a free loopback port, a pause, a host's lives. */
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"

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
