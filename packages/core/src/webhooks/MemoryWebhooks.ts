/**
 * Memory implementations of the webhook storage ports (`WebhooksRepo`,
 * `WebhookDeliveriesRepo`, `WebhookBuffersRepo`) over the shared
 * `MemoryStore`, keeping the rules of the Postgres schema (foreign keys to
 * projects, one `upstream` webhook per number, one delivery per webhook and
 * source, timestamps and JSON as the database gives them back); the webhooks
 * storage conformance suite holds both adapters to the same behaviour.
 *
 * Also a scripted `WebhookHttp` (`layerMemoryWebhookHttp`): a receiver in
 * memory that records every request and answers as the test says, on the
 * Clock (a slow answer is an `Effect.sleep`, so the TestClock drives
 * timeouts), with a name table standing in for DNS.
 */
import { Clock, Context, Duration, Effect, Layer, Option, PubSub, Stream } from "effect"
import {
  type WebhookHttpAnswer,
  type WebhookHttpBytes,
  type WebhookHttpCall,
  type WebhookHttpFetch,
  WebhookHttp,
  WebhookHttpError,
  type WebhookHttpRequest,
  type WebhookHttpResponse
} from "../ports/WebhookHttp.ts"
import {
  DELIVERY_TOTAL_CAP,
  type DeliveryExpectation,
  WebhookBuffersRepo,
  WebhookDeliveriesRepo,
  WebhooksRepo
} from "./WebhooksRepo.ts"
import { Duplicate } from "../ports/StorageError.ts"
import type { Project } from "../projects/Project.ts"
import type { CursorKey, ListSlice, ListWindow } from "../shared/Pagination.ts"
import { isPrivateAddress } from "../shared/PrivateAddress.ts"
import type {
  BufferedItem,
  DeliveryFilter,
  WebhookAttemptRecord,
  WebhookBufferRecord,
  WebhookDeliveryRecord,
  WebhookFilter,
  WebhookRecord
} from "./Webhook.ts"
import { MemoryStore, memoryTable, type MemoryTables } from "../ports/MemoryStore.ts"
import { byteOrder, compareKeys, instant, json, nullableTimestamp, timestamp, violation } from "../ports/MemoryRows.ts"

const Projects = memoryTable<Project>("projects")
const Webhooks = memoryTable<WebhookRecord>("webhooks")
const Deliveries = memoryTable<WebhookDeliveryRecord>("webhook_deliveries")
const Attempts = memoryTable<WebhookAttemptRecord & { readonly id: string }>("webhook_delivery_attempts")
const Buffers = memoryTable<WebhookBufferRecord>("webhook_buffers")

const keyOf = (row: { readonly created_at: string; readonly id: string }): CursorKey => ({ sortKey: row.created_at, id: row.id })
const newestFirst = <A extends { readonly created_at: string; readonly id: string }>(rows: ReadonlyArray<A>) =>
  [...rows].sort((a, b) => compareKeys(keyOf(b), keyOf(a)))

/** A window over rows sorted newest first; page totals capped at `cap`. */
const slice = <A extends { readonly created_at: string; readonly id: string }>(
  rows: ReadonlyArray<A>,
  window: ListWindow,
  cap: number
): ListSlice<A> => {
  if (window.mode === "page") {
    const start = (window.page - 1) * window.perPage
    const items = rows.slice(start, start + window.perPage)
    return { items, hasMore: start + items.length < rows.length, total: Math.min(rows.length, cap) }
  }
  const { after, before, limit } = window
  const inRange = rows.filter((row) =>
    (after === undefined || compareKeys(keyOf(row), after) < 0) &&
    (before === undefined || compareKeys(keyOf(row), before) > 0)
  )
  const travel = before !== undefined ? [...inRange].reverse() : inRange
  const page = travel.slice(0, limit)
  return { items: before !== undefined ? page.reverse() : page, hasMore: travel.length > limit, total: 0 }
}

