/**
 * `npm run bench`: every figure with its baseline measured in the same run,
 * and the ratio. Targets are printed beside the figures, never asserted.
 */
import { Effect, References } from "effect"
import { capMallocArenas } from "../packages/http-node/src/MallocArenas.ts"
import { benchAgent, formatAgentBench } from "./agent.ts"
import { benchExecutions, executionsPartsFromEnv, formatExecutionsBench } from "./executions.ts"
import { benchHttp, formatHttpBench } from "./http.ts"
import { benchRequestCost, formatRequestCost } from "./requestCost.ts"
import { benchJobQueue, formatJobQueueBench } from "./jobqueue.ts"
import { benchFunctionsHttp, formatFunctionsHttpBench } from "./functionsHttp.ts"
import { benchIngestion, formatIngestionBench } from "./ingestion.ts"
import { benchProxy, formatProxyBench } from "./proxy.ts"
import { benchWebhooks, formatWebhooksBench } from "./webhooks.ts"
import { benchLogSearch, benchRecorderCapacity, formatLogSearchBench, formatRecorderCapacity } from "./logsearch.ts"

import { benchBroadcastApart, formatBroadcastBench } from "./broadcast.ts"
import { benchEnvelope, envelopeOptionsFromEnv, formatEnvelope } from "./envelope.ts"
import { benchRetention, formatRetentionBench, retentionOptionsFromEnv } from "./retention.ts"
import { benchPartitionPlans, formatPartitionPlans } from "./partitionPlans.ts"
import { benchStepEventPlans, formatStepEventPlans } from "./stepEventPlans.ts"
import { benchInboundTrigger, formatInboundTrigger } from "./inboundTrigger.ts"
import { benchReferences, formatReferences } from "./references.ts"

// As `npm start` runs the host: glibc's malloc arenas capped (this process executed again, before anything starts).
capMallocArenas()

const seconds = Number(process.env.BENCH_SECONDS ?? 5)
/**
 * `BENCH_ONLY=executions` (comma-separated names: http, requestcost, jobqueue, functions, ingestion, webhooks, proxy,
 * executions, agent, logsearch, recorder, broadcast, retention, plans, stepevents, inboundtrigger, references, envelope) or `npm run bench -- executions envelope` runs
 * only those; `EXEC_PARTS` narrows the executions bench to some of its parts, as running `bench/executions.ts` does.
 */
const only = (process.env.BENCH_ONLY?.split(",") ?? process.argv.slice(2)).map((name) => name.trim()).filter((name) => name !== "")
const runs = (name: string) => only === undefined || only.length === 0 || only.includes(name)
// The webhook receiver is on loopback: the operator's switch for private webhook URLs. Set before the first host
// starts, as the environment is read once per process.
process.env.PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS = "true"

