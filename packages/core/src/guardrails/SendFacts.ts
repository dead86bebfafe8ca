/**
 * What the guardrails need to know of messaging about one send, through a port they own (messaging answers it,
 * `Parley.ts` wires it): when the contact last wrote to the number, and a template's category.
 */
import { Context, type Effect } from "effect"

/** The number a send goes from. */
export interface SendingNumber {
  readonly projectId: string
  readonly msgConfigId: string
  readonly businessAccountId: string
}

export class SendFacts extends Context.Service<SendFacts, {
  /** When the contact's last message to the number came (epoch ms), if it ever wrote. */
  readonly lastInboundAt: (
    number: SendingNumber,
    recipient: { readonly waId: string | undefined; readonly userId: string | undefined }
  ) => Effect.Effect<number | undefined>
  /** The category (`MARKETING`, `UTILITY`, `AUTHENTICATION`) of the number's template, if the mirror knows it. */
  readonly templateCategory: (number: SendingNumber, name: string, language: string) => Effect.Effect<string | undefined>
  /** The network id of the project's live number, if it is one (opt-outs and settings name numbers by config id). */
  readonly phoneNumberIdOf: (projectId: string, msgConfigId: string) => Effect.Effect<string | undefined>
}>()("@parley/core/guardrails/SendFacts") {}

/** Sends the confirmation of an opt-out or resubscription (messaging answers it with `Outbound`). */
export class OptOutNotices extends Context.Service<OptOutNotices, {
  /** Sends `text` to the recipient from the number once: `messageId` fixes the send, a repeat finds it recorded. */
  readonly send: (projectId: string, msgConfigId: string, recipient: string, text: string, messageId: string) => Effect.Effect<void>
}>()("@parley/core/guardrails/OptOutNotices") {}