const inProject = (db: MemoryTables, projectId: string, id: string) => {
  const row = db.get(Webhooks, id)
  return row !== undefined && row.project_id === projectId ? row : undefined
}

const requireProject = (db: MemoryTables, projectId: string) => {
  if (db.get(Projects, projectId) === undefined) violation(`no project ${projectId}`)
}

const storedWebhook = (w: WebhookRecord): WebhookRecord => ({
  ...w,
  events: json(w.events),
  headers: json(w.headers),
  buffer_events: json(w.buffer_events),
  paused_at: nullableTimestamp(w.paused_at),
  failure_window_from: nullableTimestamp(w.failure_window_from),
  created_at: timestamp(w.created_at),
  updated_at: timestamp(w.updated_at)
})

const storedDelivery = (d: WebhookDeliveryRecord): WebhookDeliveryRecord => ({
  ...d,
  delivered_at: nullableTimestamp(d.delivered_at),
  failed_at: nullableTimestamp(d.failed_at),
  last_attempt_at: nullableTimestamp(d.last_attempt_at),
  next_attempt_at: nullableTimestamp(d.next_attempt_at),
  created_at: timestamp(d.created_at)
})

const storedBuffer = (b: WebhookBufferRecord): WebhookBufferRecord => ({
  ...b,
  items: json(b.items),
  first_at: timestamp(b.first_at),
  due_at: timestamp(b.due_at)
})

const matchesWebhook = (projectId: string, filter: WebhookFilter) => (w: WebhookRecord) =>
  w.project_id === projectId &&
  (filter.phone_number_id === undefined || w.phone_number_id === filter.phone_number_id) &&
  (filter.url_contains === undefined || w.url.toLowerCase().includes(filter.url_contains.toLowerCase())) &&
  (filter.kind === undefined || w.kind === filter.kind) &&
  (filter.active === undefined || w.active === filter.active) &&
  (filter.created_after === undefined || instant(w.created_at) >= instant(filter.created_after)) &&
  (filter.created_before === undefined || instant(w.created_at) <= instant(filter.created_before))

export const layerMemoryWebhooksRepo = Layer.effect(
  WebhooksRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const changes = yield* PubSub.unbounded<void>()
    const signal = <A>(result: A) => Effect.as(PubSub.publish(changes, undefined), result)
    return WebhooksRepo.of({
      insert: Effect.fn("WebhooksRepo.insert")(function*(webhook: WebhookRecord) {
        const duplicate = yield* store.run((db) => {
          requireProject(db, webhook.project_id)
          if (db.get(Webhooks, webhook.id) !== undefined) violation(`duplicate webhook id ${webhook.id}`)
          if (
            webhook.kind === "upstream" && db.all(Webhooks).some((w) =>
              w.kind === "upstream" && w.project_id === webhook.project_id && w.phone_number_id === webhook.phone_number_id
            )
          ) return true
          db.put(Webhooks, webhook.id, storedWebhook(webhook))
          return false
        })
        if (duplicate) return yield* new Duplicate({ field: "upstream" })
        yield* signal(undefined)
      }),
      findById: Effect.fn("WebhooksRepo.findById")((projectId: string, id: string) =>
        store.run((db) => Option.fromNullishOr(inProject(db, projectId, id)))
      ),
      list: Effect.fn("WebhooksRepo.list")((projectId: string, filter: WebhookFilter, window: ListWindow) =>
        store.run((db) =>
          slice(newestFirst(db.all(Webhooks).filter(matchesWebhook(projectId, filter))), window, Number.MAX_SAFE_INTEGER)
        )
      ),
      update: Effect.fn("WebhooksRepo.update")((webhook: WebhookRecord) =>
        store.run((db) => {
          const current = inProject(db, webhook.project_id, webhook.id)
          if (current === undefined) return Option.none<WebhookRecord>()
          const updated = storedWebhook({
            ...webhook,
            project_id: current.project_id,
            phone_number_id: current.phone_number_id,
            kind: current.kind,
            created_at: current.created_at
          })
          db.put(Webhooks, webhook.id, updated)
          return Option.some(updated)
        }).pipe(Effect.flatMap(signal))
      ),
      delete: Effect.fn("WebhooksRepo.delete")((projectId: string, id: string) =>
        store.run((db) => {
          if (inProject(db, projectId, id) === undefined) return false
          for (const b of db.all(Buffers)) if (b.webhook_id === id) db.remove(Buffers, b.id)
          return db.remove(Webhooks, id)
        }).pipe(Effect.flatMap(signal))
      ),
      listActive: Effect.fn("WebhooksRepo.listActive")((projectId: string, phoneNumberId: string | null) =>
        store.run((db) =>
          newestFirst(
            db.all(Webhooks).filter((w) => w.project_id === projectId && w.phone_number_id === phoneNumberId && w.active)
          ).reverse()
        )
      ),
      pause: Effect.fn("WebhooksRepo.pause")((projectId: string, id: string, at: string, reason: "failure_rate") =>
        store.run((db) => {
          const current = inProject(db, projectId, id)
          if (current === undefined || !current.active) return Option.none<WebhookRecord>()
          const paused = storedWebhook({ ...current, active: false, paused_at: at, pause_reason: reason })
          db.put(Webhooks, id, paused)
          return Option.some(paused)
        }).pipe(Effect.flatMap(signal))
      ),
      changes: Stream.fromPubSub(changes)
    })
  })
)

