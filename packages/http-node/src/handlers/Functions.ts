/**
 * Functions: decode (contract) → one service call → encode (contract). The
 * invoke route is raw: its body is forwarded as received and its answer is
 * the function's, so it reads the bytes and writes the shaped answer itself.
 */
import {
  CurrentPrincipal,
  FUNCTION_DEPLOY_STARTED_MESSAGE,
  functionCursorKeyOf,
  functionDeploymentCursorKeyOf,
  FunctionInvoker,
  Functions,
  pageBody,
  ParleyApi,
  PayloadTooLarge,
  PublicUrl,
  resolvePageWindow,
  resolveWindow,
  toFunctionDeployment,
  toFunctionInvocation,
  toFunctionResource,
  toListBody
} from "@parley/core"
import { ByteSize, Effect } from "effect"
import { HttpIncomingMessage, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { presentedKey } from "./Authentication.ts"
import { locationOf } from "./Lists.ts"
import { setProjectId } from "../RequestInfo.ts"

/** Decisions 8.4: request bodies of the Platform API. */
const MAX_INVOKE_BODY_BYTES = 10 * 1024 * 1024

export const FunctionsHandlers = HttpApiBuilder.group(
  ParleyApi,
  "functions",
  Effect.fn(function*(handlers) {
    const functions = yield* Functions
    const render = toFunctionResource(yield* PublicUrl)
    return handlers
      .handle("list", ({ query, request }) =>
        Effect.gen(function*() {
          const window = yield* resolveWindow(query)
          const slice = yield* functions.list(yield* CurrentPrincipal, window)
          return toListBody(window, slice, functionCursorKeyOf, render, yield* locationOf(request))
        }))
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          return { data: render(yield* functions.create(yield* CurrentPrincipal, payload.function)) }
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          return { data: render(yield* functions.get(yield* CurrentPrincipal, params.id)) }
        }))
      .handle("update", ({ params, payload }) =>
        Effect.gen(function*() {
          return { data: render(yield* functions.update(yield* CurrentPrincipal, params.id, payload.function)) }
        }))
      .handle("delete", ({ params }) =>
        Effect.gen(function*() {
          yield* functions.delete(yield* CurrentPrincipal, params.id)
        }))
      .handle("deploy", ({ params }) =>
        Effect.gen(function*() {
          const fn = yield* functions.deploy(yield* CurrentPrincipal, params.id)
          return { message: FUNCTION_DEPLOY_STARTED_MESSAGE, function_id: fn.id, status: "deploying" as const }
        }))
      .handle("deployments", ({ params, query, request }) =>
        Effect.gen(function*() {
          const window = yield* resolveWindow(query)
          const slice = yield* functions.listDeployments(yield* CurrentPrincipal, params.id, window)
          return toListBody(window, slice, functionDeploymentCursorKeyOf, toFunctionDeployment, yield* locationOf(request))
        }))
      .handle("invocations", ({ params, query }) =>
        Effect.gen(function*() {
          const page = yield* functions.listInvocations(yield* CurrentPrincipal, params.id, {
            outcome: query.status,
            limit: query.limit
          })
          return {
            data: {
              function_id: page.function.id,
              function_name: page.function.name,
              invocations: page.invocations.map(toFunctionInvocation),
              total: page.total
            }
          }
        }))
      .handle("listSecrets", ({ params }) =>
        Effect.gen(function*() {
          return { data: yield* functions.listSecrets(yield* CurrentPrincipal, params.id) }
        }))
      .handle("saveSecret", ({ params, payload }) =>
        Effect.gen(function*() {
          yield* functions.saveSecret(yield* CurrentPrincipal, params.id, payload.secret)
          return { message: "Secret saved" }
        }))
      .handle("deleteSecret", ({ params }) =>
        Effect.gen(function*() {
          yield* functions.deleteSecret(yield* CurrentPrincipal, params.id, params.name)
        }))
  })
)

export const FunctionInvokeHandlers = HttpApiBuilder.group(
  ParleyApi,
  "functionInvoke",
  Effect.fn(function*(handlers) {
    const invoker = yield* FunctionInvoker
    return handlers.handleRaw("invoke", ({ params, request }) =>
      Effect.gen(function*() {
        const bytes = yield* request.arrayBuffer.pipe(
          Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(MAX_INVOKE_BODY_BYTES)),
          Effect.mapError(() => new PayloadTooLarge({ error: "Request body too large" }))
        )
        const answer = yield* invoker.invokeHttp({
          functionId: params.id,
          apiKey: presentedKey(request),
          method: request.method,
          url: request.url,
          headers: request.headers,
          body: new Uint8Array(bytes)
        })
        setProjectId(request, answer.projectId)
        return answer.body.byteLength === 0
          ? HttpServerResponse.empty({ status: answer.status, headers: answer.headers })
          : HttpServerResponse.uint8Array(answer.body, { status: answer.status, headers: answer.headers })
      }).pipe(
        // Decisions 8.1: the limit's headers go with the refusal.
        Effect.catchTag("InvokeRateLimited", (limited) =>
          Effect.succeed(HttpServerResponse.jsonUnsafe({ error: "Rate limit exceeded" }, {
            status: 429,
            headers: {
              "retry-after": String(limited.retryAfterSeconds),
              "x-ratelimit-limit": String(limited.limit),
              "x-ratelimit-remaining": "0",
              "x-ratelimit-reset": String(limited.reset)
            }
          })))
      ))
  })
)

export const LegacyFunctionsHandlers = HttpApiBuilder.group(
  ParleyApi,
  "legacyFunctions",
  Effect.fn(function*(handlers) {
    const functions = yield* Functions
    const render = toFunctionResource(yield* PublicUrl)
    return handlers.handle("list", ({ query, request }) =>
      Effect.gen(function*() {
        const window = yield* resolvePageWindow(query)
        const slice = yield* functions.list(yield* CurrentPrincipal, window)
        return pageBody(window, slice.total, slice.items.map(render), yield* locationOf(request))
      }))
  })
)
