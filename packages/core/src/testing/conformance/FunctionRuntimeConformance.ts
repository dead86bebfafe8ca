/**
 * The behaviour every `FunctionRuntime` adapter owes its callers, written
 * once, and the same for `FunctionKv`. The memory runtime runs it on the
 * `TestClock`, the workerd runtime on real time and real processes; the
 * assertions are identical, so they only ask what holds on either (a timeout
 * is reached by `advance`, a sleep on real time).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, type Layer, Option } from "effect"
import { FunctionKv } from "../../functions/FunctionKv.ts"
import {
  FunctionDeployError,
  FunctionInvokeError,
  type FunctionLimits,
  type FunctionRequest,
  type FunctionResponse,
  FunctionRuntime
} from "../../functions/FunctionRuntime.ts"

export interface FunctionRuntimeConformanceOptions<E> {
  /** A fresh runtime with the `FunctionKv` behind its `env.KV`; each test gets its own. */
  readonly layer: Layer.Layer<FunctionRuntime | FunctionKv, E>
  /** Moves time forward by `ms`: `TestClock.adjust` on the memory runtime, a real sleep otherwise. */
  readonly advance: (ms: number) => Effect.Effect<void>
  /** Run on live services (real clock) rather than the test services. */
  readonly live: boolean
  /** Per-test timeout in milliseconds (vitest's). */
  readonly timeout?: number | undefined
}

const limits: FunctionLimits = { timeoutMs: 5_000, memoryMb: 128 }
const utf8 = new TextEncoder()
const text = (response: FunctionResponse) => new TextDecoder().decode(response.body)
const json = (response: FunctionResponse): any => JSON.parse(text(response))

const request = (options: Partial<FunctionRequest> & { readonly text?: string } = {}): FunctionRequest => ({
  method: options.method ?? "POST",
  url: options.url ?? "/invoke",
  headers: options.headers ?? {},
  body: options.body ?? utf8.encode(options.text ?? "")
})

/** The failure of an effect expected to fail; a success fails the test. */
const deployError = <A, R>(effect: Effect.Effect<A, FunctionDeployError, R>) => Effect.flip(effect)
const invokeError = <A, R>(effect: Effect.Effect<A, FunctionInvokeError, R>) => Effect.flip(effect)