const matchesDelivery = (projectId: string, filter: DeliveryFilter) => (d: WebhookDeliveryRecord) =>
  d.project_id === projectId &&
  (filter.status === undefined || d.status === filter.status) &&
  (filter.event === undefined || d.event === filter.event) &&
  (filter.webhook_id === undefined || d.webhook_id === filter.webhook_id) &&
  (filter.errors_only !== true || d.status === "failed" || d.error_message !== null) &&
  (filter.created_after === undefined || instant(d.created_at) >= instant(filter.created_after))

const putAttempt = (db: MemoryTables, attempt: WebhookAttemptRecord) => {
  const id = `${attempt.delivery_id}:${attempt.attempt}`
  if (db.get(Attempts, id) !== undefined) violation(`duplicate attempt ${id}`)
  db.put(Attempts, id, { ...attempt, id, attempted_at: timestamp(attempt.attempted_at) })
}

const finishedAt = (d: WebhookDeliveryRecord) =>
  d.status === "delivered" ? d.delivered_at : d.status === "failed" ? d.failed_at : null

export const layerMemoryWebhookDeliveriesRepo = Layer.effect(
  WebhookDeliveriesRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    return WebhookDeliveriesRepo.of({
      insert: Effect.fn("WebhookDeliveriesRepo.insert")((delivery: WebhookDeliveryRecord, attempt?: WebhookAttemptRecord) =>
        store.run((db) => {
          requireProject(db, delivery.project_id)
          if (db.get(Deliveries, delivery.id) !== undefined) violation(`duplicate delivery id ${delivery.id}`)
          if (delivery.source_key !== null) {
            const existing = db.all(Deliveries).find((d) =>
              d.webhook_id === delivery.webhook_id && d.source_key === delivery.source_key
            )
            if (existing !== undefined) return { delivery: existing, created: false }
          }
          const stored = storedDelivery(delivery)
          db.put(Deliveries, delivery.id, stored)
          if (attempt !== undefined) putAttempt(db, attempt)
          return { delivery: stored, created: true }
        })
      ),
      findById: Effect.fn("WebhookDeliveriesRepo.findById")((projectId: string, id: string) =>
        store.run((db) => Option.filter(Option.fromNullishOr(db.get(Deliveries, id)), (d) => d.project_id === projectId))
      ),
      findWithWebhook: Effect.fn("WebhookDeliveriesRepo.findWithWebhook")((projectId: string, id: string) =>
        store.run((db) =>
          Option.map(
            Option.filter(Option.fromNullishOr(db.get(Deliveries, id)), (d) => d.project_id === projectId),
            (delivery) => ({ delivery, webhook: Option.fromNullishOr(inProject(db, projectId, delivery.webhook_id)) })
          )
        )
      ),
      list: Effect.fn("WebhookDeliveriesRepo.list")((projectId: string, filter: DeliveryFilter, window: ListWindow) =>
        store.run((db) => slice(newestFirst(db.all(Deliveries).filter(matchesDelivery(projectId, filter))), window, DELIVERY_TOTAL_CAP))
      ),
      update: Effect.fn("WebhookDeliveriesRepo.update")(
        (next: WebhookDeliveryRecord, expected: DeliveryExpectation, attempt?: WebhookAttemptRecord) =>
          store.run((db) => {
            const current = db.get(Deliveries, next.id)
            if (
              current === undefined || current.status !== expected.status ||
              current.attempt_count !== expected.attempt_count
            ) return false
            if (attempt !== undefined) putAttempt(db, attempt)
            db.put(Deliveries, next.id, storedDelivery({
              ...current,
              status: next.status,
              response_status: next.response_status,
              delivered_at: next.delivered_at,
              failed_at: next.failed_at,
              last_attempt_at: next.last_attempt_at,
              next_attempt_at: next.next_attempt_at,
              attempt_count: next.attempt_count,
              max_attempts: next.max_attempts,
              error_message: next.error_message,
              webhook_url: next.webhook_url
            }))
            return true
          })
      ),
      attempts: Effect.fn("WebhookDeliveriesRepo.attempts")((deliveryId: string) =>
        store.run((db) =>
          db.all(Attempts)
            .filter((a) => a.delivery_id === deliveryId)
            .sort((a, b) => a.attempt - b.attempt)
            .map(({ id: _, ...attempt }) => attempt)
        )
      ),
      finishedSince: Effect.fn("WebhookDeliveriesRepo.finishedSince")((webhookId: string, since: string) =>
        store.run((db) => {
          let total = 0
          let failed = 0
          for (const d of db.all(Deliveries)) {
            const at = finishedAt(d)
            if (d.webhook_id !== webhookId || d.test || at === null || instant(at) < instant(since)) continue
            total++
            if (d.status === "failed") failed++
          }
          return { total, failed }
        })
      ),
      listStalled: Effect.fn("WebhookDeliveriesRepo.listStalled")((before: string, limit: number) =>
        store.run((db) =>
          db.all(Deliveries)
            .filter((d) =>
              d.status === "pending" && !d.test && d.next_attempt_at !== null &&
              instant(d.next_attempt_at) < instant(before)
            )
            .sort((a, b) => instant(a.next_attempt_at!) - instant(b.next_attempt_at!) || byteOrder(a.id, b.id))
            .slice(0, limit)
        )
      ),
      prune: Effect.fn("WebhookDeliveriesRepo.prune")((before: string, limit: number) =>
        store.run((db) => {
          let removed = 0
          for (const d of db.all(Deliveries)) {
            if (removed >= limit) break
            if (instant(d.created_at) >= instant(before)) continue
            for (const a of db.all(Attempts)) if (a.delivery_id === d.id) db.remove(Attempts, a.id)
            db.remove(Deliveries, d.id)
            removed++
          }
          return removed
        })
      )
    })
  })
)

