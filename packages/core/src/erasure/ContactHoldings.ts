/**
 * What other capabilities hold of a contact, as an erasure reaches it (decisions 4.8): the contact itself
 * (messaging's), the broadcast recipients sent to its number, the guardrails' records keyed by its number or
 * business-scoped id, and the deletions of each step: each capability erases its own records through a narrow port it
 * owns (`ExecutionsErasure`, `EventsErasure`, `WebhooksErasure`, `MessagingErasure`, the outbox's `eraseMentions`).
 * Erasure owns this port so it imports none of their storage; `Parley.ts` answers it from their stores
 * (`layerContactHoldings`), in the erasure's own statements.
 */
import { Context, type Effect, type Option } from "effect"
import type { ContactRecord } from "../messaging/Message.ts"
import type { ErasureDeletion } from "./ContactErasureRepo.ts"

export class ContactHoldings extends Context.Service<ContactHoldings, {
  readonly contactById: (projectId: string, id: string) => Effect.Effect<Option.Option<ContactRecord>>
  readonly contactByUserId: (projectId: string, userId: string) => Effect.Effect<Option.Option<ContactRecord>>
  readonly contactByWaId: (projectId: string, waId: string) => Effect.Effect<Option.Option<ContactRecord>>
  /** Broadcast recipients sent to the number keep their rows (the counts stay true) without number or parameters. */
  readonly anonymiseBroadcastRecipients: (projectId: string, phoneNumber: string) => Effect.Effect<number>
  /** The opt-outs, own time zone and frequency-cap counts kept under a phone number or business-scoped id. */
  readonly eraseGuardrails: (projectId: string, recipient: string) => Effect.Effect<number>
  /** Step events of the executions that belong to the contact (its id, or one of its conversations). */
  readonly deleteStepEvents: ErasureDeletion
  /** Those executions (whatever their status: a live run is fenced off by its missing row) and the contact's routed inputs. */
  readonly deleteExecutions: ErasureDeletion
  /** Project events linked to one of the contact's conversations. */
  readonly deleteProjectEvents: ErasureDeletion
  /** Webhook deliveries (with their attempts) and buffers whose body names the contact. */
  readonly deleteDeliveries: ErasureDeletion
  /** Outbox entries (domain events) whose payload names the contact. */
  readonly deleteDomainEvents: ErasureDeletion
  /** Raw upstream payloads that name the contact, and the status reports of its messages. */
  readonly deleteUpstreamPayloads: ErasureDeletion
  /** The stored media (bytes and all) of the contact's messages. */
  readonly deleteMedia: ErasureDeletion
  readonly deleteMessages: ErasureDeletion
  readonly deleteConversations: ErasureDeletion
  /** The contact row itself (answers 0 or 1). */
  readonly deleteContact: ErasureDeletion
}>()("@parley/core/erasure/ContactHoldings") {}
