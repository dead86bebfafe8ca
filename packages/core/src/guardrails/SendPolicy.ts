/**
 * The one check every send passes (`Outbound.send` asks it before anything is recorded), in order:
 *
 * 1. Opt-out: a recipient opted out of the number (or the whole project) gets no marketing template; a utility or
 *    authentication template or a service (free-form) message only inside a conversation the contact opened again
 *    after opting out (it wrote since), as the network's rules allow replies in a conversation the contact started.
 * 2. Quiet hours: broadcasts, and workflow sends to a contact who did not write in the last `REPLY_GRACE_MS`, wait
 *    while the recipient's local time is in the window (`until`: when it opens). Sends of people (the proxy, the
 *    inbox) are theirs to time.
 * 3. Frequency caps: a marketing template past the contact's daily or weekly allowance is skipped; one let through
 *    is noted under its key (the callback data a retry keeps, else the message id), so a retried send counts once.
 *
 * A template the mirror does not know counts as marketing: the stricter reading.
 *
 * A send reads its recipient's facts (opt-out, time zone) when it is checked, unless its caller read them for a batch
 * of recipients at once (`batchFacts`, a broadcast's batch): the check then decides from that read while it is less
 * than `SNAPSHOT_FRESH_MS` old, and reads again after (decisions: "A broadcast's batch reads its opt-outs once").
 */
import { Clock, Context, Effect, Layer, Option, Predicate, Semaphore } from "effect"
import { ActiveGuardrails } from "./ActiveGuardrails.ts"
import type { Withheld } from "./Guardrail.ts"
import { GuardrailsRepo, type RecipientFacts } from "./GuardrailsRepo.ts"
import { OptOuts } from "./OptOuts.ts"
import { quietUntil, recipientZone } from "./QuietHours.ts"
import { SendFacts, type SendingNumber } from "./SendFacts.ts"
import { Ids } from "../shared/Ids.ts"

/** A contact who wrote this recently is being answered: a reply is never held by quiet hours. */
export const REPLY_GRACE_MS = 15 * 60 * 1000
const DAY_MS = 24 * 60 * 60 * 1000
/** The network's refusal of a marketing message to a contact who stopped them. */
export const STOPPED_MARKETING = 131050
/**
 * How long a batch's read of its recipients' facts decides their sends: an opt-out committed this long (or longer)
 * before a send's check always withholds it, whatever read the check used. A batch is about a second of its number's
 * pace, so its sends decide well inside it; a send checked later reads its recipient again.
 */
export const SNAPSHOT_FRESH_MS = 2_000
/** A batch's read is taken again once this old, so the sends handed it have the rest of the bound to be checked. */
const SNAPSHOT_RENEW_MS = SNAPSHOT_FRESH_MS / 2

/** The guardrails' facts of a batch of recipients of one number, read at once (`SendPolicy.batchFacts`). */
export interface RecipientsSnapshot {
  readonly projectId: string
  readonly msgConfigId: string
  /** When the read began (epoch ms): it saw every change committed before. */
  readonly readAt: number
  /** The recipients it read, with or without facts. */
  readonly recipients: ReadonlySet<string>
  /** The facts of those that have any. */
  readonly facts: ReadonlyMap<string, RecipientFacts>
}

const NO_FACTS: RecipientFacts = { optOut: Option.none(), zone: Option.none() }

/** The recipient's facts from the snapshot, if it read them for this number less than `SNAPSHOT_FRESH_MS` ago. */
const fromSnapshot = (snapshot: RecipientsSnapshot | undefined, number: SendingNumber, recipient: string, now: number) =>
  snapshot !== undefined && snapshot.projectId === number.projectId && snapshot.msgConfigId === number.msgConfigId &&
    now - snapshot.readAt < SNAPSHOT_FRESH_MS && snapshot.recipients.has(recipient)
    ? snapshot.facts.get(recipient) ?? NO_FACTS
    : undefined

