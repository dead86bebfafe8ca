/**
 * Opt-outs (issue 32 §1): a contact whose whole message is an opt-out keyword of the number (its own list, else the
 * project's, else the defaults) stops the number's marketing messages; a resubscribe keyword undoes it; the network's
 * refusal 131050 ("stopped marketing messages") records the same. The Platform API lists, adds and removes them.
 *
 * Every change writes a `msg.contact.opted_out` / `msg.contact.opted_in` domain event in the same transaction: the
 * project's webhooks deliver its `body`, and a keyword's change carries the confirmation the contact is sent
 * (`notice`, sent once under a message id derived from the change, see `GuardrailsJobs.ts`).
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { normalizePhone, isUserId } from "../network/Contacts.ts"
import { Outbox } from "../ports/Outbox.ts"
import { Transactor } from "../ports/Transactor.ts"
import { notFound, type NotFound, type Unprocessable, unprocessable } from "../shared/ApiError.ts"
import { Ids, nameUuid } from "../shared/Ids.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import { keywordForm, type OptOutRecord, type OptOutSource, toOptOut } from "./Guardrail.ts"
import { ActiveGuardrails } from "./ActiveGuardrails.ts"
import { GuardrailsRepo, type OptOutFilter } from "./GuardrailsRepo.ts"
import { SendFacts } from "./SendFacts.ts"

export const CONTACT_OPTED_OUT = "msg.contact.opted_out"
export const CONTACT_OPTED_IN = "msg.contact.opted_in"
export const GUARDRAIL_DOMAIN_EVENTS: ReadonlyArray<string> = [CONTACT_OPTED_OUT, CONTACT_OPTED_IN]

/** The confirmation a keyword's change sends to the contact. */
export interface OptOutNotice {
  readonly msg_config_id: string
  readonly recipient: string
  readonly text: string
  readonly message_id: string
}

/** The payload of `msg.contact.opted_out|opted_in`: the project webhook's body, and the confirmation to send. */
export interface OptOutEventPayload {
  readonly body: {
    readonly event: string
    readonly occurred_at: string
    readonly project_id: string
    readonly data: { readonly opt_out: ReturnType<typeof toOptOut>; readonly phone_number_id: string | null }
  }
  readonly notice: OptOutNotice | null
}

/** A message's text as keywords read it (text, a button's, an interactive reply's title), if it has one. */
export const keywordText = (type: string, content: string | null): string | undefined =>
  content !== null && (type === "text" || type === "button" || type === "interactive") ? content : undefined

/** The recipient key of an API phone number or business-scoped id; undefined when it is neither. */
export const recipientOf = (input: string): string | undefined =>
  isUserId(input.trim()) ? input.trim() : normalizePhone(input)