export const functionRuntimeConformance = <E>(name: string, options: FunctionRuntimeConformanceOptions<E>): void => {
  let ids = 0
  // uuid-shaped, as the service's ids are.
  const freshId = () => `00000000-0000-4000-9000-${(++ids).toString(16).padStart(12, "0")}`

  const test = (title: string, body: Effect.Effect<void, unknown, FunctionRuntime | FunctionKv>) =>
    (options.live ? it.live : it.effect)(
      title,
      () => body.pipe(Effect.provide(options.layer)),
      options.timeout ?? 30_000
    )

  describe(name, () => {
    test(
      "module form: method, path, query and headers in; status, headers and a JSON body out",
      Effect.gen(function*() {
        const runtime = yield* FunctionRuntime
        const id = freshId()
        const deployed = yield* runtime.deploy(
          id,
          1,
          `export default {
            async fetch(request, env, ctx) {
              const url = new URL(request.url)
              const input = await request.json()
              return new Response(JSON.stringify({
                method: request.method, path: url.pathname, q: url.searchParams.get("q"),
                trace: request.headers.get("x-trace"), echo: input, ctx: typeof ctx
              }), { status: 201, headers: { "content-type": "application/json", "x-answer": "yes" } })
            }
          }`,
          limits
        )
        assert.deepStrictEqual(deployed, { functionId: id, version: 1, limits })

        const response = yield* runtime.invoke(
          id,
          request({
            url: "/platform/v1/functions/x/invoke?q=search",
            headers: { "Content-Type": "application/json", "X-Trace": "t-1" },
            text: JSON.stringify({ list: [1, "two", null], nested: { ok: true } })
          }),
          { env: {} }
        )
        assert.strictEqual(response.status, 201)
        assert.strictEqual(response.headers["content-type"], "application/json")
        assert.strictEqual(response.headers["x-answer"], "yes")
        assert.deepStrictEqual(json(response), {
          method: "POST",
          path: "/platform/v1/functions/x/invoke",
          q: "search",
          trace: "t-1",
          echo: { list: [1, "two", null], nested: { ok: true } },
          ctx: "object"
        })
        assert.deepStrictEqual(response.consoleLogs, [])
        assert.isAtLeast(response.durationMs, 0)
      })
    )

    test(
      "script form: handler(request, env) reads text and answers text with its own status",
      Effect.gen(function*() {
        const runtime = yield* FunctionRuntime
        const id = freshId()
        yield* runtime.deploy(
          id,
          1,
          `// A comment before the handler.
async function handler(request, env) {
  const text = await request.text()
  return new Response(text.toUpperCase() + "!", { status: 202, headers: { "content-type": "text/plain; charset=utf-8" } })
}`,
          limits
        )
        const response = yield* runtime.invoke(id, request({ text: "héllo" }), { env: {} })
        assert.strictEqual(response.status, 202)
        assert.strictEqual(response.headers["content-type"], "text/plain; charset=utf-8")
        assert.strictEqual(text(response), "HÉLLO!")
      })
    )

    test(
      "bodies pass through byte for byte; GET carries none; an empty answer is empty",
      Effect.gen(function*() {
        const runtime = yield* FunctionRuntime
        const id = freshId()
        yield* runtime.deploy(
          id,
          1,
          `export default {
            async fetch(request) {
              if (request.method === "GET") return new Response(null, { status: 204, headers: { "x-had-body": String(request.body !== null) } })
              const bytes = new Uint8Array(await request.arrayBuffer())
              return new Response(bytes.reverse(), { headers: { "content-type": "application/octet-stream" } })
            }
          }`,
          limits
        )
        const bytes = Uint8Array.from({ length: 3000 }, (_, i) => (i * 7 + 3) % 256)
        const echoed = yield* runtime.invoke(id, request({ body: bytes }), { env: {} })
        assert.strictEqual(echoed.status, 200)
        assert.deepStrictEqual([...echoed.body], [...bytes].reverse())

        const empty = yield* runtime.invoke(id, request({ method: "GET", body: utf8.encode("ignored") }), { env: {} })
        assert.strictEqual(empty.status, 204)
        assert.strictEqual(empty.headers["x-had-body"], "false")
        assert.strictEqual(empty.body.byteLength, 0)
      })
    )

    test(
      "console output is captured in order with its level, objects as JSON, errors with their stack",
      Effect.gen(function*() {
        const runtime = yield* FunctionRuntime
        const id = freshId()
        yield* runtime.deploy(
          id,
          1,
          `export default {
            async fetch(request) {
              const lines = Number(new URL(request.url).searchParams.get("lines"))
              console.log("hello", 42, { a: 1 }, [1, "x"], null, undefined)
              console.info("info")
              console.warn("warn")
              console.error("failed:", new TypeError("bad thing"))
              console.debug("debug")
              for (let i = 0; i < lines; i++) console.log("line " + i)
              console.log("é".repeat(5000))
              return new Response("ok")
            }
          }`,
          limits
        )
        const response = yield* runtime.invoke(id, request({ url: "/?lines=0" }), { env: {} })
        const logs = response.consoleLogs
        assert.deepStrictEqual(logs.slice(0, 5).map((entry) => [entry.level, entry.message]), [
          ["log", `hello 42 {"a":1} [1,"x"] null undefined`],
          ["info", "info"],
          ["warn", "warn"],
          ["error", "failed: TypeError: bad thing"],
          ["debug", "debug"]
        ])
        assert.include(logs[3]!.stack ?? "", "bad thing")
        assert.include(logs[3]!.stack ?? "", "function.js")
        assert.notInclude(logs[3]!.stack ?? "", "parley-", "the runtime's own frames are cut")
        assert.isUndefined(logs[0]!.stack)
        assert.isTrue(logs.every((entry) => typeof entry.loggedAt === "number"))
        // 10,000 bytes of "é" clipped to at most 4 KB, on a character boundary.
        assert.strictEqual(logs.length, 6)
        const long = logs[5]!.message
        assert.isAtMost(utf8.encode(long).byteLength, 4096)
        assert.isAtLeast(utf8.encode(long).byteLength, 4000)
        assert.match(long, /^é+$/)

        const many = yield* runtime.invoke(id, request({ url: "/?lines=300" }), { env: {} })
        assert.strictEqual(many.consoleLogs.length, 100)
        assert.strictEqual(many.consoleLogs[99]!.message, "line 94")
      })
    )

    test(
      "concurrent invocations keep their console output apart",
      Effect.gen(function*() {
        const runtime = yield* FunctionRuntime
        const id = freshId()
        yield* runtime.deploy(
          id,
          1,
          `export default {
            async fetch(request) {
              const name = await request.text()
              console.log(name + " 1")
              await new Promise((resolve) => setTimeout(resolve, 30))
              console.log(name + " 2")
              return new Response(name)
            }
          }`,
          limits
        )
        const [a, b] = yield* Effect.all([
          runtime.invoke(id, request({ text: "a" }), { env: {} }),
          runtime.invoke(id, request({ text: "b" }), { env: {} })
        ], { concurrency: 2 })
        assert.deepStrictEqual(a.consoleLogs.map((entry) => entry.message), ["a 1", "a 2"])
        assert.deepStrictEqual(b.consoleLogs.map((entry) => entry.message), ["b 1", "b 2"])
      })
    )

    test(
      "secrets arrive in env, and a change reaches the next invocation without a redeploy",
      Effect.gen(function*() {
        const runtime = yield* FunctionRuntime
        const id = freshId()
        yield* runtime.deploy(
          id,
          1,
          `async function handler(request, env) {
            return Response.json({ token: env.API_TOKEN ?? null, config: env.CONFIG ?? null, kv: typeof env.KV, keys: Object.keys(env).sort() })
          }`,
          limits
        )
        const first = yield* runtime.invoke(id, request(), {
          env: { API_TOKEN: "one", CONFIG: { region: "eu", retries: 3 } }
        })
        assert.deepStrictEqual(json(first), {
          token: "one",
          config: { region: "eu", retries: 3 },
          kv: "object",
          keys: ["API_TOKEN", "CONFIG", "KV"]
        })
        const second = yield* runtime.invoke(id, request(), { env: { API_TOKEN: "two" } })
        assert.deepStrictEqual(json(second), { token: "two", config: null, kv: "object", keys: ["API_TOKEN", "KV"] })
      })
    )

    test(
      "env.KV keeps values per function in FunctionKv, and checks its limits",
      Effect.gen(function*() {
        const runtime = yield* FunctionRuntime
        const kv = yield* FunctionKv
        const code = `export default {
          async fetch(request, env) {
            const op = new URL(request.url).searchParams.get("op")
            if (op === "put") {
              await env.KV.put("greeting", "hello")
              await env.KV.put("doc", JSON.stringify({ n: 1 }))
              await env.KV.put("session", "s", { expirationTtl: 3600 })
              return new Response("stored")
            }
            if (op === "get") {
              const list = await env.KV.list({ prefix: "" })
              return Response.json({
                greeting: await env.KV.get("greeting"), doc: await env.KV.get("doc", "json"),
                missing: await env.KV.get("missing"), names: list.keys.map((key) => key.name), complete: list.list_complete
              })
            }
            if (op === "delete") {
              await env.KV.delete("greeting")
              return new Response("deleted")
            }
            const failures = []
            for (const attempt of [() => env.KV.put("k".repeat(600), "v"), () => env.KV.put("k", 42), () => env.KV.get("")]) {
              try { await attempt(); failures.push("accepted") } catch (error) { failures.push(error.name) }
            }
            return Response.json(failures)
          }
        }`
        const a = freshId()
        const b = freshId()
        yield* runtime.deploy(a, 1, code, limits)
        yield* runtime.deploy(b, 1, code, limits)

        assert.strictEqual(text(yield* runtime.invoke(a, request({ url: "/?op=put" }), { env: {} })), "stored")
        assert.deepStrictEqual(json(yield* runtime.invoke(a, request({ url: "/?op=get" }), { env: {} })), {
          greeting: "hello",
          doc: { n: 1 },
          missing: null,
          names: ["doc", "greeting", "session"],
          complete: true
        })
        assert.deepStrictEqual(yield* kv.get(a, "greeting"), Option.some("hello"))
        const page = yield* kv.list(a, { prefix: "session" })
        assert.strictEqual(page.keys.length, 1)
        assert.isNumber(page.keys[0]!.expiration)

        assert.deepStrictEqual(
          json(yield* runtime.invoke(b, request({ url: "/?op=get" }), { env: {} })),
          { greeting: null, doc: null, missing: null, names: [], complete: true },
          "another function's store is separate"
        )

        yield* runtime.invoke(a, request({ url: "/?op=delete" }), { env: {} })
        assert.deepStrictEqual(yield* kv.get(a, "greeting"), Option.none())
        assert.deepStrictEqual(json(yield* runtime.invoke(a, request({ url: "/?op=limits" }), { env: {} })), [
          "RangeError",
          "TypeError",
          "TypeError"
        ])
      })
    )

    test(
      "a syntax error fails the deploy with its message, and the previous version keeps serving",
      Effect.gen(function*() {
        const runtime = yield* FunctionRuntime
        const id = freshId()
        yield* runtime.deploy(id, 1, `export default { async fetch() { return new Response("v1") } }`, limits)
        const error = yield* deployError(
          runtime.deploy(id, 2, `export default { async fetch() { return new Response("v2" } }`, limits)
        )
        assert.instanceOf(error, FunctionDeployError)
        assert.strictEqual(error.reason, "invalid_code")
        assert.strictEqual(error.functionId, id)
        assert.include(error.message, "SyntaxError")

        assert.strictEqual(text(yield* runtime.invoke(id, request(), { env: {} })), "v1")
        assert.strictEqual(Option.getOrThrow(yield* runtime.loaded(id)).version, 1)
      })
    )

    test(
      "code of neither shape, a throwing top level or a missing handler fails the deploy",
      Effect.gen(function*() {
        const runtime = yield* FunctionRuntime
        const id = freshId()
        const neither = yield* deployError(runtime.deploy(id, 1, `const answer = 42`, limits))
        assert.strictEqual(neither.reason, "invalid_code")
        assert.include(neither.message, "handler")

        const throwing = yield* deployError(runtime.deploy(
          id,
          1,
          `throw new Error("top-level failure")
export default { async fetch() { return new Response("never") } }`,
          limits
        ))
        assert.strictEqual(throwing.reason, "invalid_code")
        assert.include(throwing.message, "top-level failure")

        const noFetch = yield* deployError(runtime.deploy(id, 1, `export default { async handle() {} }`, limits))
        assert.strictEqual(noFetch.reason, "invalid_code")
        assert.include(noFetch.message, "fetch")

        const notAFunction = yield* deployError(runtime.deploy(id, 1, `const handler = 42`, limits))
        assert.strictEqual(notAFunction.reason, "invalid_code")
        assert.include(notAFunction.message, "handler")

        assert.isTrue(Option.isNone(yield* runtime.loaded(id)))
        const error = yield* invokeError(runtime.invoke(id, request(), { env: {} }))
        assert.strictEqual(error.reason, "not_loaded")
      })
    )

    test(
      "a redeploy replaces the code; unload stops serving",
      Effect.gen(function*() {
        const runtime = yield* FunctionRuntime
        const id = freshId()
        const other = freshId()
        yield* runtime.deploy(id, 1, `async function handler() { return new Response("one") }`, limits)
        yield* runtime.deploy(other, 1, `async function handler() { return new Response("other") }`, limits)
        assert.strictEqual(text(yield* runtime.invoke(id, request(), { env: {} })), "one")

        const second = { timeoutMs: 4_000, memoryMb: 128 }
        yield* runtime.deploy(id, 2, `export default { fetch: () => new Response("two") }`, second)
        assert.strictEqual(text(yield* runtime.invoke(id, request(), { env: {} })), "two")
        assert.deepStrictEqual(yield* runtime.loaded(id), Option.some({ functionId: id, version: 2, limits: second }))

        yield* runtime.unload(id)
        yield* runtime.unload(freshId())
        assert.isTrue(Option.isNone(yield* runtime.loaded(id)))
        const error = yield* invokeError(runtime.invoke(id, request(), { env: {} }))
        assert.instanceOf(error, FunctionInvokeError)
        assert.strictEqual(error.reason, "not_loaded")
        assert.strictEqual(error.functionId, id)
        assert.strictEqual(text(yield* runtime.invoke(other, request(), { env: {} })), "other", "others keep serving")
      })
    )

    test(
      "a thrown error fails with `thrown`, its message and stack, and the console output before it",
      Effect.gen(function*() {
        const runtime = yield* FunctionRuntime
        const id = freshId()
        yield* runtime.deploy(
          id,
          1,
          `async function handler(request) {
  const kind = new URL(request.url).searchParams.get("kind")
  console.log("before")
  if (kind === "error") throw new TypeError("boom")
  if (kind === "value") throw "plain"
  return { status: 200 }
}`,
          limits
        )
        const thrown = yield* invokeError(runtime.invoke(id, request({ url: "/?kind=error" }), { env: {} }))
        assert.strictEqual(thrown.reason, "thrown")
        assert.strictEqual(thrown.message, "TypeError: boom")
        assert.include(thrown.stack ?? "", "boom")
        assert.include(thrown.stack ?? "", "function.js")
        assert.notInclude(thrown.stack ?? "", "parley-", "the runtime's own frames are cut")
        assert.deepStrictEqual(thrown.consoleLogs.map((entry) => entry.message), ["before"])
        assert.isAtLeast(thrown.durationMs, 0)

        const value = yield* invokeError(runtime.invoke(id, request({ url: "/?kind=value" }), { env: {} }))
        assert.strictEqual(value.reason, "thrown")
        assert.include(value.message, "plain")

        const notResponse = yield* invokeError(runtime.invoke(id, request({ url: "/?kind=object" }), { env: {} }))
        assert.strictEqual(notResponse.reason, "thrown")
        assert.include(notResponse.message, "Response")
      })
    )

    test(
      "an invocation without an answer within its timeout fails with `timeout`; the function keeps serving",
      Effect.gen(function*() {
        const runtime = yield* FunctionRuntime
        const id = freshId()
        yield* runtime.deploy(
          id,
          1,
          `export default {
            async fetch(request) {
              const path = new URL(request.url).pathname
              if (path === "/slow") await new Promise((resolve) => setTimeout(resolve, 10_000))
              if (path === "/never") await new Promise(() => {})
              return new Response("alive")
            }
          }`,
          { timeoutMs: 1_000, memoryMb: 128 }
        )
        const fiber = yield* invokeError(runtime.invoke(id, request({ url: "/slow" }), { env: {} })).pipe(
          Effect.forkChild
        )
        yield* options.advance(1_200)
        const error = yield* Fiber.join(fiber)
        assert.strictEqual(error.reason, "timeout")
        assert.isAtLeast(error.durationMs, 1_000)

        assert.strictEqual(text(yield* runtime.invoke(id, request(), { env: {} })), "alive")

        // A promise nothing can settle: workerd notices at once, the memory runtime at the deadline.
        const never = yield* invokeError(runtime.invoke(id, request({ url: "/never" }), { env: {} })).pipe(
          Effect.forkChild
        )
        yield* options.advance(1_200)
        assert.strictEqual((yield* Fiber.join(never)).reason, "timeout")
        assert.strictEqual(text(yield* runtime.invoke(id, request(), { env: {} })), "alive")
      })
    )

    test(
      "outbound fetch to a loopback address is refused",
      Effect.gen(function*() {
        const runtime = yield* FunctionRuntime
        const id = freshId()
        yield* runtime.deploy(
          id,
          1,
          `async function handler() {
            try {
              const response = await fetch("http://127.0.0.1:9/")
              return new Response("reached " + response.status)
            } catch (error) {
              return new Response(String(error.message))
            }
          }`,
          limits
        )
        assert.include(text(yield* runtime.invoke(id, request(), { env: {} })), "refused")
      })
    )
  })
}