export interface SendRequest {
  readonly number: SendingNumber
  readonly waId: string | undefined
  readonly userId: string | undefined
  /** The message's origin (`broadcast`, `workflow`, `api`, ...). */
  readonly origin: string
  /** The template it sends, if it is one. */
  readonly template: { readonly name: string; readonly language: string } | undefined
  /** What names this send across its retries, for frequency caps. */
  readonly key: string | undefined
  /** The facts its caller read for a batch it belongs to, if any. */
  readonly snapshot: RecipientsSnapshot | undefined
}

/** The request of a send of `envelope` from the number (`config`: a messaging number's record) with its options. */
export const sendRequest = (
  config: { readonly id: string; readonly project_id: string; readonly business_account_id: string },
  envelope: Readonly<Record<string, unknown>>,
  options: {
    readonly origin: string
    readonly messageId?: string | undefined
    readonly guardrailFacts?: RecipientsSnapshot | undefined
  },
  recipient: { readonly waId: string | undefined; readonly userId: string | undefined }
): SendRequest => {
  const template = envelope["type"] === "template" && Predicate.isObject(envelope["template"]) ? envelope["template"] : undefined
  const language = template !== undefined && Predicate.isObject(template["language"]) ? template["language"]["code"] : undefined
  const callbackData = envelope["biz_opaque_callback_data"]
  return {
    number: { projectId: config.project_id, msgConfigId: config.id, businessAccountId: config.business_account_id },
    ...recipient,
    origin: options.origin,
    template: template !== undefined && typeof template["name"] === "string"
      ? { name: template["name"], language: typeof language === "string" ? language : "" }
      : undefined,
    key: typeof callbackData === "string" ? callbackData : options.messageId,
    snapshot: options.guardrailFacts
  }
}

