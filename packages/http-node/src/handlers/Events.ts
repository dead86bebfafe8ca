/** Project events and event definitions: decode (contract) → one service call → encode (contract). */
import {
  CurrentPrincipal,
  eventCursorKeyOf,
  Events,
  ParleyApi,
  resolveWindow,
  toEventDefinition,
  toListBody,
  toProjectEvent
} from "@parley/core"
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { dateFilter, locationOf } from "./Lists.ts"

export const EventsHandlers = HttpApiBuilder.group(
  ParleyApi,
  "events",
  Effect.fn(function*(handlers) {
    const events = yield* Events
    return handlers
      .handle("emit", ({ payload }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          return { data: toProjectEvent(yield* events.emit(principal.project.id, payload)) }
        }))
      .handle("list", ({ query, request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          // Page mode unless a cursor parameter is given (decisions 1.3).
          const window = yield* resolveWindow(query, "page")
          const filter = {
            name: query.name,
            conversation_id: query.conversation_id,
            occurred_after: yield* dateFilter("occurred_after", query.occurred_after),
            occurred_before: yield* dateFilter("occurred_before", query.occurred_before)
          }
          const slice = yield* events.list(principal, filter, window)
          return toListBody(window, slice, eventCursorKeyOf, toProjectEvent, yield* locationOf(request))
        }))
  })
)

export const EventDefinitionsHandlers = HttpApiBuilder.group(
  ParleyApi,
  "eventDefinitions",
  Effect.fn(function*(handlers) {
    const events = yield* Events
    return handlers
      .handle("list", ({ query }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const all = yield* events.listDefinitions(principal, { includeArchived: query.include_archived === "true" })
          return { data: all.map(toEventDefinition) }
        }))
      .handle("save", ({ payload }) =>
        Effect.gen(function*() {
          const { created, definition } = yield* events.saveDefinition(yield* CurrentPrincipal, payload)
          const body = { data: toEventDefinition(definition) }
          // Both answers have the same shape; the status tells them apart (201 created, 200 updated or restored).
          return created ? body : yield* HttpServerResponse.json(body, { status: 200 }).pipe(Effect.orDie)
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          return { data: toEventDefinition(yield* events.getDefinition(yield* CurrentPrincipal, params.id)) }
        }))
      .handle("update", ({ params, payload }) =>
        Effect.gen(function*() {
          return { data: toEventDefinition(yield* events.updateDefinition(yield* CurrentPrincipal, params.id, payload)) }
        }))
      .handle("delete", ({ params }) =>
        Effect.gen(function*() {
          const marked = yield* events.deleteDefinition(yield* CurrentPrincipal, params.id)
          return { data: { id: marked.id, status: "deletion_pending" as const } }
        }))
  })
)
