/** Workflow executions, their step events and the older surface's flow execution: decode → Executions → encode. */
import {
  ApiRateLimits,
  BadRequest,
  burstHeaders,
  CurrentPrincipal,
  Executions,
  ParleyApi,
  resolveWindow,
  START_RATE_EXCEEDED,
  StartRateExceeded,
  toListBody,
  toStepEvent
} from "@parley/core"
import { Effect, Option } from "effect"
import { HttpEffect, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { dateFilter, locationOf } from "./Lists.ts"

/** Executions list newest first by (started_at, id); step events by (created_at, id). */
const executionKey = (e: { readonly started_at: string; readonly id: string }) => ({ sortKey: e.started_at, id: e.id })
const eventKey = (e: { readonly created_at: string; readonly id: string }) => ({ sortKey: e.created_at, id: e.id })
const same = <A>(a: A) => a

export const ExecutionsHandlers = HttpApiBuilder.group(
  ParleyApi,
  "executions",
  Effect.fn(function*(handlers) {
    const executions = yield* Executions
    const limits = yield* ApiRateLimits
    return handlers
      .handle("start", ({ params, payload, request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          // The start burst per key and workflow (decisions 8.1), counted before the start's own checks.
          const burst = yield* limits.admitStart(principal.apiKey.id, params.id)
          const headers = burstHeaders(burst)
          yield* HttpEffect.appendPreResponseHandler((_, response) =>
            Effect.succeed(HttpServerResponse.setHeaders(response, headers))
          )
          if (!burst.admitted) return yield* new StartRateExceeded(START_RATE_EXCEEDED)
          const facts = {
            ip: Option.getOrNull(request.remoteAddress),
            user_agent: request.headers["user-agent"] ?? null
          }
          return { data: yield* executions.start(principal, params.id, payload.workflow_execution, facts) }
        }))
      .handle("list", ({ params, query, request }) =>
        Effect.gen(function*() {
          const window = yield* resolveWindow(query)
          const filter = {
            workflow_id: params.id,
            status: query.status,
            waiting_reason: query.waiting_reason,
            trigger_type: query.trigger_type,
            msg_conversation_id: query.msg_conversation_id,
            created_after: yield* dateFilter("created_after", query.created_after),
            created_before: yield* dateFilter("created_before", query.created_before)
          }
          const slice = yield* executions.list(yield* CurrentPrincipal, filter, window)
          return toListBody(window, slice, executionKey, same, yield* locationOf(request))
        }))
      .handle("listByConversation", ({ params, query, request }) =>
        Effect.gen(function*() {
          const window = yield* resolveWindow(query)
          const slice = yield* executions.listByConversation(yield* CurrentPrincipal, params.id, { status: query.status }, window)
          return toListBody(window, slice, executionKey, same, yield* locationOf(request))
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          return { data: yield* executions.get(yield* CurrentPrincipal, params.id) }
        }))
      .handle("update", ({ params, payload }) =>
        Effect.gen(function*() {
          if (payload.workflow_execution === undefined) {
            return yield* new BadRequest({ error: "Missing workflow_execution envelope in the request body", code: "missing_envelope" })
          }
          return { data: yield* executions.move(yield* CurrentPrincipal, params.id, payload.workflow_execution.status) }
        }))
      .handle("resume", ({ params, payload }) =>
        Effect.gen(function*() {
          return { data: yield* executions.resume(yield* CurrentPrincipal, params.id, payload) }
        }))
      .handle("events", ({ params, query, request }) =>
        Effect.gen(function*() {
          const window = yield* resolveWindow(query)
          const types = query.event_type?.split(",").map((t) => t.trim()).filter((t) => t.length > 0)
          const filter = { event_types: types === undefined || types.length === 0 ? undefined : types }
          const slice = yield* executions.events(yield* CurrentPrincipal, params.id, filter, window)
          return toListBody(window, slice, eventKey, toStepEvent, yield* locationOf(request))
        }))
      .handle("event", ({ params }) =>
        Effect.gen(function*() {
          return { data: toStepEvent(yield* executions.event(yield* CurrentPrincipal, params.id)) }
        }))
      .handle("variables", ({ params }) =>
        Effect.gen(function*() {
          return { data: yield* executions.variables(yield* CurrentPrincipal, params.id) }
        }))
  })
)

export const FlowExecutionsHandlers = HttpApiBuilder.group(
  ParleyApi,
  "flowExecutions",
  Effect.fn(function*(handlers) {
    const executions = yield* Executions
    return handlers.handle("get", ({ params }) =>
      Effect.gen(function*() {
        return { data: yield* executions.getFlowExecution(yield* CurrentPrincipal, params.id) }
      }))
  })
)
