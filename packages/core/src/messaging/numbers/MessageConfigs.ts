/**
 * Connected numbers (decisions 2.11, 2.12, 4.8): manual connection with
 * credentials verified against the network before anything is stored,
 * updates through the older surface, the Platform listing with the network's
 * facts (refreshed on connection, on upstream quality webhooks, and in the
 * background when read more than 15 minutes after the last refresh),
 * disconnection (releasing a number the service provisioned), and the
 * simulated number a host connects at start.
 *
 * Credentials stay `Redacted` from the request to the store and are never
 * answered or logged.
 */
import { Clock, Context, Effect, Layer, Option, Redacted } from "effect"
import type { Principal } from "../../projects/Projects.ts"
import { MSG_PHONE_NUMBER_DELETED, phoneNumberEventPayload } from "../DomainEvents.ts"
import { NUMBER_REFRESH_QUEUE } from "../Queues.ts"
import { UpstreamSettings } from "../Upstream.ts"
import { JobQueue } from "../../ports/JobQueue.ts"
import { MessageConfigsRepo } from "./MessageConfigsRepo.ts"
import { LiveNumbers } from "./LiveNumbers.ts"
import { MessagingNetwork, type NetworkAccess, type NetworkError } from "../../network/MessagingNetwork.ts"
import { Outbox } from "../../ports/Outbox.ts"
import { Transactor } from "../../ports/Transactor.ts"
import { NumberDependents } from "./NumberDependents.ts"
import { BadGateway, type NotFound, notFound, type Unprocessable, unprocessable } from "../../shared/ApiError.ts"
import { Ids } from "../../shared/Ids.ts"
import { Customers } from "../../tenancy/Customers.ts"
import type { ListSlice, ListWindow } from "../../shared/Pagination.ts"
import {
  emptyFacts,
  factsFrom,
  type MessageConfigCreateInput,
  type MessageConfigFilter,
  type MessageConfigRecord,
  type MessageConfigUpdateInput,
  phoneDigits,
  secretOf
} from "./MessageConfig.ts"

/** Facts older than this are refreshed in the background when read (decisions 2.11). */
export const FACTS_MAX_AGE_MS = 15 * 60 * 1000

const upstreamUnreachable = () =>
  new BadGateway({ error: "The messaging network could not be reached", code: "upstream_unavailable" })

const configNotFound = (id: string) => notFound("Phone number", id)

/** What the network says about credentials: 422 naming its refusal, 502 when it did not answer. */
const verificationFailure = (error: NetworkError) =>
  error._tag === "NetworkRefused"
    ? unprocessable(`The network refused the credentials: ${error.error.message}`, [
      { path: "msg_config", message: error.error.message }
    ])
    : upstreamUnreachable()

const checkDestination = (url: string | null | undefined) =>
  url === undefined || url === null || url.trim() === "" ||
    (URL.canParse(url) && ["http:", "https:"].includes(new URL(url).protocol))
    ? Effect.void
    : Effect.fail(unprocessable("msg_config.webhook_destination_url must be an http(s) URL", [
      { path: "msg_config.webhook_destination_url", message: "must be an http(s) URL" }
    ]))

const nameOr = (given: string | null | undefined, fallback: string) =>
  given !== undefined && given !== null && given.trim() !== "" ? given.trim() : fallback

/** A provisioned number without messages this long is released (spec Limits). */
export const IDLE_RELEASE_MS = 30 * 24 * 60 * 60 * 1000

