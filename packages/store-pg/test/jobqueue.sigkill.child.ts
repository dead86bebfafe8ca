/**
 * A host that is about to be SIGKILLed (by jobqueue.sigkill.test.ts): it
 * starts a job that never finishes, enqueues a second one its full worker
 * cannot take, says `ready` on stdout, and waits.
 *
 *   node --conditions=@parley/source jobqueue.sigkill.child.ts <url> <queue> <expire|heartbeat>
 */
import { JobQueue } from "@parley/core"
import { Deferred, Effect } from "effect"
import { layerJobQueueFromUrl } from "../src/JobQueue.ts"

const [url, queue, mode] = process.argv.slice(2)
if (url === undefined || queue === undefined || (mode !== "expire" && mode !== "heartbeat")) {
  throw new Error("usage: jobqueue.sigkill.child.ts <url> <queue> <expire|heartbeat>")
}

const say = (message: object) => Effect.sync(() => void process.stdout.write(`${JSON.stringify(message)}\n`))

const host = layerJobQueueFromUrl(
  url,
  // The queue is created here, so these decide how a dead worker's job is found.
  mode === "expire" ? { expireInSeconds: 2, heartbeatSeconds: null } : { heartbeatSeconds: 10 }
)

Effect.gen(function*() {
  const jobs = yield* JobQueue
  const started = yield* Deferred.make<string>()
  yield* jobs.work(queue, { concurrency: 1 }, (job) => Deferred.succeed(started, job.id).pipe(Effect.andThen(Effect.never)))
  const running = yield* jobs.enqueue(queue, "running")
  yield* Deferred.await(started)
  const queued = yield* jobs.enqueue(queue, "queued")
  yield* say({ ready: true, running, queued })
  return yield* Effect.never
}).pipe(Effect.scoped, Effect.provide(host), Effect.runFork)
