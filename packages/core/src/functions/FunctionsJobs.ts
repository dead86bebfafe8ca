/**
 * The background work of functions, on the `JobQueue`:
 *
 * - `functions.deploy`: loads a deployment's code snapshot into this host's
 *   runtime (which proves it loads: a syntax error, a throwing top level or a
 *   missing handler fails it) and records the outcome (decisions 3.3). Other
 *   hosts load the new version on their first invoke of it.
 * - `functions.maintenance`, daily at 00:00 UTC and once when a host starts:
 *   purges invocations older than 30 days and expired `env.KV` entries, and
 *   asks again for deployments still in progress (their job was lost with a
 *   host; a live one is deduped).
 */
import { Cause, Clock, Effect, Layer, Option, Schema } from "effect"
import { decodingPayload, JobQueue, SlotJob } from "../ports/JobQueue.ts"
import { nowIso } from "../shared/Time.ts"
import { FunctionBounds, functionRuntimeLimitsOf } from "./Function.ts"
import { FunctionKv } from "./FunctionKv.ts"
import { FunctionDeployError, FunctionRuntime } from "./FunctionRuntime.ts"
import { FunctionInvocationsRepo, FunctionsRepo } from "./FunctionsRepo.ts"
import { InvocationTargets } from "./InvocationTargets.ts"

export const FUNCTION_DEPLOY_QUEUE = "functions.deploy"
/** Daily (`SlotJob`). */
export const FUNCTIONS_MAINTENANCE_QUEUE = "functions.maintenance"

const DAY_MS = 24 * 60 * 60 * 1000
const BATCH = 1000
const DEPLOY_RETRIES = 3

const DeployPayload = Schema.Struct({ function_id: Schema.String, deployment_id: Schema.String })
type DeployPayload = typeof DeployPayload.Type

/** Asks for a deployment to run; one job per deployment at a time. */
export const requestDeploy = (jobs: JobQueue["Service"], functionId: string, deploymentId: string) =>
  jobs.enqueue(FUNCTION_DEPLOY_QUEUE, { function_id: functionId, deployment_id: deploymentId } satisfies DeployPayload, {
    dedupeKey: `deployment:${deploymentId}`,
    retryLimit: DEPLOY_RETRIES,
    retryDelayMs: 500
  })

/**
 * Runs one deployment on this host's runtime and records how it ended. A
 * runtime that could not run the code at all (`unavailable`) is retried
 * while attempts remain; bad code ends the deployment at once.
 */
export const runDeploy = (functionId: string, deploymentId: string, lastAttempt: boolean) =>
  Effect.gen(function*() {
    const repo = yield* FunctionsRepo
    const runtime = yield* FunctionRuntime
    const found = yield* repo.findDeployment(functionId, deploymentId)
    // Gone with its function, or already finished (a retried or repeated job): nothing to do.
    if (Option.isNone(found) || found.value.status !== "deploying" || found.value.code === null) return
    const deployment = found.value
    const outcome = yield* runtime.deploy(functionId, deployment.version, deployment.code!, functionRuntimeLimitsOf(deployment.runtime_config))
      .pipe(Effect.result)
    if (outcome._tag === "Failure" && outcome.failure.reason === "unavailable" && !lastAttempt) {
      return yield* Effect.fail(outcome.failure)
    }
    const at = yield* nowIso
    const recorded = yield* repo.finishDeploy(
      functionId,
      deploymentId,
      outcome._tag === "Success" ? { _tag: "Deployed", at } : { _tag: "Failed", at, error: outcome.failure.message }
    )
    if (recorded) yield* (yield* InvocationTargets).forget
    if (!recorded && outcome._tag === "Success") {
      // The function went while it loaded: do not keep serving it here.
      const still = yield* repo.findDeployment(functionId, deploymentId)
      if (Option.isNone(still)) yield* runtime.unload(functionId)
    }
    yield* Effect.logInfo(outcome._tag === "Success" ? "Function deployed" : "Function deploy failed").pipe(
      Effect.annotateLogs({ function_id: functionId, deployment_id: deploymentId, version: deployment.version })
    )
  })

