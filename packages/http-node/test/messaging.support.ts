/**
 * Test support for messaging over real HTTP: a Parley host on a loopback port
 * whose public URL is its real address (so the simulator's webhooks and media
 * addresses reach it), two projects with a key each, the host's context (the
 * simulator, the stores), every log line it wrote, and a `fetch` helper that
 * records every answer (the secret scan reads them).
 */
import { NodeHttpServer } from "@effect/platform-node"
import { type MessageRecord, Messaging, Projects, UpstreamSettings } from "@parley/core"
import { Simulator } from "@parley/core/simulators"
import { ConfigProvider, Context, Effect, Exit, Layer, Logger, Option, Redacted, References, Scope } from "effect"
import { FetchHttpClient } from "effect/http"
import { createServer as createNetServer } from "node:net"
import { afterAll, beforeAll } from "vitest"
import * as Host from "../src/Host.ts"

export interface MessagingHost {
  readonly url: string
  readonly key: string
  readonly otherKey: string
  readonly projectA: string
  readonly projectB: string
  /** The host's services and ports. */
  readonly context: Context.Context<any>
  /** The in-process network simulator (simulator mode). */
  readonly simulator: Simulator.NetworkSimulator["Service"]
  /** Every JSON log line the host wrote. */
  readonly logs: ReadonlyArray<string>
  /** Every answer body the helper received. */
  readonly answers: ReadonlyArray<string>
  readonly request: (
    method: string,
    path: string,
    options?: {
      readonly body?: unknown
      readonly raw?: Uint8Array | string
      readonly key?: string | null
      readonly headers?: Record<string, string>
      /** Gives up on the request (its promise rejects) when this fires. */
      readonly signal?: AbortSignal
    }
  ) => Promise<{ readonly status: number; readonly body: any; readonly headers: Headers; readonly text: string }>
}

const KEY_A = "pk_test_messaging_a_0123456789abcdef"
const KEY_B = "pk_test_messaging_b_0123456789abcdef"

/** A port nothing listens on right now. */
const freePort = Effect.promise(() =>
  new Promise<number>((resolve, reject) => {
    const server = createNetServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))))
    })
  })
)

/**
 * Serves the host over `ports` with `config` on top of the environment
 * (`PARLEY_UPSTREAM`, `PARLEY_UPSTREAM_VERIFY_TOKEN`, ...), in the caller's scope.
 */
export const startMessagingHost = <E>(ports: Layer.Layer<any, E, never>, config: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const url = `http://127.0.0.1:${port}`
    const logs: Array<string> = []
    const capture = Logger.map(Logger.formatJson, (line) => void logs.push(line))
    const context = yield* Layer.build(
      Host.serve({ publicUrl: url }).pipe(
        Layer.provideMerge(NodeHttpServer.layer(Host.createNodeServer, { port, host: "127.0.0.1" })),
        Layer.provideMerge(ports),
        Layer.provide(ConfigProvider.layerAdd(ConfigProvider.fromUnknown(config), { asPrimary: true })),
        Layer.provide(Logger.layer([capture])),
        Layer.provide(Layer.succeed(References.MinimumLogLevel, "Debug"))
      )
    )
    const projects = Context.get(context, Projects)
    const a = yield* projects.create("Project A")
    yield* projects.createKey(a.id, "test", KEY_A)
    const b = yield* projects.create("Project B")
    yield* projects.createKey(b.id, "test", KEY_B)
    const settings = Context.get(context, UpstreamSettings)
    const answers: Array<string> = []
    const host: MessagingHost = {
      url,
      key: KEY_A,
      otherKey: KEY_B,
      projectA: a.id,
      projectB: b.id,
      context,
      // Undefined in cloud mode (no simulator runs): tests of that mode never touch it.
      simulator: Option.getOrUndefined(Context.getOption(context, Simulator.NetworkSimulator))!,
      logs,
      answers,
      request: async (method, path, options = {}) => {
        const headers: Record<string, string> = { ...options.headers }
        const key = options.key === undefined ? KEY_A : options.key
        if (key !== null) headers["x-api-key"] = key
        let body: string | Uint8Array | undefined
        if (options.raw !== undefined) body = options.raw
        else if (options.body !== undefined) body = JSON.stringify(options.body)
        if (body !== undefined) headers["content-type"] ??= "application/json"
        const response = await fetch(`${url}${path}`, {
          method,
          headers,
          ...(body !== undefined ? { body: body as BodyInit } : {}),
          ...(options.signal !== undefined ? { signal: options.signal } : {})
        })
        const text = await response.text()
        answers.push(text)
        let parsed: unknown = undefined
        try {
          parsed = text.length > 0 ? JSON.parse(text) : undefined
        } catch {
          parsed = undefined
        }
        return { status: response.status, body: parsed, headers: response.headers, text }
      }
    }
    return host
  })

