/**
 * Registration rules of webhooks (decisions 2.9, 4.6): event names and their
 * scope, custom headers, buffering settings, retry schedules (6.5) and the
 * URL rule, with the canonical 422 messages.
 */
import { Effect } from "effect"
import { invalid } from "../shared/ApiError.ts"
import { isPrivateAddress } from "../shared/PrivateAddress.ts"
import { BUFFERABLE_EVENT, NUMBER_EVENTS, PROJECT_EVENTS, type RetrySchedule } from "./Webhook.ts"

export const MAX_CUSTOM_HEADERS = 20
export const URL_MAX_CHARACTERS = 2048
export const ATTEMPT_TIMEOUT_MS = 10_000
/** A batch goes at the latest this long after its first message (6.4). */
export const BUFFER_CAP_MS = 120_000
/** Auto-pause (6.5): over this window, at least this many finished deliveries, this many failed, more than this share. */
export const PAUSE_WINDOW_MS = 15 * 60_000
export const PAUSE_MIN_DELIVERIES = 20
export const PAUSE_MIN_FAILURES = 10
export const PAUSE_FAILURE_RATE = 0.85
/** Deliveries are kept this long (6.6). */
export const DELIVERY_RETENTION_MS = 30 * 24 * 3_600_000

/** Waits before attempts 2, 3, ... of each schedule (6.5): standard 3 attempts, extended 8. */
export const RETRY_WAITS_MS: Readonly<Record<RetrySchedule, ReadonlyArray<number>>> = {
  standard: [10_000, 40_000],
  extended: [10_000, 40_000, 90_000, 300_000, 1_800_000, 7_200_000, 21_600_000]
}

export const attemptsOf = (schedule: RetrySchedule) => RETRY_WAITS_MS[schedule].length + 1

const numberEvents: ReadonlySet<string> = new Set(NUMBER_EVENTS)
const projectEvents: ReadonlySet<string> = new Set(PROJECT_EVENTS)

/** Whether the event exists in the catalogue and fits a webhook of that scope (number-level or project-level). */
export const checkEvents = (events: ReadonlyArray<string>, numberLevel: boolean) =>
  Effect.gen(function*() {
    for (const name of events) {
      if (!numberEvents.has(name) && !projectEvents.has(name)) {
        return yield* invalid("events", `names an unknown event ${name}`, `Unknown webhook event ${name}`)
      }
      if (numberLevel && !numberEvents.has(name)) {
        return yield* invalid("events", `names the project event ${name}`, `${name} is a project event: phone number webhooks cannot subscribe to it`)
      }
      if (!numberLevel && !projectEvents.has(name)) {
        return yield* invalid("events", `names the phone number event ${name}`, `${name} is a phone number event: subscribe a phone number webhook to it`)
      }
    }
    return [...new Set(events)]
  })

/** Names a webhook may not set: the delivery's own headers, and what the transport controls. */
const reservedHeader = (lower: string) =>
  lower === "content-type" || lower.startsWith("x-webhook-") || lower === "x-idempotency-key" ||
  lower === "x-batch-size" || lower === "content-length" || lower === "transfer-encoding" || lower === "host" ||
  lower === "connection" || lower === "x-hub-signature-256"

const headerName = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
const headerValue = /^[\t\x20-\x7e\x80-\xff]*$/

export const checkHeaders = (headers: Readonly<Record<string, string>>) =>
  Effect.gen(function*() {
    const entries = Object.entries(headers)
    if (entries.length > MAX_CUSTOM_HEADERS) {
      return yield* invalid("headers", `may contain at most ${MAX_CUSTOM_HEADERS} entries`)
    }
    const seen = new Set<string>()
    for (const [name, value] of entries) {
      if (!headerName.test(name)) return yield* invalid(`headers.${name}`, "is not a valid header name", `header ${name} is not a valid header name`)
      const lower = name.toLowerCase()
      if (reservedHeader(lower)) return yield* invalid(`headers.${name}`, "cannot be set on a webhook", `header ${name} cannot be set on a webhook`)
      if (seen.has(lower)) return yield* invalid(`headers.${name}`, "is given twice", `header ${name} is given twice`)
      seen.add(lower)
      if (!headerValue.test(value)) return yield* invalid(`headers.${name}`, "has an invalid value", `header ${name} has an invalid value`)
    }
    return headers
  })

export const checkRange = (name: string, value: number, min: number, max: number) =>
  Number.isSafeInteger(value) && value >= min && value <= max
    ? Effect.succeed(value)
    : Effect.fail(invalid(name, `must be a whole number between ${min} and ${max}`))

export const checkBufferEvents = (events: ReadonlyArray<string>) =>
  events.every((e) => e === BUFFERABLE_EVENT)
    ? Effect.succeed([...new Set(events)])
    : Effect.fail(invalid("buffer_events", `may only contain ${BUFFERABLE_EVENT}`))

/**
 * The URL's form: absolute, https (plain http only when private URLs are
 * allowed, for local development), no credentials. Answers the URL and the
 * host to resolve.
 */
export const checkUrlForm = (raw: string, allowPrivate: boolean) =>
  Effect.gen(function*() {
    if ([...raw].length > URL_MAX_CHARACTERS) {
      return yield* invalid("url", `must be at most ${URL_MAX_CHARACTERS} characters`)
    }
    let url: URL
    try {
      url = new URL(raw)
    } catch {
      return yield* invalid("url", "must be an absolute URL")
    }
    if (url.protocol !== "https:" && !(url.protocol === "http:" && allowPrivate)) {
      return yield* invalid("url", "must use https")
    }
    if (url.username !== "" || url.password !== "") return yield* invalid("url", "must not carry credentials")
    const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname
    // Stored as given: the caller's spelling is what lists show and `url_contains` matches.
    return { url: raw, hostname }
  })

/** Every address must be public: one private address would let DNS answers pick a private target. */
export const privateAddressRefusal = (hostname: string, addresses: ReadonlyArray<string>) =>
  addresses.length === 0 || addresses.some(isPrivateAddress)
    ? Effect.fail(invalid("url", `host ${hostname} resolves to a private, loopback or link-local address`))
    : Effect.void
