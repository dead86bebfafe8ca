import { assert, describe, it } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import { Effect, Redacted, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import * as EmbeddedPostgres from "../src/EmbeddedPostgres.ts"

const tempDir = Effect.acquireRelease(
  Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-embedded-"))),
  (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
)

const query = <A extends object>(url: Redacted.Redacted<string>, statement: string) =>
  SqlClient.SqlClient.use((sql) => sql.unsafe<A>(statement)).pipe(
    Effect.provide(PgClient.layer({ url, maxConnections: 1 }))
  )

const postmasterPid = (dataDir: string) =>
  Number(Fs.readFileSync(Path.join(dataDir, "pg", "postmaster.pid"), "utf8").split("\n")[0])

const isRunning = (pid: number) => {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  const status = Fs.existsSync(`/proc/${pid}/status`) ? Fs.readFileSync(`/proc/${pid}/status`, "utf8") : ""
  return !/^State:\s+Z/m.test(status)
}

const killAndWait = (child: ChildProcess.ChildProcess) =>
  Effect.callback<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    child.once("exit", () => resume(Effect.void))
    child.kill("SIGKILL")
  })

const waitWhileRunning = (pid: number) =>
  Effect.sync(() => isRunning(pid)).pipe(Effect.repeat({ while: (running) => running, schedule: Schedule.spaced("20 millis") }))

/** Stops a server the killed child left behind, so no test leaks a process. */
const stopLeftover = (dataDir: string) =>
  Effect.suspend(() => {
    const file = Path.join(dataDir, "pg", "postmaster.pid")
    if (!Fs.existsSync(file)) return Effect.void
    const pid = postmasterPid(dataDir)
    if (!isRunning(pid)) return Effect.void
    process.kill(pid, "SIGINT")
    return waitWhileRunning(pid)
  })

/** Runs the server in a child process we can SIGKILL; answers the child and the server URL. */
const startInChild = (dataDir: string) =>
  Effect.acquireRelease(
    Effect.callback<{ child: ChildProcess.ChildProcess; url: Redacted.Redacted<string> }, Error>((resume) => {
      const child = ChildProcess.spawn(
        process.execPath,
        [Path.join(import.meta.dirname, "fixtures", "startEmbedded.ts"), dataDir],
        { stdio: ["ignore", "pipe", "inherit"] }
      )
      let out = ""
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString("utf8")
        const match = /^ready (\S+)$/m.exec(out)
        if (match) resume(Effect.succeed({ child, url: Redacted.make(match[1]) }))
      })
      child.once("exit", (code) => resume(Effect.fail(new Error(`child exited early (${code})`))))
    }),
    ({ child }) => Effect.andThen(killAndWait(child), stopLeftover(dataDir))
  )

/** How the URL's connection reached the server: `null` through a Unix socket, else the client's address. */
const clientAddress = (url: Redacted.Redacted<string>) =>
  Effect.map(query<{ address: string | null }>(url, "SELECT host(inet_client_addr()) AS address"), (rows) => rows[0]!.address)

describe("EmbeddedPostgres", () => {
  it.live("leaves the exit code of a process that loads it alone", () =>
    Effect.gen(function*() {
      const module = Path.join(import.meta.dirname, "..", "src", "EmbeddedPostgres.ts")
      const code = yield* Effect.callback<number | null>((resume) => {
        const child = ChildProcess.spawn(process.execPath, [
          "--input-type=module",
          "-e",
          `await import(${JSON.stringify(module)}); process.exitCode = 3`
        ], { stdio: "ignore" })
        child.once("exit", (exitCode) => resume(Effect.succeed(exitCode)))
      })
      assert.strictEqual(code, 3)
    }))

  it.live("hands out its Unix socket, and TCP where the socket's path would not fit", () =>
    Effect.gen(function*() {
      const short = yield* tempDir
      yield* Effect.scoped(Effect.gen(function*() {
        const server = yield* EmbeddedPostgres.start({ dataDir: short, throwaway: true })
        assert.isNull(yield* clientAddress(server.url))
        // Tools keep the TCP port.
        const password = new URL(Redacted.value(server.url)).password
        const tcp = Redacted.make(`postgres://postgres:${password}@127.0.0.1:${server.port}/postgres`)
        assert.strictEqual(yield* clientAddress(tcp), "127.0.0.1")
      }))
      // `<dir>/pg/.s.PGSQL.<port>` past the 107 bytes a socket address holds.
      const long = Path.join(yield* tempDir, "d".repeat(100))
      yield* Effect.scoped(Effect.gen(function*() {
        const server = yield* EmbeddedPostgres.start({ dataDir: long, throwaway: true })
        assert.strictEqual(yield* clientAddress(server.url), "127.0.0.1")
      }))
    }), 120_000)

  it.live("keeps its data and port across a stop and a start", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const first = yield* Effect.scoped(Effect.gen(function*() {
        const server = yield* EmbeddedPostgres.start({ dataDir })
        yield* query(server.url, "CREATE TABLE kept (value text)")
        yield* query(server.url, "INSERT INTO kept VALUES ('still here')")
        return server
      }))
      const second = yield* Effect.scoped(Effect.gen(function*() {
        const server = yield* EmbeddedPostgres.start({ dataDir })
        const rows = yield* query<{ value: string }>(server.url, "SELECT value FROM kept")
        assert.deepStrictEqual(rows.map((r) => r.value), ["still here"])
        return server
      }))
      assert.strictEqual(second.port, first.port)
      assert.isFalse(Fs.existsSync(Path.join(dataDir, "pg", "postmaster.pid")), "stopped cleanly")
    }))

  it.live("starts again after the process that ran it was SIGKILLed", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      const { child, url } = yield* startInChild(dataDir)
      yield* query(url, "CREATE TABLE kept (value text)")
      yield* query(url, "INSERT INTO kept VALUES ('survived')")
      const orphan = postmasterPid(dataDir)
      yield* killAndWait(child)
      assert.isTrue(isRunning(orphan), "the server outlives its parent")

      const server = yield* EmbeddedPostgres.start({ dataDir })
      assert.isFalse(isRunning(orphan), "the orphaned server was stopped")
      const rows = yield* query<{ value: string }>(server.url, "SELECT value FROM kept")
      assert.deepStrictEqual(rows.map((r) => r.value), ["survived"])
    }))

  it.live("starts again after the server itself was SIGKILLed", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      yield* Effect.scoped(Effect.gen(function*() {
        const server = yield* EmbeddedPostgres.start({ dataDir })
        yield* query(server.url, "CREATE TABLE kept (value text)")
        yield* query(server.url, "INSERT INTO kept VALUES ('committed')")
        const pid = postmasterPid(dataDir)
        process.kill(pid, "SIGKILL")
        yield* waitWhileRunning(pid)
      }))
      assert.isTrue(Fs.existsSync(Path.join(dataDir, "pg", "postmaster.pid")), "a stale lock file is left behind")

      const server = yield* EmbeddedPostgres.start({ dataDir })
      const rows = yield* query<{ value: string }>(server.url, "SELECT value FROM kept")
      assert.deepStrictEqual(rows.map((r) => r.value), ["committed"])
    }))

  it.live("refuses a data directory whose server another live process runs", () =>
    Effect.gen(function*() {
      const dataDir = yield* tempDir
      yield* startInChild(dataDir)
      const error = yield* Effect.flip(EmbeddedPostgres.start({ dataDir }))
      assert.include(error.message, "in use by process")
    }))
})
