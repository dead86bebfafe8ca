/**
 * The host the benchmarks measure: a real Parley host on a loopback port over
 * a throwaway embedded PostgreSQL (pg-boss and the simulator's store on it), with one project whose key
 * is `key`. Everything stops with the caller's scope. With `workers: false`
 * the host runs no job workers: the caller builds them (`Parley.layerWorkers`
 * over the returned context) when it wants its backlog worked. With `durable`, the
 * database keeps its default `fsync` and `synchronous_commit` (as `npm start` runs it)
 * instead of a throwaway server's `off`. `env` adds to
 * the environment the host reads its configuration from; the per-key rate limits are raised far above what a
 * benchmark sends (still counted on every request, as in production). `postgresPid` is the
 * database server's main process; `project` the project the key belongs to.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Ids, Projects, UpstreamSettings } from "@parley/core"
import { Simulator } from "@parley/core/simulators"
import { Host } from "@parley/http-node"
import { EmbeddedPostgres, layerFromUrl, layerJobQueue, layerSimulatorStore, layerStorage } from "@parley/store-pg"
import { ConfigProvider, Context, Effect, Layer, Option, Redacted, References, Tracer } from "effect"
import type { SqlClient } from "effect/sql"
import { HttpServer } from "effect/http"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"

const UNLIMITED = { PARLEY_RATE_LIMIT_PER_MINUTE: "1000000000", PARLEY_START_BURST_PER_SECOND: "1000000000" }

/** The environment with `env` added and the per-key rate limits raised out of a benchmark's way. */
export const benchConfig = (env: Record<string, string> = {}) =>
  Layer.succeed(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: { ...process.env, ...UNLIMITED, ...env } as Record<string, string> }))

export const startBenchHost = (
  key: string,
  options: {
    readonly workers?: boolean
    readonly env?: Record<string, string>
    readonly durable?: boolean
    /** More PostgreSQL server settings (`bench/statements.ts` loads `pg_stat_statements`). */
    readonly postgres?: Readonly<Record<string, string>>
    /** A tracer for the host's spans (Effect's in-process one otherwise). */
    readonly tracer?: Tracer.Tracer | undefined
    /** The storage ports in place of `layerStorage` (a bench's variant of one adapter, built over it). */
    readonly storage?: typeof layerStorage | undefined
  } = {}
) =>
  Effect.gen(function*() {
    const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-bench-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(dataDir, { recursive: true, force: true })))
    const pg = yield* EmbeddedPostgres.start({ dataDir, throwaway: options.durable !== true, settings: options.postgres })
    // Built with the host's context depth, as `npm start` (`Embed.make`) builds it.
    const context = yield* Host.deepContexts(Layer.build(
      Host.serve({ publicUrl: "http://127.0.0.1", workers: options.workers }).pipe(
        Layer.provideMerge(NodeHttpServer.layer(Http.createServer, { port: 0, host: "127.0.0.1" })),
        // The simulator's store too, as `npm start` has it: the in-process network writes through it.
        Layer.provideMerge(Layer.mergeAll(options.storage ?? layerStorage, layerJobQueue(), layerSimulatorStore, Ids.layer)),
        Layer.provideMerge(layerFromUrl(pg.url)),
        Layer.provideMerge(benchConfig(options.env)),
        Layer.provideMerge(options.tracer === undefined ? Layer.empty : Layer.succeed(Tracer.Tracer, options.tracer))
      )
    ))
    const url = yield* HttpServer.addressFormattedWith(Effect.succeed).pipe(Effect.provideContext(context))
    const projects = Context.get(context, Projects)
    const project = yield* projects.create("Bench")
    yield* projects.createKey(project.id, "bench", key)
    // The server's first process; its children are the sessions and background workers.
    const postgresPid = Number(Fs.readFileSync(Path.join(pg.dataDir, "pg", "postmaster.pid"), "utf8").split("\n")[0])
    return { url, context, postgresPid, project }
  })

