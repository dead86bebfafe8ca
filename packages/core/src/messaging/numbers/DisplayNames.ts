/**
 * Display name requests (decisions 2.15, 3.6, 4.8): submitted to the network
 * first (nothing is stored when it cannot be reached), then recorded with the
 * state the network reports; a new request cancels the number's open one (one
 * open request per number, which the store also enforces). The review runs
 * at the network: reads move an open request on from the number's
 * `new_name_status` and `verified_name`, and an applied name refreshes the
 * number's facts so it shows at once.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import type { Principal } from "../../projects/Projects.ts"
import { DisplayNameRequestsRepo } from "./DisplayNameRequestsRepo.ts"
import { MessageConfigsRepo } from "./MessageConfigsRepo.ts"
import { MessagingNetwork } from "../../network/MessagingNetwork.ts"
import { Transactor } from "../../ports/Transactor.ts"
import { BadGateway, type NotFound, notFound, type Unprocessable, unprocessable } from "../../shared/ApiError.ts"
import { Ids } from "../../shared/Ids.ts"
import type { ListSlice, ListWindow } from "../../shared/Pagination.ts"
import type { PhoneNumberFacts } from "../../network/NetworkObjects.ts"
import {
  type DisplayNameRequestInput,
  type DisplayNameRequestRecord,
  type DisplayNameRequestStatus,
  isOpenDisplayNameRequest
} from "./DisplayNameRequest.ts"
import type { MessageConfigRecord } from "./MessageConfig.ts"
import { MessageConfigs } from "./MessageConfigs.ts"

/** The number fields a request's state is read from. */
const NAME_FIELDS = ["verified_name", "name_status", "new_display_name", "new_name_status"]

/**
 * Where the network says a request stands: applied once the number shows the name; else from `new_name_status`
 * while the change under way is this one. Undefined when the network says nothing new about it.
 */
const observedStatus = (
  request: DisplayNameRequestRecord,
  facts: PhoneNumberFacts
): DisplayNameRequestStatus | undefined => {
  if (facts.verified_name === request.requested_display_name) return "applied"
  if (facts.new_display_name !== undefined && facts.new_display_name !== request.requested_display_name) return undefined
  switch (facts.new_name_status) {
    case "PENDING_REVIEW":
      return "pending_review"
    case "APPROVED":
      return "approved"
    case "DECLINED":
      return "declined"
    case "AVAILABLE_WITHOUT_REVIEW":
      return "available_without_review"
    case "DEFERRED":
      return "deferred"
    case "EXPIRED":
      return "expired"
    case "NONE":
      // Nothing under review right after a submission: the change needs none.
      return request.status === "submitted" ? "no_review" : undefined
    default:
      return undefined
  }
}

const REVIEWED: ReadonlySet<DisplayNameRequestStatus> = new Set(["approved", "declined", "applied", "expired"])

