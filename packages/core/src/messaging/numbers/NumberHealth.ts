/**
 * `GET /msg/phone_numbers/<pnid>/health` (decisions 2.16, 4.8): asks the
 * network whether the number can really send, folds the checks into one
 * status, and keeps what the rules need between runs in `NumberHealthRepo`:
 * the answer for 3 minutes (a `test_message_to` run bypasses it), and after
 * access or token refusals a backoff of 5, 15, 30, then 60 minutes during
 * which the last answer comes back with `retry_after`. A run that takes 15
 * seconds answers `error` with a retry hint. State obtained with other
 * credentials is void: a config change clears the cache and a reconnect
 * resets the backoff. A project runs at most 5 checks a second and 60 a
 * minute (decisions 8.1), counted in `RateLimits` across hosts.
 */
import { Clock, Context, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import { createHash } from "node:crypto"
import type { Principal } from "../../projects/Projects.ts"
import { MessageConfigsRepo } from "./MessageConfigsRepo.ts"
import {
  MessagingNetwork,
  type NetworkAccess,
  type NetworkAnswer,
  type NetworkError,
  type NetworkRefused
} from "../../network/MessagingNetwork.ts"
import { NumberHealthRepo } from "./NumberHealthRepo.ts"
import { RateLimits } from "../../ports/RateLimits.ts"
import { type NotFound, notFound, type Unprocessable, unprocessable } from "../../shared/ApiError.ts"
import { MessagingProduct } from "../../network/NetworkObjects.ts"
import { Outbound } from "../Outbound.ts"
import { type CheckWeight, foldStatus, type HealthCheck, type HealthReport, type NumberHealthState } from "./Health.ts"
import type { MessageConfigRecord } from "./MessageConfig.ts"

/** How long an answer is reused (decisions 4.8). */
export const HEALTH_CACHE_MS = 3 * 60 * 1000
/** A run longer than this answers `error` (decisions 4.8). */
export const HEALTH_RUN_LIMIT_MS = 15 * 1000
/** Seconds a caller is told to wait after a run that ran out of time. */
export const HEALTH_TIMEOUT_RETRY_S = 30
/** Holds after the 1st, 2nd, 3rd and every later access or token failure in a row (decisions 4.8). */
export const HEALTH_BACKOFF_MS: ReadonlyArray<number> = [5, 15, 30, 60].map((minutes) => minutes * 60 * 1000)

/** Health checks a project may run (decisions 8.1): per second and per minute, fixed windows shared by the hosts. */
export const HEALTH_LIMIT_PER_SECOND = 5
export const HEALTH_LIMIT_PER_MINUTE = 60

/** What is left of the project's health check windows after an admitted check (the `X-Health-RateLimit-*` headers). */
export interface HealthRateLimit {
  readonly secondLimit: number
  readonly secondRemaining: number
  readonly minuteLimit: number
  readonly minuteRemaining: number
}

/** The project ran out of health checks in a window (decisions 8.1): 429 with `Retry-After`. */
export class HealthRateLimited extends Schema.TaggedError<HealthRateLimited>()("HealthRateLimited", {
  window: Schema.Literals(["second", "minute"]),
  limit: Schema.Number,
  retryAfterSeconds: Schema.Number
}) {
  override get message(): string {
    return `At most ${this.limit} health checks per ${this.window} per project; retry in ${this.retryAfterSeconds} s`
  }
}

/**
 * Refusals about the credentials themselves, the only ones that start the backoff: an invalid or expired token
 * (190), a missing permission (10, 200-299), an object the token may not see (100/33). Rate limits (4, 80007,
 * 130429), payment (131042) and transport failures never do.
 */
export const isAccessRefusal = (error: NetworkRefused): boolean => {
  const { code, error_subcode } = error.error
  return code === 190 || code === 10 || (code >= 200 && code <= 299) || (code === 100 && error_subcode === 33)
}

/** The digest that ties a state to the credentials it was obtained with (the token itself is never stored). */
export const credentialsDigest = (config: MessageConfigRecord): string =>
  createHash("sha256")
    .update(`${config.phone_number_id}\u0000${config.business_account_id}\u0000${Redacted.value(config.access_token)}`)
    .digest("base64url")

/** `test_message_to`: an E.164 number, spaces, dashes and parentheses tolerated (decisions 1.2). */
const testRecipient = (input: string): string | undefined => {
  const digits = input.replace(/[\s\-()]/g, "")
  return /^\+?[1-9]\d{6,14}$/.test(digits) ? digits.replace(/^\+/, "") : undefined
}

interface Outcome<A> {
  readonly value: Option.Option<A>
  readonly error: NetworkError | undefined
}

const outcome = <A>(call: Effect.Effect<NetworkAnswer<A>, NetworkError>): Effect.Effect<Outcome<A>> =>
  call.pipe(
    Effect.map((answer): Outcome<A> => ({ value: Option.some(answer.value), error: undefined })),
    Effect.catch((error: NetworkError) => Effect.succeed<Outcome<A>>({ value: Option.none(), error }))
  )

const reasonOf = (error: NetworkError) => error._tag === "NetworkRefused" ? error.error.message : error.message

const failed = (error: NetworkError): HealthCheck => ({ passed: false, details: {}, error: reasonOf(error) })

/** The connection as 2.16 reports it: `CONNECTED`, `DISCONNECTED` or `UNKNOWN`. */
const connectionOf = (status: string | undefined) =>
  status === "CONNECTED" ? "CONNECTED" : status === "DISCONNECTED" || status === "DELETED" ? "DISCONNECTED" : "UNKNOWN"

interface Run {
  readonly report: HealthReport
  /** An access or token refusal happened: the backoff moves on. */
  readonly accessRefused: boolean
  /** The run could not ask the network at all (`error`): nothing is cached. */
  readonly unreachable: boolean
}

export class NumberHealth extends Context.Service<NumberHealth, {
  /** The number's health, and what is left of the project's health check windows. */
  readonly check: (
    principal: Principal,
    phoneNumberId: string,
    options?: { readonly testMessageTo?: string | undefined }
  ) => Effect.Effect<{ readonly report: HealthReport; readonly rateLimit: HealthRateLimit }, NotFound | Unprocessable | HealthRateLimited>
}>()("@parley/core/messaging/NumberHealth") {
  static readonly layer = Layer.effect(
    NumberHealth,
    Effect.gen(function*() {
      const configs = yield* MessageConfigsRepo
      const network = yield* MessagingNetwork
      const outbound = yield* Outbound
      const repo = yield* NumberHealthRepo
      const rateLimits = yield* RateLimits

      /**
       * Takes one check from the project's second window, then its minute window: a check the second window refuses
       * costs the minute nothing (a minute refusal leaves its second counted, which only matters in that second).
       */
      const admit = (projectId: string, now: number) =>
        Effect.gen(function*() {
          const minuteStart = new Date(now - (now % 60_000)).toISOString()
          // Every window is filed under its minute: a window's first take drops the windows that started before it,
          // which must not be the minute that is still running.
          const second = yield* rateLimits.take(
            `health:s:${projectId}:${Math.floor(now / 1000)}`,
            minuteStart,
            HEALTH_LIMIT_PER_SECOND
          )
          if (!second.admitted) {
            return yield* new HealthRateLimited({ window: "second", limit: HEALTH_LIMIT_PER_SECOND, retryAfterSeconds: 1 })
          }
          const minute = yield* rateLimits.take(`health:m:${projectId}`, minuteStart, HEALTH_LIMIT_PER_MINUTE)
          if (!minute.admitted) {
            return yield* new HealthRateLimited({
              window: "minute",
              limit: HEALTH_LIMIT_PER_MINUTE,
              retryAfterSeconds: Math.max(1, Math.ceil((Date.parse(minuteStart) + 60_000 - now) / 1000))
            })
          }
          return {
            secondLimit: HEALTH_LIMIT_PER_SECOND,
            secondRemaining: HEALTH_LIMIT_PER_SECOND - second.count,
            minuteLimit: HEALTH_LIMIT_PER_MINUTE,
            minuteRemaining: HEALTH_LIMIT_PER_MINUTE - minute.count
          } satisfies HealthRateLimit
        })

      const iso = (ms: number) => new Date(ms).toISOString()

      const runChecks = (config: MessageConfigRecord, testTo: string | undefined, now: number) =>
        Effect.gen(function*() {
          const access: NetworkAccess = { accessToken: config.access_token }
          const [number, health, apps] = yield* Effect.all([
            outcome(network.getPhoneNumber(access, config.phone_number_id)),
            outcome(network.getHealthStatus(access, config.phone_number_id)),
            outcome(network.listSubscribedApps(access, config.business_account_id))
          ], { concurrency: "unbounded" })
          const errors = [number.error, health.error, apps.error].filter((e) => e !== undefined)
          const accessRefused = errors.some((e) => e._tag === "NetworkRefused" && isAccessRefusal(e))
          if (number.error?._tag === "NetworkUnavailable") {
            return {
              report: { status: "error", timestamp: iso(now), error: `The messaging network could not be reached: ${number.error.detail}` },
              accessRefused: false,
              unreachable: true
            } satisfies Run
          }
          const checks: Array<{ readonly name: string; readonly check: HealthCheck; readonly weight: CheckWeight }> = []
          const facts = Option.getOrUndefined(number.value)
          checks.push({
            name: "phone_number_access",
            weight: "critical",
            check: facts === undefined ? failed(number.error!) : {
              passed: true,
              details: {
                id: facts.id,
                verified_name: facts.verified_name ?? null,
                display_phone_number: facts.display_phone_number ?? config.display_phone_number,
                quality_rating: facts.quality_rating ?? "UNKNOWN",
                status: facts.status ?? "UNKNOWN",
                throughput_tier: facts.messaging_limit_tier ?? "TIER_NOT_SET"
              }
            }
          })
          const connection = connectionOf(facts?.status)
          checks.push({
            name: "phone_number_connection",
            weight: "critical",
            check: { passed: connection === "UNKNOWN" ? null : connection === "CONNECTED", details: { status: connection } }
          })
          // Coexistence numbers hold a token of the business app's linking, which can lapse on its own.
          if (facts?.is_on_biz_app ?? config.facts.is_coexistence ?? false) {
            const refusal = [number.error, apps.error].find((e) => e !== undefined)
            checks.push({
              name: "token_validity",
              weight: "critical",
              check: refusal === undefined
                ? { passed: true, details: { valid: true } }
                : { ...failed(refusal), details: { valid: false } }
            })
          }
          const status = Option.getOrUndefined(health.value)?.health_status
          const overall = status?.can_send_message
          checks.push({
            name: "messaging_health",
            weight: overall === "BLOCKED" ? "critical" : "degrading",
            check: status === undefined ? failed(health.error!) : {
              passed: overall === "AVAILABLE",
              details: {
                overall_status: overall,
                can_send_message: overall !== "BLOCKED",
                entities: status.entities.map((entity) => ({
                  entity_type: entity.entity_type,
                  id: entity.id,
                  can_send_message: entity.can_send_message,
                  additional_info: [],
                  errors: (entity.errors ?? []).map((e) => ({
                    error_code: e.error_code,
                    error_description: e.error_description,
                    possible_solution: e.possible_solution ?? null
                  }))
                }))
              }
            }
          })
          const subscription = Option.getOrUndefined(apps.value)?.data[0]
          checks.push({
            name: "webhook_subscription",
            weight: "degrading",
            check: apps.error !== undefined ? failed(apps.error) : {
              passed: subscription !== undefined,
              details: {
                app_id: subscription?.whatsapp_business_api_data.id ?? null,
                subscribed: subscription !== undefined,
                subscribed_fields: subscription?.subscribed_fields ?? []
              }
            }
          })
          checks.push({
            name: "webhook_verified",
            weight: "degrading",
            // Only a number whose own upstream app posts to the service shakes hands; the shared webhook needs none.
            check: {
              passed: config.webhook_verified_at === null ? null : true,
              details: {
                verified_at: config.webhook_verified_at,
                message: config.webhook_verified_at === null
                  ? "No handshake on this number's own webhook path; its events arrive on the service's shared webhook"
                  : "The number's own upstream app completed the webhook handshake"
              }
            }
          })
          if (testTo !== undefined) {
            // Recorded like any send (it shows in the contact's conversation and follows its status reports); a free
            // text, so outside the contact's 24-hour window it is refused and the check fails.
            const sent = yield* outbound.send(config, {
              messaging_product: MessagingProduct,
              to: testTo,
              type: "text",
              text: { body: "Health check from Parley" }
            }, { origin: "api" })
            const refusal = sent._tag === "Accepted"
              ? undefined
              : sent._tag === "Refused"
              ? sent.error.message
              : sent._tag === "Unavailable"
              ? reasonOf(sent.failure)
              : sent._tag === "OutsideWindow"
              ? "The 24-hour window with this contact is closed: a free text cannot be sent"
              : sent._tag === "Withheld"
              ? sent.withheld.message
              : `The media ${sent.mediaId} belongs to another business account`
            checks.push({
              name: "test_message",
              weight: "degrading",
              check: sent._tag === "Accepted"
                ? { passed: true, details: { phone_number: testTo, message_id: Option.getOrNull(Option.map(sent.message, (m) => m.id)) } }
                : { passed: false, details: { phone_number: testTo, message_id: null }, error: refusal! }
            })
          }
          const report: HealthReport = {
            status: foldStatus(checks),
            timestamp: iso(now),
            checks: Object.fromEntries(checks.map(({ check, name }) => [name, check]))
          }
          return { report, accessRefused, unreachable: false } satisfies Run
        })

      const check = Effect.fn("NumberHealth.check")(function*(
        principal: Principal,
        phoneNumberId: string,
        options?: { readonly testMessageTo?: string | undefined }
      ) {
        const now = yield* Clock.currentTimeMillis
        const rateLimit = yield* admit(principal.project.id, now)
        const report = yield* checkNumber(principal, phoneNumberId, now, options)
        return { report, rateLimit }
      })

      const checkNumber = Effect.fnUntraced(function*(
        principal: Principal,
        phoneNumberId: string,
        now: number,
        options?: { readonly testMessageTo?: string | undefined }
      ) {
        const found = yield* configs.findByPhoneNumberId(phoneNumberId)
        if (Option.isNone(found) || found.value.project_id !== principal.project.id) return yield* notFound("Phone number", phoneNumberId)
        const config = found.value
        let testTo: string | undefined
        if (options?.testMessageTo !== undefined) {
          testTo = testRecipient(options.testMessageTo)
          if (testTo === undefined) {
            return yield* unprocessable("test_message_to must be a phone number in E.164 format", [
              { path: "test_message_to", message: "must be a phone number in E.164 format" }
            ])
          }
        }
        const credentials = credentialsDigest(config)
        const stored = Option.filter(yield* repo.get(config.id), (state) => state.credentials === credentials)
        const state: NumberHealthState = Option.getOrElse(stored, () => ({
          msg_config_id: config.id,
          credentials,
          report: null,
          checked_at: null,
          failures: 0,
          held_until: null
        }))
        if (state.held_until !== null && Date.parse(state.held_until) > now) {
          const retryAfter = Math.ceil((Date.parse(state.held_until) - now) / 1000)
          return { ...(state.report ?? { status: "unhealthy", timestamp: iso(now) }), retry_after: retryAfter } satisfies HealthReport
        }
        if (
          testTo === undefined && state.report !== null && state.checked_at !== null &&
          Date.parse(state.checked_at) + HEALTH_CACHE_MS > now
        ) {
          return state.report
        }
        const run = yield* runChecks(config, testTo, now).pipe(
          Effect.timeoutOption(Duration.millis(HEALTH_RUN_LIMIT_MS))
        )
        if (Option.isNone(run)) {
          return {
            status: "error",
            timestamp: iso(now),
            retry_after: HEALTH_TIMEOUT_RETRY_S,
            error: `The health check did not finish within ${HEALTH_RUN_LIMIT_MS / 1000} seconds`
          } satisfies HealthReport
        }
        const { accessRefused, report, unreachable } = run.value
        if (unreachable) return report
        const failures = accessRefused ? state.failures + 1 : 0
        const heldUntil = accessRefused
          ? now + HEALTH_BACKOFF_MS[Math.min(failures, HEALTH_BACKOFF_MS.length) - 1]!
          : null
        // A run with a test send answers its caller only; the cached answer stays that of a plain run.
        const cached = testTo === undefined ? { report, checked_at: iso(now) } : { report: state.report, checked_at: state.checked_at }
        yield* repo.put({ ...state, ...cached, failures, held_until: heldUntil === null ? null : iso(heldUntil) })
        return heldUntil === null ? report : { ...report, retry_after: Math.ceil((heldUntil - now) / 1000) }
      })

      return NumberHealth.of({ check })
    })
  )
}
