/**
 * A small closed-loop HTTP load generator run in a worker thread (so it has a
 * core of its own): `connections` keep-alive connections each send the next
 * request as soon as the previous answer is read, for `durationMs`.
 */
import * as Http from "node:http"
import { parentPort, Worker, workerData } from "node:worker_threads"

export interface LoadOptions {
  readonly url: string
  readonly headers: Record<string, string>
  /** Default GET without a body. */
  readonly method?: string | undefined
  readonly body?: string | undefined
  /** Bodies taken in turn (request n sends bodies[n % length]); overrides `body`. */
  readonly bodies?: ReadonlyArray<string> | undefined
  /** Headers of each body, beside `headers` (a signature over it): request n adds bodyHeaders[n % length]. */
  readonly bodyHeaders?: ReadonlyArray<Record<string, string>> | undefined
  /** URLs taken in turn (request n goes to urls[n]); overrides `url`. */
  readonly urls?: ReadonlyArray<string> | undefined
  /** Stop after this many requests (or at `durationMs`, whichever comes first). */
  readonly requests?: number | undefined
  readonly connections: number
  readonly durationMs: number
}

export interface LoadResult {
  readonly connections: number
  readonly requests: number
  readonly errors: number
  readonly seconds: number
  readonly rps: number
  readonly p50Ms: number
  readonly p99Ms: number
  /** CPU time the load generator's own thread used (microseconds), to leave out of the process's. */
  readonly generatorCpuMicros: number
}

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

const run = async (options: LoadOptions): Promise<LoadResult> => {
  const cpuAtStart = process.threadCpuUsage()
  const agent = new Http.Agent({ keepAlive: true, maxSockets: options.connections })
  const latencies: Array<number> = []
  let errors = 0
  let sent = 0
  let issued = 0
  const limit = options.requests ?? Number.POSITIVE_INFINITY
  const start = performance.now()
  const deadline = start + options.durationMs
  const one = () =>
    new Promise<void>((resolve) => {
      const n = sent++
      const body = options.bodies === undefined ? options.body : options.bodies[n % options.bodies.length]
      const headers = options.bodyHeaders === undefined
        ? options.headers
        : { ...options.headers, ...options.bodyHeaders[n % options.bodyHeaders.length] }
      const url = options.urls === undefined ? options.url : options.urls[issued % options.urls.length]!
      issued++
      const t0 = performance.now()
      const req = Http.request(url, { agent, headers, method: options.method ?? "GET" }, (res) => {
        res.resume()
        res.on("end", () => {
          if (res.statusCode === undefined || res.statusCode < 200 || res.statusCode > 299) errors++
          latencies.push(performance.now() - t0)
          resolve()
        })
      })
      req.on("error", () => {
        errors++
        resolve()
      })
      req.end(body)
    })
  await Promise.all(Array.from({ length: options.connections }, async () => {
    while (performance.now() < deadline && issued < limit) await one()
  }))
  const seconds = (performance.now() - start) / 1000
  agent.destroy()
  const cpu = process.threadCpuUsage(cpuAtStart)
  latencies.sort((a, b) => a - b)
  return {
    connections: options.connections,
    requests: latencies.length,
    errors,
    seconds,
    rps: latencies.length / seconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    generatorCpuMicros: cpu.user + cpu.system
  }
}

if (parentPort !== null && workerData?.load === true) {
  run(workerData.options as LoadOptions).then((result) => parentPort!.postMessage(result))
}

/** Runs the load in a worker thread and answers its figures. */
export const load = (options: LoadOptions): Promise<LoadResult> =>
  new Promise((resolve, reject) => {
    const worker = new Worker(new URL(import.meta.url), { workerData: { load: true, options } })
    worker.once("message", (result: LoadResult) => {
      resolve(result)
      void worker.terminate()
    })
    worker.once("error", reject)
  })