export class OptOuts extends Context.Service<OptOuts, {
  /**
   * An inbound message of the number: when its whole text is an opt-out or resubscribe keyword, the opt-out is
   * recorded or removed with its domain event. Runs inside the caller's transaction (the message's recording).
   */
  readonly onInbound: (
    number: { readonly projectId: string; readonly msgConfigId: string },
    recipient: string,
    text: string
  ) => Effect.Effect<void>
  /** The network refused a send to the recipient with 131050: recorded as its opt-out of the number. */
  readonly networkRefused: (number: { readonly projectId: string; readonly msgConfigId: string }, recipient: string) => Effect.Effect<void>
  /** Newest first; `phone_number` as the API gives it (in any written form; a malformed one matches none). */
  readonly list: (
    projectId: string,
    filter: { readonly msg_config_id?: string | undefined; readonly phone_number?: string | undefined },
    window: ListWindow
  ) => Effect.Effect<ListSlice<OptOutRecord>, Unprocessable>
  /** Adds the project's opt-out (422 for a malformed number or unknown config); an existing one of the scope is answered. */
  readonly add: (
    projectId: string,
    input: { readonly phone_number: string; readonly msg_config_id?: string | null | undefined }
  ) => Effect.Effect<OptOutRecord, Unprocessable>
  readonly remove: (projectId: string, id: string) => Effect.Effect<void, NotFound>
}>()("@parley/core/guardrails/OptOuts") {
  static readonly layer = Layer.effect(
    OptOuts,
    Effect.gen(function*() {
      const repo = yield* GuardrailsRepo
      const active = yield* ActiveGuardrails
      const facts = yield* SendFacts
      const outbox = yield* Outbox
      const tx = yield* Transactor
      const ids = yield* Ids
      const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

      const event = Effect.fnUntraced(function*(type: string, optOut: OptOutRecord, notice: string | null, at: string) {
        const phoneNumberId = optOut.msg_config_id === null ? undefined : yield* facts.phoneNumberIdOf(optOut.project_id, optOut.msg_config_id)
        const payload: OptOutEventPayload = {
          body: {
            event: type,
            occurred_at: at,
            project_id: optOut.project_id,
            data: { opt_out: toOptOut(optOut), phone_number_id: phoneNumberId ?? null }
          },
          notice: notice === null || optOut.msg_config_id === null ? null : {
            msg_config_id: optOut.msg_config_id,
            recipient: optOut.recipient,
            text: notice,
            // One confirmation per change, whatever repeats the job that sends it.
            message_id: nameUuid(`guardrails:${type}:${optOut.id}`)
          }
        }
        yield* outbox.append({ id: yield* ids.uuid, project_id: optOut.project_id, type, payload, created_at: at })
      })

      const record = Effect.fnUntraced(function*(
        projectId: string,
        msgConfigId: string | null,
        recipient: string,
        source: OptOutSource,
        keyword: string | null,
        notice: string | null
      ) {
        const at = yield* now
        const inserted = yield* repo.insertOptOut({
          id: yield* ids.uuid,
          project_id: projectId,
          msg_config_id: msgConfigId,
          recipient,
          source,
          keyword,
          created_at: at
        })
        if (Option.isSome(inserted)) yield* event(CONTACT_OPTED_OUT, inserted.value, notice, at)
        return inserted
      })

      const onInbound = Effect.fn("OptOuts.onInbound")(function*(
        number: { readonly projectId: string; readonly msgConfigId: string },
        recipient: string,
        text: string
      ) {
        const word = keywordForm(text)
        if (word.length === 0 || word.length > 40) return
        const settings = yield* active.settings(number.projectId, number.msgConfigId)
        if (settings.optOutKeywords.has(word)) {
          yield* record(number.projectId, number.msgConfigId, recipient, "keyword", word, settings.optOutConfirmation)
        } else if (settings.optInKeywords.has(word)) {
          // The number's own opt-out goes; a project-wide one (the API's) stays until the API removes it.
          const removed = yield* repo.deleteOptOutOf(number.projectId, number.msgConfigId, recipient)
          if (Option.isSome(removed)) yield* event(CONTACT_OPTED_IN, removed.value, settings.optInConfirmation, yield* now)
        }
      })

      const networkRefused = Effect.fn("OptOuts.networkRefused")(function*(
        number: { readonly projectId: string; readonly msgConfigId: string },
        recipient: string
      ) {
        yield* tx.withTransaction(record(number.projectId, number.msgConfigId, recipient, "network", null, null))
      })

      const add = Effect.fn("OptOuts.add")(function*(
        projectId: string,
        input: { readonly phone_number: string; readonly msg_config_id?: string | null | undefined }
      ) {
        const recipient = recipientOf(input.phone_number)
        if (recipient === undefined) {
          return yield* unprocessable("phone_number must be a phone number (7-15 digits) or a business-scoped id", [
            { path: "phone_number", message: "not a phone number or business-scoped id" }
          ])
        }
        const msgConfigId = input.msg_config_id ?? null
        if (msgConfigId !== null && (yield* facts.phoneNumberIdOf(projectId, msgConfigId)) === undefined) {
          return yield* unprocessable("msg_config_id is not a number of this project", [{ path: "msg_config_id", message: "unknown" }])
        }
        return yield* tx.withTransaction(Effect.gen(function*() {
          const inserted = yield* record(projectId, msgConfigId, recipient, "api", null, null)
          if (Option.isSome(inserted)) return inserted.value
          // Already opted out in this scope: that record is the answer.
          const existing = yield* repo.listOptOuts(projectId, { msg_config_id: msgConfigId ?? undefined, recipient }, { mode: "cursor", limit: 10 })
          return existing.items.find((o) => o.msg_config_id === msgConfigId)!
        }))
      })

      const remove = Effect.fn("OptOuts.remove")(function*(projectId: string, id: string) {
        yield* tx.withTransaction(Effect.gen(function*() {
          const removed = yield* repo.deleteOptOut(projectId, id)
          if (Option.isNone(removed)) return yield* Effect.fail(notFound("Opt-out", id))
          yield* event(CONTACT_OPTED_IN, removed.value, null, yield* now)
        }))
      })

      const list = Effect.fn("OptOuts.list")(function*(
        projectId: string,
        filter: { readonly msg_config_id?: string | undefined; readonly phone_number?: string | undefined },
        window: ListWindow
      ) {
        // A filter value that is neither a number nor a business-scoped id is no recipient: it matches none (as any
        // filter matching nothing), rather than refusing a query parameter the contract types as any string.
        const recipient = filter.phone_number === undefined ? undefined : recipientOf(filter.phone_number) ?? filter.phone_number
        const repoFilter: OptOutFilter = { msg_config_id: filter.msg_config_id, recipient }
        return yield* repo.listOptOuts(projectId, repoFilter, window)
      })

      return OptOuts.of({ onInbound, networkRefused, list, add, remove })
    })
  )
}
