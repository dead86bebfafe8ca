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
import type { MessageRecord } from "./Message.ts"
import type { MessageConfigRecord } from "./numbers/MessageConfig.ts"

/**
 * Routes messages of one number just recorded (oldest first) in the caller's transaction; answers what to do once
 * it committed (run the resumed or started execution, read mode).
 */
export type RouteRecorded = (
  config: MessageConfigRecord,
  messages: ReadonlyArray<MessageRecord>
) => Effect.Effect<Effect.Effect<void>, unknown>

export class InboundRouter extends Context.Service<InboundRouter, {
  /** The router of this process, once executions registered one. */
  readonly current: Effect.Effect<Option.Option<RouteRecorded>>
  readonly register: (route: RouteRecorded) => Effect.Effect<void>
}>()("@parley/core/messaging/InboundRouter") {
  static readonly layer = Layer.sync(InboundRouter, () => {
    let router = Option.none<RouteRecorded>()
    return InboundRouter.of({
      current: Effect.sync(() => router),
      register: (route) => Effect.sync(() => void (router = Option.some(route)))
    })
  })
}