const program = Effect.gen(function*() {
  // The young generation's size sets the host's collection pauses (docs/decisions.md "Runtime"): say which one ran.
  const youngGeneration = process.execArgv.find((flag) => flag.startsWith("--max-semi-space-size")) ?? "V8's default young generation"
  // And how far the old generation grows before a full collection (the host's peak RSS during a broadcast).
  const oldGrowth = process.execArgv.find((flag) => flag.startsWith("--heap-growing-percent")) ?? "V8's default heap growing"
  const arenas = process.env.MALLOC_ARENA_MAX === undefined ? "glibc's default malloc arenas" : `MALLOC_ARENA_MAX=${process.env.MALLOC_ARENA_MAX}`
  console.log(`Parley benchmarks (${seconds} s per HTTP run, 32 connections from a worker thread; ${youngGeneration}, ${oldGrowth}, ${arenas})\n`)
  if (runs("http")) {
    console.log(formatHttpBench(yield* benchHttp({ durationMs: seconds * 1000, connections: 32 })))
  }
  // What a GET and a proxied send cost the host, counted: steadier than the rates above on a shared machine.
  if (runs("requestcost")) {
    console.log(formatRequestCost(yield* benchRequestCost({ n: 3000, listN: 1000, parts: ["get", "get-unrecorded", "list", "send"] })))
  }
  if (runs("jobqueue")) {
    console.log(formatJobQueueBench(yield* benchJobQueue()))
    console.log("")
  }
  if (runs("functions")) {
    console.log(formatFunctionsHttpBench(yield* benchFunctionsHttp({ durationMs: seconds * 1000, connections: 16 })))
    console.log("")
  }
  if (runs("ingestion")) console.log(formatIngestionBench(yield* benchIngestion()))
  if (runs("webhooks")) console.log(formatWebhooksBench(yield* benchWebhooks({ durationMs: seconds * 1000, connections: 32, deliveries: 20_000 })))
  if (runs("proxy")) {
    console.log(formatProxyBench(yield* benchProxy({ durationMs: seconds * 1000, connections: 16 })))
    console.log(formatProxyBench(yield* benchProxy({ durationMs: seconds * 1000, connections: 16, network: "remote" })))
  }
  // 10,000 parked runs whatever BENCH_SECONDS says: the memory target is stated for that many.
  if (runs("executions")) console.log(formatExecutionsBench(yield* benchExecutions({ seconds, waiting: 10_000, parts: executionsPartsFromEnv() })))
  if (runs("agent")) console.log(formatAgentBench(yield* benchAgent({ runs: 10, iterations: 20 })))
  if (runs("logsearch")) console.log(formatLogSearchBench(yield* benchLogSearch({ durationMs: seconds * 1000, connections: 32 })))
  // What the log search recorder drains at a burst: whether it keeps up with an engine's peak.
  if (runs("recorder")) console.log(formatRecorderCapacity(yield* benchRecorderCapacity({ rounds: 3 })))
  // 100,000 recipients whatever BENCH_SECONDS says: the targets are stated for that many.
  if (runs("broadcast")) {
    const recipients = Number(process.env.BENCH_BROADCAST_RECIPIENTS ?? 100_000)
    // `BENCH_BROADCAST_NETWORK=remote` (or `in-process`) runs one mode only.
    const modes = (["in-process", "remote"] as const).filter((mode) => (process.env.BENCH_BROADCAST_NETWORK ?? mode) === mode)
    // `BENCH_BROADCAST_MAX_SECONDS` cuts the send off sooner than 10x the ideal.
    const maxSeconds = process.env.BENCH_BROADCAST_MAX_SECONDS === undefined ? undefined : Number(process.env.BENCH_BROADCAST_MAX_SECONDS)
    // `BENCH_BROADCAST_REPLY_TRACE=1` shows where a reply's time goes (a tracer installed: it costs the host).
    const traceReplies = process.env.BENCH_BROADCAST_REPLY_TRACE === "1"
    for (const network of modes) {
      console.log(formatBroadcastBench(yield* benchBroadcastApart({ recipients, network, maxSeconds, traceReplies })))
    }
  }
  if (runs("retention")) console.log(formatRetentionBench(yield* benchRetention(retentionOptionsFromEnv())))
  if (runs("plans")) console.log(formatPartitionPlans(yield* benchPartitionPlans))
  if (runs("stepevents")) {
    console.log(formatStepEventPlans(yield* benchStepEventPlans({ weeks: Number(process.env.STEP_EVENT_WEEKS ?? 52) })))
  }
  if (runs("inboundtrigger")) console.log(formatInboundTrigger(yield* benchInboundTrigger))
  if (runs("references")) console.log(formatReferences(yield* benchReferences({ workflows: 2000, n: 10 })))
  // The scale envelope (docs/scale.md): host processes of their own, so last and never by default.
  if (only.includes("envelope")) {
    for (const options of envelopeOptionsFromEnv()) console.log(formatEnvelope(yield* benchEnvelope(options)))
  }
})

// Request log lines would measure the terminal, not Parley: keep only warnings.
Effect.runPromise(program.pipe(Effect.provideService(References.MinimumLogLevel, "Warn"))).catch((error) => {
  console.error(error)
  process.exitCode = 1
})
