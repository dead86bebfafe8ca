/**
 * What contact erasure (decisions 4.8) removes of events' records: the project events linked to one of the
 * contact's conversations. Events owns the port; `Parley.ts` wires it into erasure (`ContactHoldings`). A deletion
 * removes at most `limit` rows, answers how many and is idempotent: erasure calls it until it answers less.
 */
import { Context, Effect, Layer } from "effect"
import type { EventRecord } from "./Event.ts"
import { byId, MemoryStore, memoryTable, removeSome } from "../ports/MemoryStore.ts"

export class EventsErasure extends Context.Service<EventsErasure, {
  readonly deleteConversationEvents: (projectId: string, contactId: string, limit: number) => Effect.Effect<number>
}>()("@parley/core/events/EventsErasure") {}

// Messaging's table, shared by name: only what finds the contact's conversations (events imports nothing of messaging).
const Conversations = memoryTable<{ readonly id: string; readonly project_id: string; readonly contact_id: string }>("msg_conversations")
const Events = memoryTable<EventRecord>("events")

export const layerMemoryEventsErasure = Layer.effect(
  EventsErasure,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    return EventsErasure.of({
      deleteConversationEvents: Effect.fn("EventsErasure.deleteConversationEvents")(
        (projectId: string, contactId: string, limit: number) =>
          store.run((db) => {
            const conversations = new Set(
              db.all(Conversations).filter((c) => c.project_id === projectId && c.contact_id === contactId).map((c) => c.id)
            )
            const linked = db.all(Events).filter((e) =>
              e.project_id === projectId && e.conversation_id !== null && conversations.has(e.conversation_id)
            )
            return removeSome(db, Events, linked, limit, byId)
          })
      )
    })
  })
)
