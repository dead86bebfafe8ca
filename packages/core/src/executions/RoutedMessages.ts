/**
 * What routing needs of messaging's stored messages, contacts and numbers: a
 * narrow port executions owns (issue 28 §2), answered from messaging's
 * storage by `Parley.ts` (`layerRoutedMessages`), so executions reads no
 * messaging repository on the inbound path.
 */
import { Context, type Effect, type Option } from "effect"
import type { ContactRecord, MessageRecord, ProcessingStatus } from "../messaging/Message.ts"
import type { MessageConfigRecord } from "../messaging/numbers/MessageConfig.ts"

export class RoutedMessages extends Context.Service<RoutedMessages, {
  /** The project's inbound message of a number, by its network id. */
  readonly findInbound: (projectId: string, phoneNumberId: string, networkId: string) => Effect.Effect<Option.Option<MessageRecord>>
  /** Where routed messages ended up: `processing_status` of those still `pending`. */
  readonly settle: (projectId: string, ids: ReadonlyArray<string>, status: ProcessingStatus) => Effect.Effect<void>
  readonly contact: (projectId: string, contactId: string) => Effect.Effect<Option.Option<ContactRecord>>
  /** The project's connected (not deleted) number of a config: as this process remembers it when it can (`LiveNumbers`). */
  readonly number: (projectId: string, msgConfigId: string, phoneNumberId?: string | undefined) => Effect.Effect<Option.Option<MessageConfigRecord>>
}>()("@parley/core/executions/RoutedMessages") {}
