/**
 * The guardrails' ports answered by messaging: what a send's check needs to know (`SendFacts`: when the contact last
 * wrote, a template's category, a number's network id), and the sending of opt-out confirmations (`OptOutNotices`,
 * through `Outbound` like every send).
 */
import { Effect, Layer, Option } from "effect"
import { OptOutNotices, SendFacts } from "../guardrails/SendFacts.ts"
import { ContactsRepo, ConversationsRepo } from "./MessagingRepo.ts"
import { MessageConfigsRepo } from "./numbers/MessageConfigsRepo.ts"
import { TemplatesRepo } from "./templates/TemplatesRepo.ts"
import { Outbound } from "./Outbound.ts"
import { isUserId } from "../network/Contacts.ts"

export const layerSendFacts = Layer.effect(
  SendFacts,
  Effect.gen(function*() {
    const contacts = yield* ContactsRepo
    const conversations = yield* ConversationsRepo
    const templates = yield* TemplatesRepo
    const configs = yield* MessageConfigsRepo
    return SendFacts.of({
      lastInboundAt: Effect.fn("SendFacts.lastInboundAt")(function*(number, recipient) {
        const contact = recipient.waId !== undefined
          ? yield* contacts.findByWaId(number.projectId, recipient.waId)
          : recipient.userId !== undefined
          ? yield* contacts.findByUserId(number.projectId, recipient.userId)
          : Option.none()
        if (Option.isNone(contact)) return undefined
        const conversation = yield* conversations.findActive(number.msgConfigId, contact.value.id)
        const at = Option.isSome(conversation) ? conversation.value.last_inbound_at : null
        return at === null ? undefined : Date.parse(at)
      }),
      templateCategory: Effect.fn("SendFacts.templateCategory")(function*(number, name, language) {
        const found = yield* templates.list(
          number.projectId,
          { business_account_id: number.businessAccountId, name, ...(language !== "" ? { language } : {}) },
          { mode: "cursor", limit: 1 }
        )
        return found.items[0]?.category
      }),
      phoneNumberIdOf: Effect.fn("SendFacts.phoneNumberIdOf")(function*(projectId, msgConfigId) {
        const config = yield* configs.findById(projectId, msgConfigId)
        return Option.isSome(config) && config.value.deleted_at === null ? config.value.phone_number_id : undefined
      })
    })
  })
)

export const layerOptOutNotices = Layer.effect(
  OptOutNotices,
  Effect.gen(function*() {
    const configs = yield* MessageConfigsRepo
    const outbound = yield* Outbound
    return OptOutNotices.of({
      send: Effect.fn("OptOutNotices.send")(function*(projectId, msgConfigId, recipient, text, messageId) {
        const config = yield* configs.findById(projectId, msgConfigId)
        if (Option.isNone(config) || config.value.deleted_at !== null) return
        // Sent once: a repeat of the job finds the message recorded under its id.
        if (Option.isSome(yield* outbound.findRecorded(projectId, messageId))) return
        const to = isUserId(recipient) ? { recipient } : { to: recipient }
        const outcome = yield* outbound.send(
          config.value,
          { messaging_product: "whatsapp", recipient_type: "individual", ...to, type: "text", text: { body: text } },
          { origin: "api", messageId, confirmsOptOut: true }
        )
        if (outcome._tag !== "Accepted") {
          yield* Effect.logWarning("An opt-out confirmation was not sent").pipe(
            Effect.annotateLogs({ msg_config_id: msgConfigId, outcome: outcome._tag })
          )
        }
      })
    })
  })
)
