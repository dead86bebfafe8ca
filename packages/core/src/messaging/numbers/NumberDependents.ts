/**
 * What goes with a number when it is disconnected (decisions 4.8), in the same transaction: the workflow triggers set
 * on it and the webhooks scoped to it, so a number connected again starts bare. Messaging owns this port so that it
 * needs nothing of workflows or webhooks; `Parley.ts` answers it from both.
 */
import { Context, type Effect } from "effect"

export class NumberDependents extends Context.Service<NumberDependents, {
  /** Removes the number's `inbound_message` and `msg_event` triggers and its webhooks. */
  readonly removeFor: (projectId: string, phoneNumberId: string) => Effect.Effect<void>
}>()("@parley/core/messaging/NumberDependents") {}