export const layerMemoryWebhookBuffersRepo = Layer.effect(
  WebhookBuffersRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    return WebhookBuffersRepo.of({
      append: Effect.fn("WebhookBuffersRepo.append")((open: WebhookBufferRecord, item: BufferedItem, capMs: number) =>
        store.run((db) => {
          const current = db.all(Buffers).find((b) =>
            b.webhook_id === open.webhook_id && b.conversation_key === open.conversation_key
          )
          if (current === undefined) {
            requireProject(db, open.project_id)
            const webhook = db.get(Webhooks, open.webhook_id)
            if (webhook === undefined) violation(`no webhook ${open.webhook_id}`)
            const stored = storedBuffer(open)
            db.put(Buffers, open.id, stored)
            return { buffer: stored, opened: true }
          }
          const due = Math.min(instant(open.due_at), instant(current.first_at) + capMs)
          const updated = storedBuffer({ ...current, items: [...current.items, item], due_at: new Date(due).toISOString() })
          db.put(Buffers, current.id, updated)
          return { buffer: updated, opened: false }
        })
      ),
      find: Effect.fn("WebhookBuffersRepo.find")((id: string) =>
        store.run((db) => Option.fromNullishOr(db.get(Buffers, id)))
      ),
      listOverdue: Effect.fn("WebhookBuffersRepo.listOverdue")((before: string, limit: number) =>
        store.run((db) =>
          db.all(Buffers)
            .filter((b) => instant(b.due_at) < instant(before))
            .sort((a, b) => instant(a.due_at) - instant(b.due_at) || byteOrder(a.id, b.id))
            .slice(0, limit)
        )
      ),
      take: Effect.fn("WebhookBuffersRepo.take")((id: string, now: string | null) =>
        store.run((db) => {
          const buffer = db.get(Buffers, id)
          if (buffer === undefined || (now !== null && instant(buffer.due_at) > instant(now))) {
            return Option.none<WebhookBufferRecord>()
          }
          db.remove(Buffers, id)
          return Option.some(buffer)
        })
      )
    })
  })
)