export class MessageConfigs extends Context.Service<MessageConfigs, {
  /** Manual connection (`POST /msg/phone_numbers`): 422 when the network refuses the credentials or the number is taken. */
  readonly connect: (principal: Principal, input: MessageConfigCreateInput) => Effect.Effect<MessageConfigRecord, Unprocessable | BadGateway>
  /** Manual connection of a number to one of the project's customers (`POST /customers/<id>/msg/phone_numbers`). */
  readonly connectToCustomer: (
    principal: Principal,
    customerId: string,
    input: MessageConfigCreateInput
  ) => Effect.Effect<MessageConfigRecord, NotFound | Unprocessable | BadGateway>
  /** `PATCH /api/v1/msg_configs/<id>`; changed credentials are verified again. */
  readonly update: (
    principal: Principal,
    id: string,
    input: MessageConfigUpdateInput
  ) => Effect.Effect<MessageConfigRecord, NotFound | Unprocessable | BadGateway>
  readonly list: (
    principal: Principal,
    filter: MessageConfigFilter,
    window: ListWindow
  ) => Effect.Effect<ListSlice<MessageConfigRecord>>
  /** By network number id. */
  readonly get: (principal: Principal, phoneNumberId: string) => Effect.Effect<MessageConfigRecord, NotFound>
  /** Disconnects: history kept, webhooks and triggers on the number removed, `msg.phone_number.deleted` written. */
  readonly disconnect: (principal: Principal, phoneNumberId: string) => Effect.Effect<MessageConfigRecord, NotFound>
  /**
   * The free number release (spec Limits): disconnects, and so releases, every number the service provisioned that
   * has had no message in either direction for 30 days (at most 100 a call); answers how many.
   */
  readonly releaseIdle: Effect.Effect<number>
  /**
   * In simulator mode, connects the simulated number to the project as a
   * production config, or refreshes its credentials when it is already
   * connected (idempotent across restarts). None in cloud mode, or when
   * another project holds the number.
   */
  readonly bootstrap: (projectId: string) => Effect.Effect<Option.Option<MessageConfigRecord>>
  /** Reads the number's facts from the network again; on failure the config is answered unchanged. */
  readonly refreshFacts: (config: MessageConfigRecord) => Effect.Effect<MessageConfigRecord>
}>()("@parley/core/messaging/MessageConfigs") {
  static readonly layer = Layer.effect(
    MessageConfigs,
    Effect.gen(function*() {
      const repo = (yield* LiveNumbers).forgetting(yield* MessageConfigsRepo)
      const customers = yield* Customers
      const dependents = yield* NumberDependents
      const network = yield* MessagingNetwork
      const settings = yield* UpstreamSettings
      const outbox = yield* Outbox
      const jobs = yield* JobQueue
      const tx = yield* Transactor
      const ids = yield* Ids

      const iso = (ms: number) => new Date(ms).toISOString()

      /** The number's facts if the token may act for the number and its business account. */
      const verify = (access: NetworkAccess, phoneNumberId: string, businessAccountId: string) =>
        Effect.gen(function*() {
          const facts = yield* network.getPhoneNumber(access, phoneNumberId)
          yield* network.listSubscribedApps(access, businessAccountId)
          return facts.value
        }).pipe(Effect.mapError(verificationFailure))

      /** Makes sure the account's webhooks reach an app; a refusal is only logged (the number still works for sends). */
      const subscribe = (config: MessageConfigRecord) =>
        network.subscribeApp({ accessToken: config.access_token }, config.business_account_id).pipe(
          Effect.asVoid,
          Effect.catchCause((cause) =>
            Effect.logWarning("Could not subscribe the upstream app to the account's webhooks", cause).pipe(
              Effect.annotateLogs({ msg_config_id: config.id, business_account_id: config.business_account_id })
            )
          )
        )

      const connectVerified = Effect.fnUntraced(function*(
        projectId: string,
        input: MessageConfigCreateInput,
        customerId: string | null
      ) {
        const phoneNumberId = input.phone_number_id.trim()
        const businessAccountId = input.business_account_id.trim()
        if (phoneNumberId === "" || businessAccountId === "" || input.access_token.trim() === "") {
          return yield* unprocessable("msg_config.phone_number_id, business_account_id and access_token are required")
        }
        yield* checkDestination(input.webhook_destination_url)
        if (Option.isSome(yield* repo.findByPhoneNumberId(phoneNumberId))) {
          return yield* unprocessable(`Phone number ${phoneNumberId} is already connected`)
        }
        const accessToken = Redacted.make(input.access_token)
        const answer = yield* verify({ accessToken }, phoneNumberId, businessAccountId)
        const now = iso(yield* Clock.currentTimeMillis)
        const facts = factsFrom(emptyFacts, answer)
        const display = answer.display_phone_number ?? phoneNumberId
        const config: MessageConfigRecord = {
          id: yield* ids.uuid,
          project_id: projectId,
          name: nameOr(input.name, facts.verified_name ?? display),
          display_name: facts.verified_name ?? display,
          kind: input.kind ?? "production",
          phone_number_id: phoneNumberId,
          business_account_id: businessAccountId,
          display_phone_number: display,
          display_phone_number_normalized: phoneDigits(display),
          customer_id: customerId,
          inbound_processing_enabled: input.inbound_processing_enabled ?? true,
          access_token: accessToken,
          webhook_verify_token: secretOf(input.webhook_verify_token),
          app_secret: secretOf(input.app_secret),
          webhook_destination_url: secretOf(input.webhook_destination_url),
          facts,
          refreshed_at: now,
          webhook_verified_at: null,
          provisioned: false,
          deleted_at: null,
          created_at: now,
          updated_at: now
        }
        // Manual connections write no domain event (decisions 6.1: `msg.phone_number.created` is for setup links).
        yield* repo.insert(config).pipe(
          Effect.catchTag("Duplicate", () => Effect.fail(unprocessable(`Phone number ${phoneNumberId} is already connected`)))
        )
        yield* subscribe(config)
        return config
      })

      const connect = Effect.fn("MessageConfigs.connect")(function*(principal: Principal, input: MessageConfigCreateInput) {
        return yield* connectVerified(principal.project.id, input, null)
      })

      const connectToCustomer = Effect.fn("MessageConfigs.connectToCustomer")(function*(
        principal: Principal,
        customerId: string,
        input: MessageConfigCreateInput
      ) {
        const customer = yield* customers.get(principal, customerId)
        return yield* connectVerified(principal.project.id, input, customer.id)
      })

      const findOwned = (projectId: string, id: string) =>
        repo.findById(projectId, id).pipe(
          Effect.flatMap(Option.match({ onNone: () => Effect.fail(configNotFound(id)), onSome: Effect.succeed }))
        )

      const findByNumber = (projectId: string, phoneNumberId: string) =>
        repo.findByPhoneNumberId(phoneNumberId).pipe(
          Effect.flatMap((found) =>
            Option.isSome(found) && found.value.project_id === projectId
              ? Effect.succeed(found.value)
              : Effect.fail(configNotFound(phoneNumberId))
          )
        )

      const update = Effect.fn("MessageConfigs.update")(
        function*(principal: Principal, id: string, input: MessageConfigUpdateInput) {
          const current = yield* findOwned(principal.project.id, id)
          yield* checkDestination(input.webhook_destination_url)
          const phoneNumberId = input.phone_number_id?.trim() ?? current.phone_number_id
          const businessAccountId = input.business_account_id?.trim() ?? current.business_account_id
          const accessToken = input.access_token !== undefined ? Redacted.make(input.access_token) : current.access_token
          const credentialsChanged = phoneNumberId !== current.phone_number_id ||
            businessAccountId !== current.business_account_id ||
            (input.access_token !== undefined && input.access_token !== Redacted.value(current.access_token))
          const now = iso(yield* Clock.currentTimeMillis)
          let facts = current.facts
          let display = current.display_phone_number
          let refreshedAt = current.refreshed_at
          if (credentialsChanged) {
            if (phoneNumberId !== current.phone_number_id) {
              const holder = yield* repo.findByPhoneNumberId(phoneNumberId)
              if (Option.isSome(holder) && holder.value.id !== current.id) {
                return yield* unprocessable(`Phone number ${phoneNumberId} is already connected`)
              }
            }
            const answer = yield* verify({ accessToken }, phoneNumberId, businessAccountId)
            facts = factsFrom(phoneNumberId === current.phone_number_id ? current.facts : emptyFacts, answer)
            display = answer.display_phone_number ?? (phoneNumberId === current.phone_number_id ? display : phoneNumberId)
            refreshedAt = now
          }
          const next: MessageConfigRecord = {
            ...current,
            name: input.name === undefined ? current.name : nameOr(input.name, facts.verified_name ?? display),
            display_name: facts.verified_name ?? display,
            kind: input.kind ?? current.kind,
            phone_number_id: phoneNumberId,
            business_account_id: businessAccountId,
            display_phone_number: display,
            display_phone_number_normalized: phoneDigits(display),
            inbound_processing_enabled: input.inbound_processing_enabled ?? current.inbound_processing_enabled,
            access_token: accessToken,
            webhook_verify_token: input.webhook_verify_token === undefined
              ? current.webhook_verify_token
              : secretOf(input.webhook_verify_token),
            app_secret: input.app_secret === undefined ? current.app_secret : secretOf(input.app_secret),
            webhook_destination_url: input.webhook_destination_url === undefined
              ? current.webhook_destination_url
              : secretOf(input.webhook_destination_url),
            facts,
            refreshed_at: refreshedAt,
            // A new number or account has not shaken hands yet.
            webhook_verified_at: credentialsChanged && phoneNumberId !== current.phone_number_id
              ? null
              : current.webhook_verified_at,
            updated_at: now
          }
          const stored = yield* repo.update(next).pipe(
            Effect.catchTag("Duplicate", () => Effect.fail(unprocessable(`Phone number ${phoneNumberId} is already connected`)))
          )
          if (Option.isNone(stored)) return yield* configNotFound(next.id)
          if (credentialsChanged) yield* subscribe(stored.value)
          return stored.value
        }
      )

      /** Asks for a background refresh of facts older than 15 minutes (one job per config at a time). */
      const refreshIfStale = (configs: ReadonlyArray<MessageConfigRecord>) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          for (const config of configs) {
            if (config.refreshed_at !== null && Date.parse(config.refreshed_at) + FACTS_MAX_AGE_MS > now) continue
            yield* jobs.enqueue(NUMBER_REFRESH_QUEUE, { msg_config_id: config.id }, { dedupeKey: `refresh:${config.id}` }).pipe(
              Effect.catchCause((cause) => Effect.logWarning("Could not queue a number refresh", cause))
            )
          }
        })

      const list = Effect.fn("MessageConfigs.list")(
        function*(principal: Principal, filter: MessageConfigFilter, window: ListWindow) {
          const slice = yield* repo.list(principal.project.id, filter, window)
          yield* refreshIfStale(slice.items)
          return slice
        }
      )

      const get = Effect.fn("MessageConfigs.get")(function*(principal: Principal, phoneNumberId: string) {
        const config = yield* findByNumber(principal.project.id, phoneNumberId)
        yield* refreshIfStale([config])
        return config
      })

      /**
       * A number the service provisioned goes back to the network when disconnected (the free number release,
       * spec Limits), after the disconnection committed: a refusal is logged, the number is no longer the project's.
       */
      const release = (config: MessageConfigRecord) =>
        config.provisioned
          ? network.releaseNumber({ accessToken: config.access_token }, config.phone_number_id).pipe(
            Effect.asVoid,
            Effect.catchCause((cause) =>
              Effect.logWarning("Could not release a provisioned number to the network", cause).pipe(
                Effect.annotateLogs({ msg_config_id: config.id, phone_number_id: config.phone_number_id })
              )
            )
          )
          : Effect.void

      const disconnectIn = Effect.fnUntraced(function*(projectId: string, phoneNumberId: string) {
        const now = iso(yield* Clock.currentTimeMillis)
        const eventId = yield* ids.uuid
        const disconnected = yield* tx.withTransaction(Effect.gen(function*() {
          const current = yield* findByNumber(projectId, phoneNumberId)
          const deleted = yield* repo.markDeleted(projectId, current.id, now)
          if (Option.isNone(deleted)) return yield* configNotFound(current.id)
          // Webhooks and triggers on the number go with it (decisions 4.8): a number connected again starts bare.
          yield* dependents.removeFor(projectId, phoneNumberId)
          yield* outbox.append({
            id: eventId,
            project_id: projectId,
            type: MSG_PHONE_NUMBER_DELETED,
            payload: phoneNumberEventPayload(deleted.value),
            created_at: now
          })
          return deleted.value
        }))
        yield* release(disconnected)
        return disconnected
      })

      const disconnect = Effect.fn("MessageConfigs.disconnect")((principal: Principal, phoneNumberId: string) =>
        disconnectIn(principal.project.id, phoneNumberId)
      )

      const releaseIdle = Effect.gen(function*() {
        const before = iso((yield* Clock.currentTimeMillis) - IDLE_RELEASE_MS)
        let released = 0
        for (const config of yield* repo.listIdleProvisioned(before, 100)) {
          // One number's failure (disconnected meanwhile, say) does not hold back the others.
          const done = yield* Effect.result(disconnectIn(config.project_id, config.phone_number_id))
          if (done._tag === "Failure") continue
          released++
          yield* Effect.logInfo("Released an idle provisioned number").pipe(
            Effect.annotateLogs({ msg_config_id: config.id, phone_number_id: config.phone_number_id })
          )
        }
        return released
      }).pipe(Effect.withSpan("MessageConfigs.releaseIdle"))

      const refreshFacts = Effect.fn("MessageConfigs.refreshFacts")(function*(config: MessageConfigRecord) {
        const answer = yield* network.getPhoneNumber({ accessToken: config.access_token }, config.phone_number_id).pipe(
          Effect.map(Option.some),
          Effect.catchCause((cause) =>
            Effect.as(
              Effect.logWarning("Could not refresh a number's facts", cause).pipe(
                Effect.annotateLogs({ msg_config_id: config.id })
              ),
              Option.none()
            )
          )
        )
        if (Option.isNone(answer)) return config
        const facts = factsFrom(config.facts, answer.value.value)
        const now = iso(yield* Clock.currentTimeMillis)
        const display = answer.value.value.display_phone_number ?? config.display_phone_number
        const stored = yield* repo.update({
          ...config,
          facts,
          display_name: facts.verified_name ?? display,
          display_phone_number: display,
          display_phone_number_normalized: phoneDigits(display),
          refreshed_at: now,
          updated_at: now
        }).pipe(Effect.orDie)
        return Option.getOrElse(stored, () => config)
      })

      const bootstrap = Effect.fn("MessageConfigs.bootstrap")(function*(projectId: string) {
        if (Option.isNone(settings.simulatedNumber)) return Option.none<MessageConfigRecord>()
        const number = settings.simulatedNumber.value
        const existing = yield* repo.findByPhoneNumberId(number.phoneNumberId)
        if (Option.isSome(existing)) {
          const current = existing.value
          if (current.project_id !== projectId) {
            yield* Effect.logInfo("The simulated number is connected to another project; left there").pipe(
              Effect.annotateLogs({ phone_number_id: number.phoneNumberId, project_id: current.project_id })
            )
            return Option.none<MessageConfigRecord>()
          }
          if (Redacted.value(current.access_token) === Redacted.value(number.accessToken) &&
            current.business_account_id === number.businessAccountId) {
            return Option.some(yield* refreshFacts(current))
          }
          const now = iso(yield* Clock.currentTimeMillis)
          const stored = yield* repo.update({
            ...current,
            access_token: number.accessToken,
            business_account_id: number.businessAccountId,
            updated_at: now
          }).pipe(Effect.orDie)
          return yield* Option.match(stored, {
            onNone: () => Effect.succeed(Option.none<MessageConfigRecord>()),
            onSome: (config) => Effect.map(refreshFacts(config), Option.some)
          })
        }
        const created = yield* connectVerified(projectId, {
          phone_number_id: number.phoneNumberId,
          business_account_id: number.businessAccountId,
          access_token: Redacted.value(number.accessToken),
          kind: "production"
        }, null).pipe(
          Effect.map(Option.some),
          Effect.catchCause((cause) =>
            Effect.as(Effect.logWarning("Could not connect the simulated number", cause), Option.none<MessageConfigRecord>())
          )
        )
        return created
      })

      return MessageConfigs.of({
        connect,
        connectToCustomer,
        update,
        list,
        get,
        disconnect,
        releaseIdle,
        bootstrap,
        refreshFacts
      })
    })
  )
}
