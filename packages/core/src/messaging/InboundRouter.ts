/**
 * Where recorded inbound messages go next, inside the transaction that
 * recorded them (decisions "One hop from the network to the run"): executions'
 * routing answers it (`executions/Routing.ts`, registered by `Parley.ts`), so
 * a message is recorded and routed together or not at all, with no domain
 * event and no relay between them. Messaging owns the port and never imports
 * executions. With no router registered (messaging built alone, a tool without
 * executions) messages are recorded `pending` and routing takes them later
 * from their `msg.message.received` entry, as before.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { MessageRecord, ProcessingStatus } from "./Message.ts"
import type { MessageConfigRecord } from "./numbers/MessageConfig.ts"

/** What routing did with messages just recorded. */
export interface Routed {
  /** What to do once the transaction committed (run the resumed or started execution, read mode). */
  readonly after: Effect.Effect<void>
  /** Where the messages routed at once ended up; a message not here stays `pending` (held for its debounce window). */
  readonly settled: ReadonlyMap<string, ProcessingStatus>
}

/** What routing read of a contact's route ahead of its messages (`Router.look`); only routing reads into it. */
export interface RouteLook {
  readonly contactId: string
}

export interface Router {
  /**
   * Takes the (number, contact) pair's route lock and reads what routing needs of it, in the caller's transaction:
   * called beside the conversation's lookup, so their reads share one round trip.
   */
  readonly look: (config: MessageConfigRecord, contactId: string) => Effect.Effect<RouteLook, unknown>
  /**
   * Routes messages of one number just recorded (oldest first) in the caller's transaction, before their rows are
   * written: the caller writes each with the `processing_status` routing settled it at (no update of a row just
   * inserted). `looks`: what `look` read, by contact id (not read again).
   */
  readonly route: (
    config: MessageConfigRecord,
    messages: ReadonlyArray<MessageRecord>,
    looks: ReadonlyMap<string, RouteLook>
  ) => Effect.Effect<Routed, unknown>
}

export class InboundRouter extends Context.Service<InboundRouter, {
  /** The router of this process, once executions registered one. */
  readonly current: Effect.Effect<Option.Option<Router>>
  readonly register: (router: Router) => Effect.Effect<void>
}>()("@parley/core/messaging/InboundRouter") {
  static readonly layer = Layer.sync(InboundRouter, () => {
    let current = Option.none<Router>()
    return InboundRouter.of({
      current: Effect.sync(() => current),
      register: (router) => Effect.sync(() => void (current = Option.some(router)))
    })
  })
}
