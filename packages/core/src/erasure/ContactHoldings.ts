/**
 * What other capabilities hold of a contact, as an erasure reaches it (decisions 4.8): the contact itself
 * (messaging's), the broadcast recipients sent to its number and the guardrails' records keyed by its number or
 * business-scoped id. Erasure owns this port so it imports none of their storage; `Parley.ts` answers it from their
 * stores (`layerContactHoldings`), in the erasure's own statements.
 */
import { Context, type Effect, type Option } from "effect"
import type { ContactRecord } from "../messaging/Message.ts"

export class ContactHoldings extends Context.Service<ContactHoldings, {
  readonly contactById: (projectId: string, id: string) => Effect.Effect<Option.Option<ContactRecord>>
  readonly contactByUserId: (projectId: string, userId: string) => Effect.Effect<Option.Option<ContactRecord>>
  readonly contactByWaId: (projectId: string, waId: string) => Effect.Effect<Option.Option<ContactRecord>>
  /** Broadcast recipients sent to the number keep their rows (the counts stay true) without number or parameters. */
  readonly anonymiseBroadcastRecipients: (projectId: string, phoneNumber: string) => Effect.Effect<number>
  /** The opt-outs, own time zone and frequency-cap counts kept under a phone number or business-scoped id. */
  readonly eraseGuardrails: (projectId: string, recipient: string) => Effect.Effect<number>
}>()("@parley/core/erasure/ContactHoldings") {}
