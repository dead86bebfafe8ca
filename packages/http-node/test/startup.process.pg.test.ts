/**
 * `npm start` from its first instant (issue 29 §4): a connection made while the host starts gets an answer, never
 * silence (the port used to accept before a handler was attached), and the configured key is never refused with a
 * 401 before the bootstrap stored it: 503 with `Retry-After` until the host is ready. The host runs as a real
 * process on a fresh data directory, hammered with new connections from the moment it is spawned.
 */
import { assert, describe, it } from "@effect/vitest"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { freePort, sleep } from "./process.support.ts"

const ROOT = Path.resolve(import.meta.dirname, "../../..")
const MAIN = Path.join(ROOT, "packages/http-node/src/main.ts")
const KEY = "pk_startup_test_0123456789abcdef"

type Outcome =
  | { readonly kind: "answer"; readonly path: string; readonly status: number; readonly retryAfter: string | undefined; readonly body: string }
  | { readonly kind: "refused" }
  | { readonly kind: "hang" | "reset"; readonly path: string; readonly detail: string }

/** One request on a connection of its own (no keep-alive: every request is a new connection to accept). */
const once = (port: number, path: string, headers: Record<string, string>) =>
  new Promise<Outcome>((resolve) => {
    const request = Http.request({ host: "127.0.0.1", port, path, headers, agent: false }, (response) => {
      let body = ""
      response.setEncoding("utf8")
      response.on("data", (chunk: string) => (body += chunk))
      response.on("end", () =>
        resolve({ kind: "answer", path, status: response.statusCode ?? 0, retryAfter: response.headers["retry-after"], body }))
      response.on("error", (error) => resolve({ kind: "reset", path, detail: error.message }))
    })
    // Connected but unanswered for this long: what a client of the old host waited for until its own timeout.
    request.setTimeout(5_000, () => {
      resolve({ kind: "hang", path, detail: "no answer in 5 s" })
      request.destroy()
    })
    request.on("error", (error: Error & { readonly code?: string }) =>
      resolve(error.code === "ECONNREFUSED" ? { kind: "refused" } : { kind: "reset", path, detail: `${error.code ?? ""} ${error.message}` }))
    request.end()
  })

const processesUsing = (dataDir: string) =>
  ChildProcess.execFileSync("ps", ["-eo", "pid,args"], { encoding: "utf8" }).split("\n").filter((line) => line.includes(dataDir))

describe("a starting host (process, embedded PostgreSQL)", () => {
  it("answers every connection from the moment it is spawned: 503 with Retry-After until ready, never silence or a wrong 401", async () => {
    const port = await freePort()
    const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-startup-"))
    const child = ChildProcess.spawn(process.execPath, ["--conditions=@parley/source", MAIN], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: "",
        HOST: "127.0.0.1",
        PORT: String(port),
        PARLEY_API_KEY: KEY,
        PARLEY_DATA_DIR: dataDir,
        PARLEY_LOG_LEVEL: "Warn"
      },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
    try {
      const outcomes: Array<Outcome> = []
      let ready = false
      const deadline = Date.now() + 90_000
      // Three clients from the first instant: liveness, readiness and an authenticated list with the configured key.
      const hammer = async (path: string, headers: Record<string, string>) => {
        while (!ready && child.exitCode === null && Date.now() < deadline) {
          const outcome = await once(port, path, headers)
          if (outcome.kind === "refused") {
            // Not listening yet: a client sees this at once (no wait), and may try again.
            await sleep(2)
            continue
          }
          outcomes.push(outcome)
          if (outcome.kind === "answer" && path.startsWith("/platform") && outcome.status === 200) ready = true
        }
      }
      await Promise.all([
        hammer("/healthz", {}),
        hammer("/readyz", {}),
        hammer("/platform/v1/workflows", { "x-api-key": KEY }),
        hammer("/platform/v1/workflows", { "x-api-key": KEY })
      ])
      assert.isTrue(ready, `the host never answered the configured key with 200; output:\n${output}`)

      const failures = outcomes.filter((o) => o.kind !== "answer")
      assert.deepStrictEqual(failures, [], "every connection gets an answer")
      const answers = outcomes.flatMap((o) => o.kind === "answer" ? [o] : [])
      const wrong = answers.filter((a) =>
        !(a.status === 200 ||
          (a.status === 503 && a.retryAfter === "1" && a.body === `{"error":"Not ready: starting"}`))
      )
      assert.deepStrictEqual(wrong, [], "only 200, or 503 Not ready with Retry-After (never 401)")
      // The port opened before the host was ready (a port in use fails at once), and said so.
      assert.isTrue(answers.some((a) => a.path === "/platform/v1/workflows" && a.status === 503), "a 503 while starting")
      assert.isTrue(answers.some((a) => a.path === "/healthz" && a.status === 200), "/healthz answers while starting")
      // The process spawned is the host, executed again with glibc's malloc arenas capped (MallocArenas.ts).
      if (process.platform === "linux" && process.env.MALLOC_ARENA_MAX === undefined) {
        const environment = Fs.readFileSync(`/proc/${child.pid}/environ`, "utf8").split("\0")
        assert.include(environment, "MALLOC_ARENA_MAX=2", "the host runs with its malloc arenas capped")
      }
    } finally {
      if (child.exitCode === null) child.kill("SIGTERM")
      const code = await Promise.race([exited, sleep(20_000).then(() => "timeout" as const)])
      if (code === "timeout") child.kill("SIGKILL")
      assert.notStrictEqual(code, "timeout", `a graceful stop ends the process; output:\n${output}`)
      assert.deepStrictEqual(processesUsing(dataDir), [], "no PostgreSQL left running")
      Fs.rmSync(dataDir, { recursive: true, force: true })
    }
  }, 150_000)
})