/** Polls `check` every 20 ms until it holds; fails after `ms`. */
export const eventually = async (what: string, check: () => Promise<boolean> | boolean, ms = 10_000) => {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`still waiting for: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/**
 * Connects the host's simulated number to project A through the API, as a
 * user would; with `sink`, the simulator's webhooks reach the host's
 * ingestion route over HTTP first. Answers the number.
 */
export const connectSimulatedNumber = (host: MessagingHost, options: { readonly sink?: boolean } = {}) =>
  Effect.gen(function*() {
    if (options.sink === true) {
      const sink = yield* Simulator.httpWebhookSink(`${host.url}/platform/v1/msg/upstream/webhook`).pipe(
        Effect.provide(FetchHttpClient.layer)
      )
      yield* host.simulator.setSink(sink)
    }
    const number = Option.getOrThrow(Context.get(host.context, UpstreamSettings).simulatedNumber)
    const connected = yield* Effect.promise(() =>
      host.request("POST", "/platform/v1/msg/phone_numbers", {
        body: {
          msg_config: {
            phone_number_id: number.phoneNumberId,
            business_account_id: number.businessAccountId,
            access_token: Redacted.value(number.accessToken)
          }
        }
      })
    )
    if (connected.status !== 201) return yield* Effect.die(new Error(`connecting the number: ${connected.status} ${connected.text}`))
    return number
  })

/** A message of project A's number as stored, once ingestion or the proxy has written it. */
export const storedMessage = async (host: MessagingHost, phoneNumberId: string, id: string): Promise<MessageRecord> => {
  const messaging = Context.get(host.context, Messaging)
  let found: MessageRecord | undefined
  await eventually(`message ${id} stored`, async () => {
    const exit = await Effect.runPromiseExit(messaging.getMessage(host.projectA, phoneNumberId, id))
    if (Exit.isSuccess(exit)) found = exit.value
    return found !== undefined
  })
  return found!
}

/**
 * For a suite: a host over `ports` (made in the suite's scope) with the simulated number connected and its webhooks
 * reaching ingestion over HTTP, built before the suite (handed to `ready`) and closed after it.
 */
export const hostForSuite = (
  ports: Effect.Effect<Layer.Layer<any, any, never>, unknown, Scope.Scope>,
  ready: (host: MessagingHost, phoneNumberId: string) => void
) => {
  let close: () => Promise<void> = () => Promise.resolve()
  beforeAll(async () => {
    const scope = Effect.runSync(Scope.make())
    await Effect.runPromise(Effect.gen(function*() {
      const host = yield* startMessagingHost(yield* ports)
      ready(host, (yield* connectSimulatedNumber(host, { sink: true })).phoneNumberId)
    }).pipe(Effect.provideService(Scope.Scope, scope)))
    close = () => Effect.runPromise(Scope.close(scope, Exit.void))
  }, 120_000)
  afterAll(() => close())
}