export class SendPolicy extends Context.Service<SendPolicy, {
  /** None: the send may go; else why it does not (and, for quiet hours, when it may). */
  readonly check: (request: SendRequest) => Effect.Effect<Option.Option<Withheld>>
  /**
   * The facts of a batch of the number's recipients, in one read, to hand each send (`OutboundOptions.guardrailFacts`):
   * `current` answers the read, taken again (once, whoever asks) when it is `SNAPSHOT_RENEW_MS` old, so a batch that
   * outlasts the bound costs a read a second, not a read per send.
   */
  readonly batchFacts: (
    number: { readonly projectId: string; readonly msgConfigId: string },
    recipients: ReadonlyArray<string>
  ) => Effect.Effect<{ readonly current: Effect.Effect<RecipientsSnapshot> }>
  /** The network refused the send with `code`: 131050 records the recipient's opt-out of the number. */
  readonly refused: (request: SendRequest, code: number | undefined) => Effect.Effect<void>
}>()("@parley/core/guardrails/SendPolicy") {
  static readonly layer = Layer.effect(
    SendPolicy,
    Effect.gen(function*() {
      const repo = yield* GuardrailsRepo
      const active = yield* ActiveGuardrails
      const facts = yield* SendFacts
      const optOuts = yield* OptOuts
      const ids = yield* Ids

      const check = Effect.fn("SendPolicy.check")(function*(request: SendRequest) {
        const recipient = request.waId ?? request.userId
        if (recipient === undefined) return Option.none<Withheld>()
        const { number } = request
        const settings = yield* active.settings(number.projectId, number.msgConfigId)
        const now = yield* Clock.currentTimeMillis
        const found = fromSnapshot(request.snapshot, number, recipient, now) ??
          (yield* repo.recipientsFacts(number.projectId, number.msgConfigId, [recipient])).get(recipient) ?? NO_FACTS
        if (Option.isNone(found.optOut) && settings.quietHours === null && settings.frequencyCaps === null) return Option.none<Withheld>()

        const category = request.template === undefined
          ? "SERVICE"
          : (yield* facts.templateCategory(number, request.template.name, request.template.language))?.toUpperCase() ?? "MARKETING"
        const marketing = category === "MARKETING"
        let lastInbound: number | undefined | null = null
        const wroteAt = Effect.gen(function*() {
          if (lastInbound === null) lastInbound = yield* facts.lastInboundAt(number, request)
          return lastInbound
        })

        if (Option.isSome(found.optOut)) {
          const since = Date.parse(found.optOut.value.created_at)
          const wrote = yield* wroteAt
          if (marketing || wrote === undefined || wrote <= since) {
            return Option.some<Withheld>({
              reason: "opted_out",
              message: marketing
                ? "The contact opted out of this number's marketing messages"
                : "The contact opted out of this number's messages and has not written since",
              until: null
            })
          }
        }

        const quiet = settings.quietHours
        if (quiet !== null && (request.origin === "broadcast" || request.origin === "workflow")) {
          const wrote = request.origin === "workflow" ? yield* wroteAt : undefined
          if (wrote === undefined || now - wrote > REPLY_GRACE_MS) {
            const until = quietUntil(quiet, recipientZone(Option.getOrNull(found.zone), recipient, quiet), now)
            if (until !== undefined) {
              return Option.some<Withheld>({
                reason: "quiet_hours",
                message: "Quiet hours in the contact's time zone: the send waits until they end",
                until: new Date(until).toISOString()
              })
            }
          }
        }

        const caps = settings.frequencyCaps
        if (caps !== null && marketing) {
          const scope = caps.scope === "number" ? number.msgConfigId : null
          const day = caps.marketing_per_day === null ? 0 : yield* repo.countMarketing(number.projectId, scope, recipient, new Date(now - DAY_MS).toISOString())
          const week = caps.marketing_per_week === null ? 0 : yield* repo.countMarketing(number.projectId, scope, recipient, new Date(now - 7 * DAY_MS).toISOString())
          const over = caps.marketing_per_day !== null && day >= caps.marketing_per_day
            ? `${caps.marketing_per_day} a day`
            : caps.marketing_per_week !== null && week >= caps.marketing_per_week
            ? `${caps.marketing_per_week} a week`
            : undefined
          if (over !== undefined) {
            return Option.some<Withheld>({ reason: "frequency_cap", message: `The contact reached the cap of ${over} marketing messages`, until: null })
          }
          yield* repo.recordMarketing({
            project_id: number.projectId,
            msg_config_id: number.msgConfigId,
            recipient,
            key: request.key ?? (yield* ids.uuid),
            sent_at: new Date(now).toISOString()
          }, new Date(now - 8 * DAY_MS).toISOString())
        }
        return Option.none<Withheld>()
      })

      const refused = (request: SendRequest, code: number | undefined) => {
        const recipient = request.waId ?? request.userId
        return code === STOPPED_MARKETING && recipient !== undefined
          ? optOuts.networkRefused({ projectId: request.number.projectId, msgConfigId: request.number.msgConfigId }, recipient)
          : Effect.void
      }

      const batchFacts = Effect.fn("SendPolicy.batchFacts")(function*(
        number: { readonly projectId: string; readonly msgConfigId: string },
        recipients: ReadonlyArray<string>
      ) {
        const asked: ReadonlySet<string> = new Set(recipients)
        const read = Effect.gen(function*() {
          // Taken before the read: the read sees what was committed by then, so its age is never understated.
          const readAt = yield* Clock.currentTimeMillis
          const facts = yield* repo.recipientsFacts(number.projectId, number.msgConfigId, recipients)
          return { projectId: number.projectId, msgConfigId: number.msgConfigId, readAt, recipients: asked, facts } satisfies RecipientsSnapshot
        })
        let last = yield* read
        const renewing = yield* Semaphore.make(1)
        const renew = renewing.withPermits(1)(Effect.gen(function*() {
          if ((yield* Clock.currentTimeMillis) - last.readAt >= SNAPSHOT_RENEW_MS) last = yield* read
          return last
        }))
        const current = Effect.flatMap(Clock.currentTimeMillis, (now) => now - last.readAt < SNAPSHOT_RENEW_MS ? Effect.succeed(last) : renew)
        return { current }
      })

      return SendPolicy.of({ check, batchFacts, refused })
    })
  )
}
