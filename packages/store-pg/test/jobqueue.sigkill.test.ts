/**
 * Jobs survive a SIGKILL of their host: a child process starts one job and
 * queues another, is killed, and a worker here runs both. pg-boss finds the
 * dead host's active job by its expiry (`expireInSeconds`) or by its missing
 * heartbeat (`heartbeatSeconds`), in the supervisor pass of any live host.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { type Job, JobQueue } from "@parley/core"
import { Effect, Exit, Layer, Scope } from "effect"
import * as ChildProcess from "node:child_process"
import * as Path from "node:path"
import * as Readline from "node:readline"
import { layerJobQueueFromUrl } from "../src/JobQueue.ts"
import { emptyDatabase } from "./pg.ts"

let databaseScope: Scope.Closeable
let url: string
beforeAll(async () => {
  databaseScope = Scope.makeUnsafe()
  url = await Effect.runPromise(Scope.provide(emptyDatabase, databaseScope))
})
afterAll(() => Effect.runPromise(Scope.close(databaseScope, Exit.void)))

interface Ready {
  readonly running: string
  readonly queued: string
}

/** Starts a child host on `queue`; answers its job ids once it is mid-job, and the process to kill. */
const spawnHost = (queue: string, mode: "expire" | "heartbeat") =>
  Effect.acquireRelease(
    Effect.sync(() =>
      // The test runner's own node (24, from node_modules/.bin), which strips the types.
      ChildProcess.spawn(
        process.execPath,
        ["--conditions=@parley/source", Path.join(import.meta.dirname, "jobqueue.sigkill.child.ts"), url, queue, mode],
        { stdio: ["ignore", "pipe", "inherit"] }
      )
    ),
    (child) => Effect.sync(() => child.exitCode === null && child.signalCode === null && child.kill("SIGKILL"))
  ).pipe(
    Effect.flatMap((child) =>
      Effect.callback<readonly [Ready, ChildProcess.ChildProcess], Error>((resume) => {
        const lines = Readline.createInterface({ input: child.stdout! })
        lines.on("line", (line) => {
          const message = JSON.parse(line) as Partial<Ready> & { readonly ready?: boolean }
          if (message.ready === true) resume(Effect.succeed([message as Ready, child]))
        })
        child.once("exit", (code, signal) => resume(Effect.fail(new Error(`child exited (${code ?? signal})`))))
      }).pipe(Effect.timeout("30 seconds"))
    )
  )

const kill = (child: ChildProcess.ChildProcess) =>
  Effect.callback<void>((resume) => {
    child.once("exit", () => resume(Effect.void))
    child.kill("SIGKILL")
  })

describe("JobQueue (pg-boss) after a SIGKILL of its host", () => {
  it.live("runs the job that was running and the one that was queued", () =>
    Effect.gen(function*() {
      const [[expire, expireHost], [heartbeat, heartbeatHost]] = yield* Effect.all(
        [spawnHost("sigkill-expire", "expire"), spawnHost("sigkill-heartbeat", "heartbeat")],
        { concurrency: 2 }
      )
      yield* kill(expireHost)
      yield* kill(heartbeatHost)
      const killedAt = Date.now()

      const jobs = yield* JobQueue
      const seen = new Map<string, Job & { readonly after: number }>()
      const record = (job: Job) => Effect.sync(() => void seen.set(job.id, { ...job, after: Date.now() - killedAt }))
      yield* jobs.work("sigkill-expire", { concurrency: 2 }, record)
      yield* jobs.work("sigkill-heartbeat", { concurrency: 2 }, record)

      const deadline = Date.now() + 25_000
      while (seen.size < 4 && Date.now() < deadline) yield* Effect.sleep(50)

      // The queued job had not started: it runs at once, on its first attempt.
      assert.include(seen.get(expire.queued), { payload: "queued", attempt: 1 })
      assert.include(seen.get(heartbeat.queued), { payload: "queued", attempt: 1 })
      assert.isBelow(seen.get(expire.queued)!.after, 2_000)
      // The running one is retried once pg-boss presumes its worker dead.
      assert.include(seen.get(expire.running), { payload: "running", attempt: 2 })
      assert.include(seen.get(heartbeat.running), { payload: "running", attempt: 2 })
      // Expiry (2 s) + a supervise pass (1 s) + the default first retry delay (1-2 s).
      assert.isBelow(seen.get(expire.running)!.after, 10_000)
      // Heartbeats (10 s) stop with the host: a supervise pass fails the job after one missed interval.
      assert.isBelow(seen.get(heartbeat.running)!.after, 20_000)
    }).pipe(
      Effect.scoped,
      // A live host that supervises every second.
      Effect.provide(Layer.unwrap(Effect.sync(() =>
        layerJobQueueFromUrl(url, { superviseIntervalSeconds: 1, pollingIntervalSeconds: 0.5 })
      )))
    ), 60_000)
})
