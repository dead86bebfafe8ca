/**
 * The workflow triggers set on a number, which go with it when it is disconnected (decisions 4.8), in the same
 * transaction. Messaging owns this port so that it needs nothing of workflows; workflows answer it
 * (`workflows/NumberTriggers.ts`), wired in `Parley.ts`.
 */
import { Context, type Effect } from "effect"

export class NumberTriggers extends Context.Service<NumberTriggers, {
  /** Removes the number's `inbound_message` and `msg_event` triggers. */
  readonly removeFor: (projectId: string, phoneNumberId: string) => Effect.Effect<void>
}>()("@parley/core/messaging/NumberTriggers") {}
