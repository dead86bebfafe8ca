/**
 * Test support: a real Parley host on a random loopback port, with two
 * projects and a key for each, reached over real HTTP with `fetch`.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { type FunctionKv, type FunctionRuntime, Projects } from "@parley/core"
import { layerMemoryFunctionRuntime } from "@parley/core/testing"
import { Context, Effect, Layer, References } from "effect"
import { HttpServer } from "effect/http"
import * as Host from "../src/Host.ts"

export interface TestHost {
  readonly url: string
  /** Key of project A. */
  readonly key: string
  /** Key of project B, an unrelated tenant. */
  readonly otherKey: string
  readonly request: (
    method: string,
    path: string,
    options?: { readonly body?: unknown; readonly rawBody?: string; readonly key?: string | null; readonly headers?: Record<string, string> }
  ) => Promise<{ readonly status: number; readonly body: any; readonly headers: Headers; readonly text: string }>
}

const KEY_A = "pk_test_project_a_0123456789abcdef"
const KEY_B = "pk_test_project_b_0123456789abcdef"

/**
 * Serves the host built over `ports` (storage, ids, jobs). The layer is built
 * in the caller's scope, so the server stops with it. Functions run on the
 * memory runtime unless `functionRuntime` says otherwise (workerd).
 */
export const startHost = <E>(
  ports: Layer.Layer<any, E, never>,
  options: { readonly functionRuntime?: Layer.Layer<FunctionRuntime, never, FunctionKv> } = {}
) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(
      Host.serve({ publicUrl: "http://127.0.0.1", functionRuntime: options.functionRuntime ?? layerMemoryFunctionRuntime() }).pipe(
        Layer.provideMerge(NodeHttpServer.layer(Host.createNodeServer, { port: 0, host: "127.0.0.1" })),
        Layer.provideMerge(ports),
        // One log line per request would bury the test output.
        Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn"))
      )
    )
    const url = yield* HttpServer.addressFormattedWith(Effect.succeed).pipe(Effect.provideContext(context))
    const projects = Context.get(context, Projects)
    const a = yield* projects.create("Project A")
    yield* projects.createKey(a.id, "test", KEY_A)
    const b = yield* projects.create("Project B")
    yield* projects.createKey(b.id, "test", KEY_B)
    const host: TestHost = {
      url,
      key: KEY_A,
      otherKey: KEY_B,
      request: async (method, path, options = {}) => {
        const headers: Record<string, string> = { ...options.headers }
        const key = options.key === undefined ? KEY_A : options.key
        if (key !== null) headers["x-api-key"] = key
        let body: string | undefined
        if (options.rawBody !== undefined) body = options.rawBody
        else if (options.body !== undefined) body = JSON.stringify(options.body)
        if (body !== undefined) headers["content-type"] ??= "application/json"
        const response = await fetch(`${url}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) })
        const text = await response.text()
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