/** JSON requests to a bench host with its key: the answer's status and decoded body. */
export const jsonRequester = (url: string, key: string) => {
  const headers = { "x-api-key": key, "content-type": "application/json" }
  const request = (method: string, path: string, body?: unknown) =>
    Effect.promise(async () => {
      const res = await fetch(`${url}${path}`, { method, headers, body: body === undefined ? null : JSON.stringify(body) })
      const text = await res.text()
      return { status: res.status, body: text === "" ? undefined : JSON.parse(text) }
    })
  return { headers, request }
}

/**
 * Connects the host's simulated number over the API and lifts the network's per-number and per-pair limits (the host
 * is measured, not the network's model); answers the number's id.
 */
export const connectSimulatedNumber = (
  context: Awaited<ReturnType<typeof startBenchHost> extends Effect.Effect<infer A, any, any> ? A : never>["context"],
  request: ReturnType<typeof jsonRequester>["request"]
) =>
  Effect.gen(function*() {
    const simulator = Option.getOrThrow(Context.getOption(context, Simulator.NetworkSimulator))
    const number = Option.getOrThrow(Context.get(context, UpstreamSettings).simulatedNumber)
    const pnid = number.phoneNumberId
    const connected = yield* request("POST", "/platform/v1/msg/phone_numbers", {
      msg_config: { phone_number_id: pnid, business_account_id: number.businessAccountId, access_token: Redacted.value(number.accessToken) }
    })
    if (connected.status !== 201) return yield* Effect.die(new Error(`connect: ${connected.status}`))
    yield* simulator.updateNumber(pnid, { throughputPerSecond: 1_000_000, pairBurst: 1_000_000, pairIntervalMs: 1 })
    return pnid
  })

/**
 * A workflow's runs in a status (`count`), and a wait until `want` of them are (`until`: a read every 100 ms, at most
 * `tries`; dies past that).
 */
export const runsReaching = (sql: SqlClient.SqlClient, tries: number) => {
  const count = (workflowId: string, status: string) =>
    Effect.map(sql<{ n: string }>`SELECT count(*) AS n FROM workflow_executions WHERE workflow_id = ${workflowId} AND status = ${status}`, (r) => Number(r[0]!.n))
  const until = (workflowId: string, status: string, want: number) =>
    Effect.gen(function*() {
      for (let i = 0; i < tries; i++) {
        if ((yield* count(workflowId, status)) >= want) return
        yield* Effect.sleep("100 millis")
      }
      return yield* Effect.die(new Error(`${want} runs of ${workflowId} never reached ${status}`))
    })
  return { count, until }
}


/**
 * The simulated network's own answer to a mark-read of `id` (with a typing indicator), called as the host's network
 * client would call it: what the network's side of a mark-read costs.
 */
export const simulatedMarkRead = (simulator: Context.Service.Shape<typeof Simulator.NetworkSimulator>, pnid: string, accessToken: string) => {
  const encoder = new TextEncoder()
  return (id: string) =>
    simulator.handle({
      method: "POST",
      baseUrl: "http://network.local",
      path: `/v24.0/${pnid}/messages`,
      query: {},
      authorization: `Bearer ${accessToken}`,
      body: {
        _tag: "Bytes",
        contentType: "application/json",
        bytes: encoder.encode(JSON.stringify({ messaging_product: "whatsapp", status: "read", message_id: id, typing_indicator: { type: "text" } }))
      }
    })
}

/** Runs a bench script's program with warnings and worse logged, and exits: 0 when it ended, 1 when it failed. */
export const runScript = (program: Effect.Effect<unknown, unknown>) =>
  Effect.runPromise(program.pipe(Effect.provideService(References.MinimumLogLevel, "Warn"))).then(
    () => process.exit(0),
    (error) => {
      console.error(error)
      process.exit(1)
    }
  )
