/** Workflows, triggers and the older flows surface: decode (contract) → one service call → encode (contract). */
import {
  BadRequest,
  CurrentPrincipal,
  Executions,
  cursorKeyOf,
  pageBody,
  ParleyApi,
  resolvePageWindow,
  resolveWindow,
  toFlow,
  toListBody,
  toTrigger,
  toWorkflow,
  Triggers,
  Workflows
} from "@parley/core"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { dateFilter, locationOf } from "./Lists.ts"

export const WorkflowsHandlers = HttpApiBuilder.group(
  ParleyApi,
  "workflows",
  Effect.fn(function*(handlers) {
    const workflows = yield* Workflows
    const executions = yield* Executions
    return handlers
      .handle("list", ({ query, request }) =>
        Effect.gen(function*() {
          const principal = yield* CurrentPrincipal
          const window = yield* resolveWindow(query)
          const filter = {
            status: query.status,
            name_contains: query.name_contains,
            created_after: yield* dateFilter("created_after", query.created_after),
            created_before: yield* dateFilter("created_before", query.created_before)
          }
          const slice = yield* workflows.list(principal, filter, window)
          return toListBody(window, slice, cursorKeyOf, toWorkflow, yield* locationOf(request))
        }))
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          const created = yield* workflows.create(yield* CurrentPrincipal, payload.workflow)
          return { data: toWorkflow(created) }
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          return { data: toWorkflow(yield* workflows.getSummary(yield* CurrentPrincipal, params.id)) }
        }))
      .handle("update", ({ params, payload }) =>
        Effect.gen(function*() {
          const input = payload.workflow ?? payload.flow
          if (input === undefined) {
            return yield* new BadRequest({ error: "Missing workflow envelope in the request body", code: "missing_envelope" })
          }
          return { data: toWorkflow(yield* workflows.update(yield* CurrentPrincipal, params.id, input)) }
        }))
      .handle("delete", ({ params }) =>
        Effect.gen(function*() {
          // The executions capability ends the workflow's live runs before it goes (decisions 3.1).
          yield* executions.deleteWorkflow(yield* CurrentPrincipal, params.id)
        }))
      .handle("definition", ({ params }) =>
        Effect.gen(function*() {
          const workflow = yield* workflows.getWithDefinition(yield* CurrentPrincipal, params.id)
          return { data: { ...toWorkflow(workflow), definition: workflow.definition } }
        }))
  })
)

export const TriggersHandlers = HttpApiBuilder.group(
  ParleyApi,
  "triggers",
  Effect.fn(function*(handlers) {
    const triggers = yield* Triggers
    return handlers
      .handle("list", ({ params }) =>
        Effect.gen(function*() {
          return { data: (yield* triggers.list(yield* CurrentPrincipal, params.id)).map(toTrigger) }
        }))
      .handle("create", ({ params, payload }) =>
        Effect.gen(function*() {
          return { data: toTrigger(yield* triggers.create(yield* CurrentPrincipal, params.id, payload.trigger)) }
        }))
      .handle("replace", ({ params, payload }) =>
        Effect.gen(function*() {
          return { data: (yield* triggers.replace(yield* CurrentPrincipal, params.id, payload.triggers)).map(toTrigger) }
        }))
      .handle("update", ({ params, payload }) =>
        Effect.gen(function*() {
          return { data: toTrigger(yield* triggers.setActive(yield* CurrentPrincipal, params.id, payload.trigger.active)) }
        }))
      .handle("delete", ({ params }) =>
        Effect.gen(function*() {
          yield* triggers.delete(yield* CurrentPrincipal, params.id)
        }))
  })
)

export const FlowsHandlers = HttpApiBuilder.group(
  ParleyApi,
  "flows",
  Effect.fn(function*(handlers) {
    const workflows = yield* Workflows
    return handlers
      .handle("list", ({ query, request }) =>
        Effect.gen(function*() {
          const window = yield* resolvePageWindow(query)
          const slice = yield* workflows.list(yield* CurrentPrincipal, { status: query["q[status_eq]"] }, window)
          return pageBody(window, slice.total, slice.items.map(toFlow), yield* locationOf(request))
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          return { data: toFlow(yield* workflows.getSummary(yield* CurrentPrincipal, params.id)) }
        }))
      .handle("update", ({ params, payload }) =>
        Effect.gen(function*() {
          const updated = yield* workflows.update(yield* CurrentPrincipal, params.id, payload.flow)
          return { data: toFlow(updated), message: "Flow updated successfully" }
        }))
  })
)