/** Every webhook storage port in memory, over the `MemoryStore` in context. */
export const layerMemoryWebhooksStorage = Layer.mergeAll(
  layerMemoryWebhooksRepo,
  layerMemoryWebhookDeliveriesRepo,
  layerMemoryWebhookBuffersRepo
)

// ---------------------------------------------------------------------------------------------
// A scripted receiver

export interface ReceivedWebhookRequest {
  readonly method: string
  readonly url: string
  /** Header names in lowercase. */
  readonly headers: Readonly<Record<string, string>>
  readonly body: Uint8Array
  /** Clock time the request arrived. */
  readonly at: number
}

/**
 * A scripted answer: `headers` (any case) reach `request` and `fetch` callers; `post` callers see status and body;
 * `bytes`, when given, is the body `fetch` callers get (else `body` as UTF-8).
 */
export type WebhookResponder = (
  request: ReceivedWebhookRequest
) => Effect.Effect<
  WebhookHttpResponse & {
    readonly headers?: Readonly<Record<string, string>> | undefined
    readonly bytes?: Uint8Array | undefined
  },
  WebhookHttpError
>

/** Where test deliveries land: what arrived, and how to answer the next ones. */
export class MemoryWebhookReceiver extends Context.Service<MemoryWebhookReceiver, {
  /** Every request that reached the receiver, in arrival order (a live view). */
  readonly requests: ReadonlyArray<ReceivedWebhookRequest>
  /** Answers every later request this way; the default answers 200 with an empty body. */
  readonly respondWith: (responder: WebhookResponder) => void
  /** What a name resolves to; names not set resolve to a public address, `localhost` to 127.0.0.1. */
  readonly setAddresses: (hostname: string, addresses: ReadonlyArray<string>) => void
}>()("@parley/core/testing/MemoryWebhookReceiver") {}

const PUBLIC_ADDRESS = "93.184.215.14"