export class DisplayNames extends Context.Service<DisplayNames, {
  /** `POST .../display_name_requests`: 422 on sandbox numbers or a blank name, 502 when the network is unreachable. */
  readonly create: (
    principal: Principal,
    phoneNumberId: string,
    input: DisplayNameRequestInput
  ) => Effect.Effect<DisplayNameRequestRecord, NotFound | Unprocessable | BadGateway>
  readonly list: (
    principal: Principal,
    phoneNumberId: string,
    window: ListWindow
  ) => Effect.Effect<ListSlice<DisplayNameRequestRecord>, NotFound>
  readonly get: (principal: Principal, phoneNumberId: string, id: string) => Effect.Effect<DisplayNameRequestRecord, NotFound>
  /**
   * `DELETE .../display_name_requests/<id>`: `cancelled`, and the change withdrawn at the network (the number's
   * current name submitted over it); 422 when the request is already final, 502 when the network cannot withdraw it.
   */
  readonly cancel: (
    principal: Principal,
    phoneNumberId: string,
    id: string
  ) => Effect.Effect<DisplayNameRequestRecord, NotFound | Unprocessable | BadGateway>
}>()("@parley/core/messaging/DisplayNames") {
  static readonly layer = Layer.effect(
    DisplayNames,
    Effect.gen(function*() {
      const configs = yield* MessageConfigsRepo
      const numbers = yield* MessageConfigs
      const repo = yield* DisplayNameRequestsRepo
      const network = yield* MessagingNetwork
      const tx = yield* Transactor
      const ids = yield* Ids

      const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

      const numberOf = (principal: Principal, phoneNumberId: string) =>
        configs.findByPhoneNumberId(phoneNumberId).pipe(
          Effect.flatMap((found) =>
            Option.isSome(found) && found.value.project_id === principal.project.id
              ? Effect.succeed(found.value)
              : Effect.fail(notFound("Phone number", phoneNumberId))
          )
        )

      const readName = (config: MessageConfigRecord) =>
        network.getPhoneNumber({ accessToken: config.access_token }, config.phone_number_id, { fields: NAME_FIELDS }).pipe(
          Effect.map((answer) => Option.some(answer.value)),
          Effect.catchCause((cause) =>
            Effect.as(
              Effect.logWarning("Could not read a number's display name state", cause).pipe(
                Effect.annotateLogs({ msg_config_id: config.id })
              ),
              Option.none<PhoneNumberFacts>()
            )
          )
        )

      /** The request moved on to what the network reports; unchanged when it is final or the network says nothing. */
      const follow = (config: MessageConfigRecord, request: DisplayNameRequestRecord, facts: PhoneNumberFacts) =>
        Effect.gen(function*() {
          const status = observedStatus(request, facts)
          if (status === undefined || status === request.status || !isOpenDisplayNameRequest(request.status)) return request
          const at = yield* now
          const moved: DisplayNameRequestRecord = {
            ...request,
            status,
            reviewed_at: request.reviewed_at ?? (REVIEWED.has(status) ? at : null),
            applied_at: status === "applied" ? at : request.applied_at,
            updated_at: at
          }
          const stored = Option.getOrElse(yield* repo.update(moved), () => moved)
          // The number's listing shows the new name at once, not at the next 15-minute refresh.
          if (status === "applied") yield* numbers.refreshFacts(config)
          return stored
        })

      const refresh = (config: MessageConfigRecord, request: DisplayNameRequestRecord) =>
        isOpenDisplayNameRequest(request.status)
          ? readName(config).pipe(
            Effect.flatMap(Option.match({ onNone: () => Effect.succeed(request), onSome: (facts) => follow(config, request, facts) }))
          )
          : Effect.succeed(request)

      const create = Effect.fn("DisplayNames.create")(function*(
        principal: Principal,
        phoneNumberId: string,
        input: DisplayNameRequestInput
      ) {
        const config = yield* numberOf(principal, phoneNumberId)
        if (config.kind === "sandbox") {
          return yield* unprocessable("Display name requests are not available on sandbox numbers")
        }
        const name = input.new_display_name.trim()
        if (name === "") {
          return yield* unprocessable("display_name_request.new_display_name is required", [
            { path: "display_name_request.new_display_name", message: "must not be blank" }
          ])
        }
        const submitted = yield* Effect.result(
          network.requestDisplayName({ accessToken: config.access_token }, config.phone_number_id, name)
        )
        if (submitted._tag === "Failure" && submitted.failure._tag === "NetworkUnavailable") {
          return yield* new BadGateway({ error: "The messaging network could not be reached", code: "upstream_unavailable" })
        }
        const refusal = submitted._tag === "Failure" && submitted.failure._tag === "NetworkRefused"
          ? submitted.failure.error
          : undefined
        const at = yield* now
        const request: DisplayNameRequestRecord = {
          id: yield* ids.uuid,
          project_id: principal.project.id,
          msg_config_id: config.id,
          requested_display_name: name,
          previous_display_name: config.display_name,
          status: refusal === undefined ? "submitted" : "failed",
          submitted_at: at,
          reviewed_at: null,
          applied_at: null,
          upstream_error_code: refusal?.code ?? null,
          upstream_error_subcode: refusal?.error_subcode ?? null,
          upstream_error_type: refusal?.type ?? null,
          upstream_error_message: refusal?.message ?? null,
          created_at: at,
          updated_at: at
        }
        yield* tx.withTransaction(Effect.gen(function*() {
          // A refused submission leaves the open request as it was: the network still reviews that one.
          if (refusal === undefined) {
            const open = yield* repo.findOpen(config.id)
            if (Option.isSome(open)) yield* repo.update({ ...open.value, status: "cancelled", updated_at: at })
          }
          yield* repo.insert(request)
        })).pipe(
          Effect.catchTag("Duplicate", () =>
            Effect.fail(unprocessable("Another display name request for this number was made at the same time; retry")))
        )
        return yield* refresh(config, request)
      })

      const ownRequest = (principal: Principal, config: MessageConfigRecord, id: string) =>
        repo.findById(principal.project.id, id).pipe(
          Effect.flatMap((found) =>
            Option.isSome(found) && found.value.msg_config_id === config.id
              ? Effect.succeed(found.value)
              : Effect.fail(notFound("Display name request", id))
          )
        )

      const list = Effect.fn("DisplayNames.list")(function*(principal: Principal, phoneNumberId: string, window: ListWindow) {
        const config = yield* numberOf(principal, phoneNumberId)
        const slice = yield* repo.list(principal.project.id, config.id, window)
        // At most one request per number is open: the one read the network is asked for.
        const items = yield* Effect.forEach(slice.items, (request) => refresh(config, request))
        return { ...slice, items }
      })

      const get = Effect.fn("DisplayNames.get")(function*(principal: Principal, phoneNumberId: string, id: string) {
        const config = yield* numberOf(principal, phoneNumberId)
        return yield* refresh(config, yield* ownRequest(principal, config, id))
      })

      const cancel = Effect.fn("DisplayNames.cancel")(function*(principal: Principal, phoneNumberId: string, id: string) {
        const config = yield* numberOf(principal, phoneNumberId)
        const found = yield* ownRequest(principal, config, id)
        if (!isOpenDisplayNameRequest(found.status)) {
          return yield* unprocessable(`Display name request is ${found.status} and can no longer be cancelled`)
        }
        const facts = yield* readName(config)
        if (Option.isNone(facts)) {
          return yield* new BadGateway({ error: "The messaging network could not be reached", code: "upstream_unavailable" })
        }
        // Read again first: a name the network applied meanwhile is final, not cancellable.
        const request = yield* follow(config, found, facts.value)
        if (!isOpenDisplayNameRequest(request.status)) {
          return yield* unprocessable(`Display name request is ${request.status} and can no longer be cancelled`)
        }
        // The change is the network's while it reviews it, and the network has no withdrawal: a newer submission
        // replaces the one under review. Submitting the name the number shows now stops the cancelled one.
        if (facts.value.new_display_name === undefined || facts.value.new_display_name === request.requested_display_name) {
          const current = facts.value.verified_name ?? request.previous_display_name
          const withdrawn = yield* Effect.result(network.requestDisplayName({ accessToken: config.access_token }, config.phone_number_id, current))
          if (withdrawn._tag === "Failure") {
            return yield* new BadGateway({
              error: withdrawn.failure._tag === "NetworkUnavailable"
                ? "The messaging network could not be reached"
                : `The messaging network refused to withdraw the change: ${withdrawn.failure.error.message}`,
              code: withdrawn.failure._tag === "NetworkUnavailable" ? "upstream_unavailable" : "upstream_refused"
            })
          }
        }
        const cancelled = yield* repo.update({ ...request, status: "cancelled", updated_at: yield* now })
        return yield* Option.match(cancelled, { onNone: () => Effect.fail(notFound("Display name request", request.id)), onSome: Effect.succeed })
      })

      return DisplayNames.of({ create, list, get, cancel })
    })
  )
}
