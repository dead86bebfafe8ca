/**
 * One network call in isolation, the ways a host can make it, alternated in the same run against the same
 * network: the host's own `MessagingNetwork` (the Cloud API adapter over the host's undici client, what a proxied
 * send calls), effect's `HttpClient` over undici without the adapter, and a bare undici `request` on an agent of
 * its own. Each call's wall time and the process's CPU meanwhile (the host's background work included, the same
 * for every kind since they alternate). Run back to back, and again with a pause before each call as long as a
 * proxied send's own work around its network call: a process that slept that long (the network's, the host's
 * thread) is woken by the scheduler, which a busy machine makes late, and back-to-back calls never show it.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { CloudApi, MessagingNetwork } from "@parley/core"
import { Context, Effect, Option } from "effect"
import { HttpClientRequest } from "effect/http"
import { performance } from "node:perf_hooks"
import { Agent } from "undici"
import { allocationCounter } from "./allocation.ts"

export interface CallFigures {
  readonly kind: string
  readonly gapMs: number
  readonly calls: number
  readonly p50Ms: number
  readonly p90Ms: number
  /** The process's CPU (user + system) per call, ms. */
  readonly cpuMs: number
}

/** KB the process allocated per call of one kind, its calls made in a row (counted, so steady on a busy machine). */
export interface CallAllocation {
  readonly kind: string
  readonly kb: number
}

export const compareCalls = (options: {
  readonly context: Context.Context<never>
  readonly baseUrl: string
  readonly phoneNumberId: string
  readonly token: string
  readonly body: string
  readonly calls: number
  readonly gapsMs: ReadonlyArray<number>
  /** What the context's `MessagingNetwork` is, as printed. */
  readonly networkName?: string | undefined
}) =>
  Effect.gen(function*() {
    const bytes = new TextEncoder().encode(options.body)
    const url = `${options.baseUrl}/v24.0/${options.phoneNumberId}/messages`
    const access = { accessToken: CloudApi.token(options.token), version: "v24.0" }
    const hostNetwork = Context.getOption(options.context as Context.Context<MessagingNetwork>, MessagingNetwork)
    const agent = new Agent()
    const effectAgent = new Agent()
    yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all([agent.destroy(), effectAgent.destroy()])))
    const effectClient = yield* NodeHttpClient.makeUndici.pipe(Effect.provideService(NodeHttpClient.Dispatcher, effectAgent))
    const origin = new URL(options.baseUrl).origin
    const path = new URL(url).pathname
    const kinds: Array<{ readonly kind: string; readonly call: () => Promise<unknown> }> = [
      ...(Option.isNone(hostNetwork) ? [] : [{
        kind: options.networkName ?? "host MessagingNetwork.send (CloudApi)",
        call: () => Effect.runPromiseWith(options.context)(hostNetwork.value.send(access, options.phoneNumberId, bytes))
      }]),
      {
        kind: "effect HttpClient over undici",
        call: () =>
          Effect.runPromise(effectClient.execute(
            HttpClientRequest.post(url).pipe(
              HttpClientRequest.bearerToken(options.token),
              HttpClientRequest.acceptJson,
              HttpClientRequest.bodyUint8Array(bytes, "application/json")
            )
          ).pipe(Effect.flatMap((response) => response.arrayBuffer)))
      },
      {
        kind: "bare undici request",
        call: () =>
          agent.request({
            origin,
            path,
            method: "POST",
            headers: { authorization: `Bearer ${options.token}`, accept: "application/json", "content-type": "application/json" },
            body: bytes
          }).then((answer) => answer.body.arrayBuffer())
      }
    ]
    const figures: Array<CallFigures> = []
    const allocations: Array<CallAllocation> = []
    yield* Effect.promise(async () => {
      for (const kind of kinds) for (let i = 0; i < 20; i++) await kind.call() // warm every path and its connection
      for (const gapMs of options.gapsMs) {
        const samples = kinds.map(() => ({ walls: [] as Array<number>, cpu: 0 }))
        for (let round = 0; round < options.calls; round++) {
          for (let k = 0; k < kinds.length; k++) {
            const index = (k + round) % kinds.length // rotated, so none always follows another
            if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs))
            const cpu = process.cpuUsage()
            const at = performance.now()
            await kinds[index]!.call()
            samples[index]!.walls.push(performance.now() - at)
            const used = process.cpuUsage(cpu)
            samples[index]!.cpu += (used.user + used.system) / 1000
          }
        }
        kinds.forEach(({ kind }, index) => {
          const walls = samples[index]!.walls.sort((a, b) => a - b)
          figures.push({
            kind,
            gapMs,
            calls: walls.length,
            p50Ms: walls[Math.floor(walls.length / 2)]!,
            p90Ms: walls[Math.floor(walls.length * 0.9)]!,
            cpuMs: samples[index]!.cpu / walls.length
          })
        })
      }
      for (const { call, kind } of kinds) {
        const allocated = allocationCounter()
        for (let i = 0; i < options.calls; i++) await call()
        allocations.push({ kind, kb: allocated() / 1024 / options.calls })
      }
    })
    return { figures, allocations }
  }).pipe(Effect.scoped)

export const formatCalls = (
  { allocations, figures }: { readonly figures: ReadonlyArray<CallFigures>; readonly allocations: ReadonlyArray<CallAllocation> }
): ReadonlyArray<string> => [
  `  one network call alone, alternated in this run (wall p50 / p90, the process's CPU per call):`,
  ...figures.map((f) =>
    `    gap ${String(f.gapMs).padStart(3)} ms  ${f.kind.padEnd(40)} p50 ${f.p50Ms.toFixed(3)} ms  p90 ${f.p90Ms.toFixed(3)} ms  CPU ${
      f.cpuMs.toFixed(3)
    } ms  (${f.calls} calls)`
  ),
  `    allocated per call: ${allocations.map((a) => `${a.kind} ${a.kb.toFixed(1)} KB`).join(", ")}`
]
