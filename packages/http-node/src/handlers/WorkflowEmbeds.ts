/** Workflow viewer embeds (Platform API) and the embedded viewer's own API: decode (contract) → one service call → encode. */
import {
  CurrentPrincipal,
  CurrentViewer,
  NodeTypes,
  ParleyApi,
  pageBody,
  resolvePageWindow,
  toStepEvent,
  toWorkflowEmbed,
  Viewer,
  ViewerAuthentication,
  WorkflowEmbeds
} from "@parley/core"
import { Effect, Layer, Option, Redacted } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { setProjectId } from "../RequestInfo.ts"
import { locationOf } from "./Lists.ts"

export const WorkflowEmbedsHandlers = HttpApiBuilder.group(
  ParleyApi,
  "workflowEmbeds",
  Effect.fn(function*(handlers) {
    const embeds = yield* WorkflowEmbeds
    return handlers
      .handle("list", ({ query, request }) =>
        Effect.gen(function*() {
          const window = yield* resolvePageWindow(query)
          const filter = { status: query.status, scope_type: query.scope_type, scope_id: query.scope_id }
          const slice = yield* embeds.list(yield* CurrentPrincipal, filter, window)
          return pageBody(window, slice.total, slice.items.map(toWorkflowEmbed), yield* locationOf(request))
        }))
      .handle("create", ({ payload }) =>
        Effect.gen(function*() {
          const created = yield* embeds.create(yield* CurrentPrincipal, payload.workflow_embed)
          return { data: { ...toWorkflowEmbed(created.embed), token: created.token, embed_url: created.embed_url } }
        }))
      .handle("get", ({ params }) =>
        Effect.gen(function*() {
          return { data: toWorkflowEmbed(yield* embeds.get(yield* CurrentPrincipal, params.id)) }
        }))
      .handle("update", ({ params, payload }) =>
        Effect.gen(function*() {
          return { data: toWorkflowEmbed(yield* embeds.update(yield* CurrentPrincipal, params.id, payload.workflow_embed)) }
        }))
      .handle("revoke", ({ params }) =>
        Effect.gen(function*() {
          yield* embeds.revoke(yield* CurrentPrincipal, params.id)
        }))
  })
)

export const ViewerHandlers = HttpApiBuilder.group(
  ParleyApi,
  "viewer",
  Effect.fn(function*(handlers) {
    const viewer = yield* Viewer
    return handlers
      .handle("session", () =>
        Effect.gen(function*() {
          const session = yield* CurrentViewer
          const { embed } = session
          return {
            data: {
              name: embed.name,
              scope_type: embed.scope_type,
              scope_id: embed.scope_id,
              scope_name: embed.scope_name,
              access: embed.access,
              language: embed.language,
              default_mode: embed.default_mode,
              node_types: NodeTypes,
              sandbox: Option.getOrNull(yield* viewer.sandbox(session))
            }
          }
        }))
      .handle("workflows", () =>
        Effect.gen(function*() {
          const listed = yield* viewer.workflows(yield* CurrentViewer)
          return { data: listed.map((w) => ({ id: w.id, name: w.name, status: w.status, updated_at: w.updated_at })) }
        }))
      .handle("workflow", ({ params }) =>
        Effect.gen(function*() {
          return { data: yield* viewer.workflow(yield* CurrentViewer, params.id) }
        }))
      .handle("validate", ({ params, payload }) =>
        Effect.gen(function*() {
          const problems = yield* viewer.validate(yield* CurrentViewer, params.id, payload.definition)
          return { data: { valid: problems.length === 0, problems } }
        }))
      .handle("save", ({ params, payload }) =>
        Effect.gen(function*() {
          return { data: yield* viewer.save(yield* CurrentViewer, params.id, payload.definition, payload.lock_version) }
        }))
      .handle("executions", ({ params, query }) =>
        Effect.gen(function*() {
          const limit = query.limit === undefined ? 50 : Number(query.limit)
          const listed = yield* viewer.executions(yield* CurrentViewer, params.id, { status: query.status, trigger_type: query.trigger_type }, limit)
          return { data: listed.items, has_more: listed.hasMore }
        }))
      .handle("run", ({ params }) =>
        Effect.gen(function*() {
          const run = yield* viewer.run(yield* CurrentViewer, params.id)
          return { data: { ...run, events: run.events.map(toStepEvent) } }
        }))
      .handle("resume", ({ params }) =>
        Effect.gen(function*() {
          return { data: yield* viewer.resume(yield* CurrentViewer, params.id) }
        }))
      .handle("end", ({ params }) =>
        Effect.gen(function*() {
          return { data: yield* viewer.end(yield* CurrentViewer, params.id) }
        }))
      .handle("testRun", ({ params, payload }) =>
        Effect.gen(function*() {
          return { data: yield* viewer.testRun(yield* CurrentViewer, params.id, payload.phone_number, payload.variables) }
        }))
  })
)

/** `X-Viewer-Token` → the embed (`WorkflowEmbeds.authenticate`); 401 otherwise. */
export const ViewerAuthenticationLive = Layer.effect(
  ViewerAuthentication,
  Effect.gen(function*() {
    const embeds = yield* WorkflowEmbeds
    return ViewerAuthentication.of({
      viewerToken: (httpEffect, { credential }) =>
        Effect.gen(function*() {
          const session = yield* embeds.authenticate(Redacted.value(credential))
          setProjectId(yield* HttpServerRequest.HttpServerRequest, session.project.id)
          return yield* Effect.provideService(httpEffect, CurrentViewer, session)
        })
    })
  })
)