export interface FunctionKvConformanceOptions<E> {
  readonly layer: Layer.Layer<FunctionKv, E>
  readonly advance: (ms: number) => Effect.Effect<void>
  readonly live: boolean
  readonly timeout?: number | undefined
}

export const functionKvConformance = <E>(name: string, options: FunctionKvConformanceOptions<E>): void => {
  let ids = 0
  const freshId = () => `00000000-0000-4000-a000-${(++ids).toString(16).padStart(12, "0")}`
  const test = (title: string, body: Effect.Effect<void, unknown, FunctionKv>) =>
    (options.live ? it.live : it.effect)(
      title,
      () => body.pipe(Effect.provide(options.layer)),
      options.timeout ?? 30_000
    )

  describe(name, () => {
    test(
      "put, overwrite, get and delete, per function",
      Effect.gen(function*() {
        const kv = yield* FunctionKv
        const a = freshId()
        const b = freshId()
        assert.deepStrictEqual(yield* kv.get(a, "k"), Option.none())
        yield* kv.put(a, "k", "one")
        yield* kv.put(a, "k", "two")
        yield* kv.put(b, "k", "other")
        yield* kv.put(a, "unicode ключ", "значение ✓")
        assert.deepStrictEqual(yield* kv.get(a, "k"), Option.some("two"))
        assert.deepStrictEqual(yield* kv.get(b, "k"), Option.some("other"))
        assert.deepStrictEqual(yield* kv.get(a, "unicode ключ"), Option.some("значение ✓"))
        yield* kv.delete(a, "k")
        yield* kv.delete(a, "never-there")
        assert.deepStrictEqual(yield* kv.get(a, "k"), Option.none())
        assert.deepStrictEqual(yield* kv.get(b, "k"), Option.some("other"))
      })
    )

    test(
      "list: ascending names, prefix, pages joined by the cursor",
      Effect.gen(function*() {
        const kv = yield* FunctionKv
        const id = freshId()
        const names = ["user:3", "user:1", "order:9", "user:2", "user:10", "zeta"]
        yield* Effect.forEach(names, (key) => kv.put(id, key, `v-${key}`), { discard: true })
        yield* kv.put(freshId(), "user:99", "elsewhere")

        const all = yield* kv.list(id)
        assert.deepStrictEqual(all.keys.map((key) => key.name), ["order:9", "user:1", "user:10", "user:2", "user:3", "zeta"])
        assert.isUndefined(all.cursor)

        const first = yield* kv.list(id, { prefix: "user:", limit: 3 })
        assert.deepStrictEqual(first.keys.map((key) => key.name), ["user:1", "user:10", "user:2"])
        assert.isString(first.cursor)
        const second = yield* kv.list(id, { prefix: "user:", limit: 3, cursor: first.cursor })
        assert.deepStrictEqual(second.keys.map((key) => key.name), ["user:3"])
        assert.isUndefined(second.cursor)
      })
    )

    test(
      "an entry with expirationTtl reads as absent once it expires",
      Effect.gen(function*() {
        const kv = yield* FunctionKv
        const id = freshId()
        yield* kv.put(id, "short", "s", { expirationTtl: 1 })
        yield* kv.put(id, "kept", "k")
        assert.deepStrictEqual(yield* kv.get(id, "short"), Option.some("s"))
        const listed = yield* kv.list(id, { prefix: "short" })
        assert.isNumber(listed.keys[0]?.expiration)

        yield* options.advance(1_500)
        assert.deepStrictEqual(yield* kv.get(id, "short"), Option.none())
        assert.deepStrictEqual((yield* kv.list(id)).keys.map((key) => key.name), ["kept"])

        yield* kv.put(id, "short", "again")
        assert.deepStrictEqual(yield* kv.get(id, "short"), Option.some("again"), "a put clears the old expiry")

        // Maintenance removes expired entries (of every function) in batches; live ones stay.
        yield* kv.put(id, "gone-1", "x", { expirationTtl: 1 })
        yield* kv.put(id, "gone-2", "x", { expirationTtl: 1 })
        yield* kv.put(freshId(), "gone-3", "x", { expirationTtl: 1 })
        yield* options.advance(1_500)
        let purged = 0
        for (let n = yield* kv.purgeExpired(1); n > 0; n = yield* kv.purgeExpired(1)) purged += n
        assert.isAtLeast(purged, 3)
        assert.deepStrictEqual((yield* kv.list(id)).keys.map((key) => key.name), ["kept", "short"])
      })
    )

    test(
      "clear drops one function's entries only",
      Effect.gen(function*() {
        const kv = yield* FunctionKv
        const a = freshId()
        const b = freshId()
        yield* kv.put(a, "x", "1")
        yield* kv.put(a, "y", "2")
        yield* kv.put(b, "x", "3")
        yield* kv.clear(a)
        assert.deepStrictEqual((yield* kv.list(a)).keys, [])
        assert.deepStrictEqual(yield* kv.get(b, "x"), Option.some("3"))
      })
    )
  })
}