/** A `WebhookHttp` that delivers to a `MemoryWebhookReceiver` (also provided). */
export const layerMemoryWebhookHttp: Layer.Layer<WebhookHttp | MemoryWebhookReceiver> = Layer.effectContext(
  Effect.sync(() => {
    const requests: Array<ReceivedWebhookRequest> = []
    const names = new Map<string, ReadonlyArray<string>>([["localhost", ["127.0.0.1"]]])
    let responder: WebhookResponder = () => Effect.succeed({ status: 200, body: "" })

    const resolve = (hostname: string) => {
      const bare = hostname.startsWith("[") ? hostname.slice(1, -1) : hostname
      if (/^[\d.]+$/.test(bare) || bare.includes(":")) return Effect.succeed([bare])
      const addresses = names.get(bare.toLowerCase()) ?? [PUBLIC_ADDRESS]
      return addresses.length === 0
        ? Effect.fail(new WebhookHttpError({ reason: "dns", message: `getaddrinfo ENOTFOUND ${bare}` }))
        : Effect.succeed(addresses)
    }

    const exchange = (call: {
      readonly method: string
      readonly url: string
      readonly headers: Readonly<Record<string, string>>
      readonly body: Uint8Array
      readonly timeoutMs: number
      readonly allowPrivate: boolean
    }) =>
      Effect.gen(function*() {
        let url: URL
        try {
          url = new URL(call.url)
        } catch {
          return yield* new WebhookHttpError({ reason: "invalid_url", message: `Invalid URL ${call.url}` })
        }
        if (url.protocol !== "https:" && url.protocol !== "http:") {
          return yield* new WebhookHttpError({ reason: "invalid_url", message: `Unsupported URL scheme ${url.protocol}` })
        }
        const addresses = yield* resolve(url.hostname)
        if (!call.allowPrivate && addresses.some(isPrivateAddress)) {
          return yield* new WebhookHttpError({
            reason: "private_address",
            message: `${url.hostname} resolves to a private address`
          })
        }
        const received: ReceivedWebhookRequest = {
          method: call.method,
          url: call.url,
          headers: Object.fromEntries(Object.entries(call.headers).map(([k, v]) => [k.toLowerCase(), v])),
          body: new Uint8Array(call.body),
          at: yield* Clock.currentTimeMillis
        }
        requests.push(received)
        return yield* responder(received).pipe(
          Effect.timeoutOrElse({
            duration: Duration.millis(call.timeoutMs),
            orElse: () =>
              Effect.fail(new WebhookHttpError({ reason: "timeout", message: `Timed out after ${call.timeoutMs / 1000} s` }))
          })
        )
      })

    const post = (request: WebhookHttpRequest) =>
      Effect.map(exchange({ ...request, method: "POST" }), ({ body, status }): WebhookHttpResponse => ({ status, body }))

    const request = (call: WebhookHttpCall) =>
      Effect.map(exchange({ ...call, body: call.body ?? new Uint8Array() }), (answer): WebhookHttpAnswer => {
        const bytes = Buffer.from(answer.body, "utf8")
        const truncated = bytes.byteLength > call.maxBodyBytes
        return {
          status: answer.status,
          headers: Object.fromEntries(Object.entries(answer.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v])),
          body: truncated ? bytes.subarray(0, call.maxBodyBytes).toString("utf8") : answer.body,
          truncated
        }
      })

    const fetch = (call: WebhookHttpFetch) =>
      Effect.map(exchange({ ...call, method: "GET", headers: {}, body: new Uint8Array() }), (answer): WebhookHttpBytes => {
        const bytes = answer.bytes ?? new Uint8Array(Buffer.from(answer.body, "utf8"))
        const headers = Object.fromEntries(Object.entries(answer.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]))
        const cap = typeof call.maxBodyBytes === "number" ? call.maxBodyBytes : call.maxBodyBytes(headers)
        return { status: answer.status, headers, body: bytes.subarray(0, cap), truncated: bytes.byteLength > cap }
      })

    const receiver = MemoryWebhookReceiver.of({
      requests,
      respondWith: (next) => {
        responder = next
      },
      setAddresses: (hostname, addresses) => void names.set(hostname.toLowerCase(), addresses)
    })
    return Context.make(MemoryWebhookReceiver, receiver).pipe(
      Context.add(WebhookHttp, WebhookHttp.of({ post, request, fetch, resolve }))
    )
  })
)
