/**
 * Webhook registrations (spec "Webhooks", decisions 2.9, 3.6, 4.6): number-
 * level webhooks for message and conversation events (and `upstream`, the
 * network's own payload), project-level webhooks for project-wide events,
 * their rules, pause and resume, and test deliveries. Depends only on ports
 * and other capabilities' services (event plans, definition references).
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { EventPlans } from "../events/EventPlans.ts"
import { Transactor } from "../ports/Transactor.ts"
import { WebhookHttp } from "../ports/WebhookHttp.ts"
import { WebhooksRepo } from "./WebhooksRepo.ts"
import type { Principal } from "../projects/Projects.ts"
import { invalid, type NotFound, notFound, type PaymentRequired, unprocessable, type Unprocessable } from "../shared/ApiError.ts"
import { Ids } from "../shared/Ids.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import { DefinitionReferences } from "../workflows/References.ts"
import { ActiveWebhooks } from "./ActiveWebhooks.ts"
import { WebhookDeliveries } from "./Deliveries.ts"
import {
  checkBufferEvents,
  checkEvents,
  checkHeaders,
  checkRange,
  checkUrlForm,
  privateAddressRefusal
} from "./Rules.ts"
import { WebhookSettings } from "../shared/OutboundSettings.ts"
import {
  BUFFERABLE_EVENT,
  type WebhookFilter,
  type WebhookInput,
  type WebhookRecord,
  type WebhookTestResult,
  type WebhookUpdateInput
} from "./Webhook.ts"

/** Where a request names webhooks: under one number's path, or project-wide (`/msg/webhooks`). */
export type WebhookScope = { readonly phoneNumberId: string } | undefined

const webhookNotFound = (id: string) => notFound("Webhook", id)

