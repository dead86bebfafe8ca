/**
 * Entries of the sources log search owns (decisions 4.7): API requests (`apiRequestEntry`, by the host's request
 * log) and upstream webhook changes; workflow step events and webhook delivery attempts are entered by their
 * capabilities (`executions/StepLogEntries.ts`, `webhooks/DeliveryLogEntries.ts`).
 * Secrets never enter an entry: a request is its method, path, status, duration and the API key's id and name
 * (never its value, never a body); step payloads are stored as the step log keeps them (secrets masked, 64 KB);
 * a delivery attempt is its outcome, not the body sent (that stays in the delivery record, 30 days).
 */
import { Predicate, Schema } from "effect"
import { OptionalString } from "../shared/Json.ts"
import type { LogDraft } from "./LogRecorder.ts"

export interface ApiRequestFacts {
  readonly projectId: string
  readonly method: string
  /** The path without its query string (a query value may carry what a log must not). */
  readonly path: string
  readonly status: number
  readonly durationMs: number
  readonly startedAt: string
  readonly requestId: string
  readonly apiKey: { readonly id: string; readonly name: string } | null
  /** The `error` of an error answer. */
  readonly errorMessage: string | null
  /** The caller's address as the connection shows it (`GET /api_logs` answers it as `ip_address`). */
  readonly ip?: string | null | undefined
}

export const apiRequestEntry = (r: ApiRequestFacts): LogDraft => ({
  project_id: r.projectId,
  source: "external_api_log",
  occurred_at: r.startedAt,
  problem: r.status >= 400,
  level: r.status >= 500 ? "error" : r.status >= 400 ? "warning" : "info",
  message: `${r.method} ${r.path} ${r.status}`,
  status: String(r.status),
  http_method: r.method,
  endpoint: r.path,
  response_status: r.status,
  response_time_ms: Math.round(r.durationMs),
  api_key_id: r.apiKey?.id ?? null,
  api_key_name: r.apiKey?.name ?? null,
  error_message: r.errorMessage,
  attributes: { request_id: r.requestId, ...(r.ip != null ? { ip_address: r.ip } : {}) }
})

/** Upstream changes larger than this keep their facts but not their value. */
const MAX_UPSTREAM_PAYLOAD_CHARS = 64 * 1024

export interface UpstreamChangeFacts {
  readonly projectId: string
  readonly receivedAt: string
  readonly inboxId: string
  readonly businessAccountId: string
  readonly field: string
  readonly value: unknown
  readonly phoneNumberId: string
  readonly displayPhoneNumber: string | null
}

const array = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])
/** What an entry names of a change's message, status and first error (strings, empty included; absent otherwise). */
const MessageFacts = Schema.Struct({ type: OptionalString, from: OptionalString, id: OptionalString })
const StatusFacts = Schema.Struct({ status: OptionalString, id: OptionalString, recipient_id: OptionalString })
const ErrorFacts = Schema.Struct({ title: OptionalString, message: OptionalString })
const messageFacts = Schema.decodeUnknownSync(MessageFacts)
const statusFacts = Schema.decodeUnknownSync(StatusFacts)
const errorFacts = Schema.decodeUnknownSync(ErrorFacts)

/**
 * One entry per message and status an upstream `messages` change carries (other fields: one for the change), for
 * one connected number's project. A failed status is a problem.
 */
export const upstreamChangeEntries = (c: UpstreamChangeFacts): ReadonlyArray<LogDraft> => {
  const base = {
    project_id: c.projectId,
    source: "msg_webhook_event",
    occurred_at: c.receivedAt,
    field: c.field,
    phone_number_id: c.phoneNumberId,
    display_phone_number: c.displayPhoneNumber,
    attributes: { inbox_id: c.inboxId, business_account_id: c.businessAccountId }
  } as const
  const value = Predicate.isObject(c.value) ? c.value : {}
  const items: Array<LogDraft> = []
  for (const m of array(value["messages"])) {
    if (!Predicate.isObject(m)) continue
    const facts = messageFacts(m)
    const type = facts.type ?? null
    items.push({
      ...base,
      problem: false,
      message: `message ${type ?? "unknown"} from ${facts.from ?? "unknown"}`,
      event: "message",
      event_type: "message",
      message_type: type,
      resource_type: "message",
      resource_id: facts.id ?? null,
      payload: m
    })
  }
  for (const s of array(value["statuses"])) {
    if (!Predicate.isObject(s)) continue
    const facts = statusFacts(s)
    const status = facts.status ?? null
    const errors = array(s["errors"])
    const first = Predicate.isObject(errors[0]) ? errors[0] : null
    const error = first === null ? null : errorFacts(first)
    const failed = status === "failed" || errors.length > 0
    items.push({
      ...base,
      problem: failed,
      level: failed ? "error" : "info",
      message: `status ${status ?? "unknown"} of ${facts.id ?? "a message"} to ${facts.recipient_id ?? "unknown"}` +
        (error === null ? "" : `: ${error.title ?? error.message ?? "error"}`),
      event: status,
      event_type: status,
      status,
      resource_type: "message",
      resource_id: facts.id ?? null,
      error_class: first === null ? null : String(first["code"] ?? "") || null,
      error_message: error === null ? null : error.message ?? error.title ?? null,
      payload: s
    })
  }
  if (items.length > 0) return items
  const text = JSON.stringify(c.value) ?? "null"
  return [{
    ...base,
    problem: false,
    message: `upstream ${c.field}`,
    event: c.field,
    event_type: c.field,
    payload: text.length <= MAX_UPSTREAM_PAYLOAD_CHARS ? c.value ?? null : null
  }]
}