/**
 * Registers the workers of functions with the `JobQueue` for the life of the
 * layer, and starts the daily maintenance chain.
 */
export const layerFunctionsWorkers = Layer.effectDiscard(Effect.gen(function*() {
  const jobs = yield* JobQueue
  const repo = yield* FunctionsRepo
  const invocations = yield* FunctionInvocationsRepo
  const kv = yield* FunctionKv
  const targets = yield* InvocationTargets
  const services = yield* Effect.context<FunctionsRepo | FunctionRuntime | InvocationTargets>()

  const deployJob = (payload: DeployPayload, attempt: number) => {
    const last = attempt > DEPLOY_RETRIES
    return runDeploy(payload.function_id, payload.deployment_id, last).pipe(
      Effect.provideContext(services),
      Effect.catchCause((cause) =>
        // Out of attempts: the deployment ends rather than stays `deploying` (which would refuse every deploy).
        last
          ? Effect.gen(function*() {
            yield* Effect.logError("Function deploy failed unexpectedly", cause)
            const failure = Cause.squash(cause)
            yield* repo.finishDeploy(payload.function_id, payload.deployment_id, {
              _tag: "Failed",
              at: yield* nowIso,
              error: failure instanceof FunctionDeployError ? failure.message : "The deployment failed unexpectedly"
            })
            yield* targets.forget
          })
          : Effect.failCause(cause)
      )
    )
  }

  const purgeInvocations = Effect.fn("FunctionsJobs.purgeInvocations")(function*() {
    const now = yield* Clock.currentTimeMillis
    const cutoff = new Date(now - FunctionBounds.invocationRetentionDays * DAY_MS).toISOString()
    let removed = 0
    while (true) {
      const n = yield* invocations.deleteCreatedBefore(cutoff, BATCH)
      removed += n
      if (n < BATCH) return removed
    }
  })

  /** Expired `env.KV` entries read as absent already; this reclaims their space. */
  const purgeExpiredKv = Effect.fn("FunctionsJobs.purgeExpiredKv")(function*() {
    let removed = 0
    while (true) {
      const n = yield* kv.purgeExpired(BATCH)
      removed += n
      if (n < BATCH) return removed
    }
  })

  const maintenance = Effect.fn("FunctionsJobs.maintenance")(function*(slot: number) {
    const now = yield* Clock.currentTimeMillis
    const next = Math.max(slot, Math.floor(now / DAY_MS)) + 1
    yield* jobs.enqueue(FUNCTIONS_MAINTENANCE_QUEUE, { slot: next }, { runAt: next * DAY_MS, dedupeKey: `slot:${next}` })
    const purged = yield* purgeInvocations()
    const expired = yield* purgeExpiredKv().pipe(
      Effect.catchCause((cause) => Effect.as(Effect.logWarning("Could not purge expired KV entries", cause), 0))
    )
    const pending = yield* repo.listDeploying
    for (const deployment of pending) yield* requestDeploy(jobs, deployment.function_id, deployment.id)
    yield* Effect.logDebug("Functions maintenance done").pipe(
      Effect.annotateLogs({ purged, expired, redeploys: pending.length })
    )
  })

  yield* jobs.work(FUNCTION_DEPLOY_QUEUE, { concurrency: 4 }, decodingPayload(DeployPayload, (payload, job) =>
    deployJob(payload, job.attempt)))

  yield* jobs.work(FUNCTIONS_MAINTENANCE_QUEUE, { concurrency: 1 }, decodingPayload(SlotJob, (payload) => maintenance(payload.slot)))

  const today = Math.floor((yield* Clock.currentTimeMillis) / DAY_MS)
  yield* jobs.enqueue(FUNCTIONS_MAINTENANCE_QUEUE, { slot: today }, { dedupeKey: `slot:${today}` })
}))
