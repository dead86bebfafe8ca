/**
 * The simulated network in a process of its own, for `proxy.ts`: as a host in
 * production talks to a network elsewhere (the Cloud API adapter over HTTP),
 * not to one sharing its thread. Serves the network's HTTP face on a loopback
 * port with the default simulated number registered, and reports `{ port }`.
 * Then, on the parent's messages: `{ sink }` posts its webhooks there (signed
 * with the app secret given as its argument; several addresses: each webhook to the next in turn, as a load
 * balancer in front of several hosts; `null`: nowhere), `{ lift }` lifts the number's throughput and pair-rate
 * limits, `{ inbound }` makes each contact write (`body`, default "hi"; their windows open; `concurrency` contacts
 * at a time, default one), `{ update }` changes a number's facts, `{ approve }` approves a template,
 * `{ profile: path }` starts its CPU profile and `{ profile: null }` writes it there;
 * each is answered `{ done }`.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Ids } from "@parley/core"
import { Simulator, type SimulatorNumberPatch } from "@parley/core/simulators"
import { Effect, Layer, References } from "effect"
import { profileCpu } from "./allocation.ts"
import { FetchHttpClient, HttpClient, HttpRouter } from "effect/http"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as SimulatorServer from "../packages/http-node/src/simulators/SimulatorServer.ts"

const appSecret = process.argv[2] ?? "bench-network-app-secret"

type Command =
  | { readonly sink: string | ReadonlyArray<string> | null }
  | { readonly lift: string }
  | { readonly inbound: { readonly phoneNumberId: string; readonly contacts: ReadonlyArray<string>; readonly concurrency?: number; readonly body?: string } }
  | { readonly update: { readonly phoneNumberId: string; readonly patch: SimulatorNumberPatch } }
  | { readonly approve: string }
  | { readonly profile: string | null }

const program = Effect.gen(function*() {
  const simulator = yield* Simulator.NetworkSimulator
  yield* Simulator.registerSimulatedNumber
  const http = yield* Effect.service(HttpClient.HttpClient)
  let profiling: Effect.Effect<void> | undefined
  const run = (command: Command) =>
    Effect.gen(function*() {
      if ("sink" in command) {
        const urls = command.sink === null ? [] : typeof command.sink === "string" ? [command.sink] : command.sink
        const sinks = yield* Effect.forEach(urls, (url) => Simulator.httpWebhookSink(url).pipe(Effect.provideService(HttpClient.HttpClient, http)))
        let next = 0
        yield* simulator.setSink(sinks.length === 0 ? undefined : (body, signature) => sinks[next++ % sinks.length]!(body, signature))
      }
      if ("lift" in command) {
        yield* simulator.updateNumber(command.lift, { throughputPerSecond: 1_000_000, pairBurst: 1_000_000, pairIntervalMs: 1 })
      }
      if ("update" in command) yield* Effect.orDie(simulator.updateNumber(command.update.phoneNumberId, command.update.patch))
      if ("approve" in command) yield* Effect.orDie(simulator.setTemplateStatus(command.approve, "APPROVED"))
      if ("profile" in command) {
        if (command.profile !== null) profiling = yield* profileCpu(command.profile)
        else if (profiling !== undefined) yield* profiling
      }
      if ("inbound" in command) {
        const { body = "hi", concurrency = 1, contacts, phoneNumberId } = command.inbound
        yield* Effect.forEach(contacts, (from) => simulator.inbound(phoneNumberId, { from, message: { type: "text", text: { body } } }), {
          concurrency,
          discard: true
        })
      }
    })
  process.on("message", (command: Command) => Effect.runPromise(run(command)).then(() => process.send!({ done: true })))
  process.send!({ port: (server.address() as AddressInfo).port })
  yield* Effect.never
})

const server = Http.createServer()
Effect.runPromise(program.pipe(
  Effect.provide(
    HttpRouter.serve(SimulatorServer.routes(), { disableLogger: true, disableListenLog: true }).pipe(
      Layer.provideMerge(NodeHttpServer.layer(() => server, { port: 0, host: "127.0.0.1" })),
      Layer.provideMerge(Simulator.NetworkSimulator.layer({ appSecret, statusBatchMs: 50 })),
      Layer.provideMerge(Layer.mergeAll(FetchHttpClient.layer, Ids.layer))
    )
  ),
  Effect.provideService(References.MinimumLogLevel, "Warn")
)).catch((error) => {
  console.error(error)
  process.exit(1)
})
process.on("disconnect", () => process.exit(0))