export class Webhooks extends Context.Service<Webhooks, {
  readonly list: (
    principal: Principal,
    filter: WebhookFilter,
    window: ListWindow,
    scope?: WebhookScope
  ) => Effect.Effect<ListSlice<WebhookRecord>, NotFound>
  /** 402 when subscribing to `project.event` without project events on the plan; 422 for the rules of 2.9 and 4.6. */
  readonly create: (
    principal: Principal,
    input: WebhookInput,
    scope?: WebhookScope
  ) => Effect.Effect<WebhookRecord, NotFound | PaymentRequired | Unprocessable>
  readonly get: (principal: Principal, id: string, scope?: WebhookScope) => Effect.Effect<WebhookRecord, NotFound>
  /** Any field but `kind`; `active: true` resumes a paused webhook with a fresh failure window. */
  readonly update: (
    principal: Principal,
    id: string,
    input: WebhookUpdateInput,
    scope?: WebhookScope
  ) => Effect.Effect<WebhookRecord, NotFound | PaymentRequired | Unprocessable>
  readonly delete: (principal: Principal, id: string, scope?: WebhookScope) => Effect.Effect<void, NotFound>
  /** Sends a sample of `eventType` (default: the first subscribed event) once, now. */
  readonly test: (
    principal: Principal,
    id: string,
    eventType: string | undefined
  ) => Effect.Effect<WebhookTestResult, NotFound | Unprocessable>
}>()("@parley/core/webhooks/Webhooks") {
  static readonly layer = Layer.effect(
    Webhooks,
    Effect.gen(function*() {
      const repo = yield* WebhooksRepo
      const tx = yield* Transactor
      const ids = yield* Ids
      const plans = yield* EventPlans
      const references = yield* DefinitionReferences
      const http = yield* WebhookHttp
      const settings = yield* WebhookSettings
      const deliveries = yield* WebhookDeliveries
      const active = yield* ActiveWebhooks

      const iso = (ms: number) => new Date(ms).toISOString()

      const numberExists = (projectId: string, phoneNumberId: string) =>
        Effect.map(references.lookup(projectId, "phone_number", phoneNumberId), Option.isSome)

      /** The number of a path: 404 when the project has no such number. */
      const requireNumber = Effect.fnUntraced(function*(projectId: string, scope: WebhookScope) {
        if (scope === undefined) return
        if (!(yield* numberExists(projectId, scope.phoneNumberId))) return yield* notFound("Phone number", scope.phoneNumberId)
      })

      /** A webhook the request may name: in the project, and under the path's number when there is one. */
      const findVisible = Effect.fnUntraced(function*(projectId: string, id: string, scope: WebhookScope) {
        yield* requireNumber(projectId, scope)
        const found = yield* repo.findById(projectId, id)
        if (Option.isNone(found)) return yield* webhookNotFound(id)
        if (scope !== undefined && found.value.phone_number_id !== scope.phoneNumberId) return yield* webhookNotFound(id)
        return found.value
      })

      const checkUrl = Effect.fnUntraced(function*(raw: string) {
        const { hostname, url } = yield* checkUrlForm(raw, settings.allowPrivateUrls)
        if (settings.allowPrivateUrls) return url
        const addresses = yield* http.resolve(hostname).pipe(
          Effect.catch(() => Effect.fail(invalid("url", `host ${hostname} could not be resolved`)))
        )
        yield* privateAddressRefusal(hostname, addresses)
        return url
      })

      /** 402 first (decisions 4.6 and 7.1): the plan is checked before the other rules. */
      const checkPlan = (projectId: string, events: ReadonlyArray<string> | undefined) =>
        events !== undefined && events.includes("project.event") ? plans.requireEvents(projectId) : Effect.void

      /** Every rule of 2.9 and 4.6 on the webhook as it would be stored; the URL only when it changed. */
      const validate = Effect.fnUntraced(function*(next: WebhookRecord, urlChanged: boolean) {
        const numberLevel = next.phone_number_id !== null
        if (next.kind === "upstream") {
          if (!numberLevel) return yield* invalid("phone_number_id", "is required for upstream webhooks", "upstream webhooks belong to a phone number: give phone_number_id")
          if (next.events.length > 0) {
            return yield* invalid("events", "must be empty for upstream webhooks", "upstream webhooks receive every network payload of their number: events must be empty")
          }
          if (next.buffer_enabled) return yield* invalid("buffer_enabled", "must be false for upstream webhooks", "upstream webhooks cannot buffer: buffer_enabled must be false")
        } else if (next.events.length === 0) {
          return yield* invalid("events", "must name at least one event")
        }
        const events = yield* checkEvents(next.events, numberLevel)
        if (next.secret_key.length === 0) return yield* invalid("secret_key", "must not be empty")
        yield* checkHeaders(next.headers)
        yield* checkRange("buffer_window_seconds", next.buffer_window_seconds, 1, 60)
        yield* checkRange("max_buffer_size", next.max_buffer_size, 1, 100)
        yield* checkRange("inactivity_minutes", next.inactivity_minutes, 1, 1440)
        const bufferEvents = yield* checkBufferEvents(next.buffer_events)
        const url = urlChanged ? yield* checkUrl(next.url) : next.url
        return { ...next, events, buffer_events: bufferEvents, url }
      })

      const onDuplicate = (phoneNumberId: string | null) => () =>
        Effect.fail(unprocessable(`Phone number ${phoneNumberId} already has an upstream webhook`))

      const create = Effect.fn("Webhooks.create")(function*(principal: Principal, input: WebhookInput, scope?: WebhookScope) {
        const projectId = principal.project.id
        yield* requireNumber(projectId, scope)
        yield* checkPlan(projectId, input.events)
        const phoneNumberId = scope?.phoneNumberId ?? input.phone_number_id ?? null
        if (scope === undefined && phoneNumberId !== null && !(yield* numberExists(projectId, phoneNumberId))) {
          return yield* unprocessable("Phone number not found")
        }
        const kind = input.kind ?? "ext"
        const now = iso(yield* Clock.currentTimeMillis)
        const webhook = yield* validate({
          id: yield* ids.uuid,
          project_id: projectId,
          phone_number_id: phoneNumberId,
          url: input.url,
          kind,
          events: input.events ?? [],
          secret_key: input.secret_key,
          headers: input.headers ?? {},
          active: input.active ?? true,
          paused_at: null,
          pause_reason: null,
          retry_schedule: input.retry_schedule ?? "standard",
          auto_pause: input.auto_pause ?? false,
          buffer_enabled: input.buffer_enabled ?? false,
          buffer_window_seconds: input.buffer_window_seconds ?? 5,
          max_buffer_size: input.max_buffer_size ?? 50,
          buffer_events: input.buffer_events ?? (kind === "upstream" ? [] : [BUFFERABLE_EVENT]),
          inactivity_minutes: input.inactivity_minutes ?? 60,
          payload_version: input.payload_version ?? "v2",
          failure_window_from: null,
          created_at: now,
          updated_at: now
        }, true)
        yield* tx.withTransaction(repo.insert(webhook)).pipe(Effect.catchTag("Duplicate", onDuplicate(phoneNumberId)))
        // Dispatch answers from what it remembers: from now on it must see this webhook.
        yield* active.forget
        return webhook
      })

      const update = Effect.fn("Webhooks.update")(
        function*(principal: Principal, id: string, input: WebhookUpdateInput, scope?: WebhookScope) {
          const projectId = principal.project.id
          const current = yield* findVisible(projectId, id, scope)
          yield* checkPlan(projectId, input.events)
          if (input.kind !== undefined && input.kind !== null && input.kind !== current.kind) {
            return yield* invalid("kind", "cannot change once a webhook is created")
          }
          const now = iso(yield* Clock.currentTimeMillis)
          const resumed = input.active === true && !current.active
          const next = yield* validate({
            ...current,
            url: input.url ?? current.url,
            events: input.events ?? current.events,
            secret_key: input.secret_key ?? current.secret_key,
            headers: input.headers ?? current.headers,
            active: input.active ?? current.active,
            // Resuming clears the pause and starts a fresh failure window (6.5).
            paused_at: resumed ? null : current.paused_at,
            pause_reason: resumed ? null : current.pause_reason,
            failure_window_from: resumed ? now : current.failure_window_from,
            retry_schedule: input.retry_schedule ?? current.retry_schedule,
            auto_pause: input.auto_pause ?? current.auto_pause,
            buffer_enabled: input.buffer_enabled ?? current.buffer_enabled,
            buffer_window_seconds: input.buffer_window_seconds ?? current.buffer_window_seconds,
            max_buffer_size: input.max_buffer_size ?? current.max_buffer_size,
            buffer_events: input.buffer_events ?? current.buffer_events,
            inactivity_minutes: input.inactivity_minutes ?? current.inactivity_minutes,
            payload_version: input.payload_version ?? current.payload_version,
            updated_at: now
          }, input.url !== undefined && input.url !== current.url)
          const stored = yield* tx.withTransaction(repo.update(next))
          yield* active.forget
          return yield* Option.match(stored, { onNone: () => Effect.fail(webhookNotFound(next.id)), onSome: Effect.succeed })
        }
      )

      const test = Effect.fn("Webhooks.test")(function*(principal: Principal, id: string, eventType: string | undefined) {
        const webhook = yield* findVisible(principal.project.id, id, undefined)
        if (webhook.kind === "upstream") return yield* deliveries.sendTest(webhook, "upstream")
        const event = eventType ?? webhook.events[0]!
        yield* checkEvents([event], webhook.phone_number_id !== null)
        return yield* deliveries.sendTest(webhook, event)
      })

      return Webhooks.of({
        list: Effect.fn("Webhooks.list")(
          function*(principal: Principal, filter: WebhookFilter, window: ListWindow, scope?: WebhookScope) {
            yield* requireNumber(principal.project.id, scope)
            const scoped = scope === undefined ? filter : { ...filter, phone_number_id: scope.phoneNumberId }
            return yield* repo.list(principal.project.id, scoped, window)
          }
        ),
        create,
        get: (principal, id, scope) => findVisible(principal.project.id, id, scope),
        update,
        delete: Effect.fn("Webhooks.delete")(function*(principal: Principal, id: string, scope?: WebhookScope) {
          const webhook = yield* findVisible(principal.project.id, id, scope)
          const deleted = yield* repo.delete(webhook.project_id, webhook.id)
          yield* active.forget
          if (!deleted) return yield* webhookNotFound(id)
        }),
        test
      })
    })
  )
}
