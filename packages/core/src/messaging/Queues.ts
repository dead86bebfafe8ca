/**
 * The job queues of messaging and the enqueue helpers the services use after
 * their transactions commit (the workers live in `MessagingJobs.ts`).
 */
import { Effect, Schema } from "effect"
import type { JobQueue } from "../ports/JobQueue.ts"
import type { ConversationRecord } from "./Message.ts"

/** One acknowledged upstream POST to process: `{ inbox_id }`. */
export const UPSTREAM_INBOX_QUEUE = "messaging.upstream-inbox"
/** Forward one raw POST to a config's `webhook_destination_url`: `{ inbox_id, msg_config_id }`. */
export const UPSTREAM_FORWARD_QUEUE = "messaging.upstream-forward"
/** End a conversation after 24 hours without messages: `{ project_id, conversation_id }`. */
export const CONVERSATION_INACTIVITY_QUEUE = "messaging.conversation-inactivity"
/** Read a number's facts from the network again: `{ msg_config_id }`. */
export const NUMBER_REFRESH_QUEUE = "messaging.number-refresh"
/** Every 10 minutes (`SlotJob`): lost inbox jobs, idle conversations, old inbox entries. */
export const MESSAGING_MAINTENANCE_QUEUE = "messaging.maintenance"

/** A conversation ends after this long without a message in either direction (decisions 3.5). */
export const CONVERSATION_IDLE_MS = 24 * 60 * 60 * 1000

export const InboxJob = Schema.Struct({ inbox_id: Schema.String })
export type InboxJob = typeof InboxJob.Type

export const ForwardJob = Schema.Struct({ inbox_id: Schema.String, msg_config_id: Schema.String })
export type ForwardJob = typeof ForwardJob.Type

export const InactivityJob = Schema.Struct({ project_id: Schema.String, conversation_id: Schema.String })
export type InactivityJob = typeof InactivityJob.Type

export const NumberRefreshJob = Schema.Struct({ msg_config_id: Schema.String })
export type NumberRefreshJob = typeof NumberRefreshJob.Type

export const requestInboxProcessing = (jobs: JobQueue["Service"], inboxId: string) =>
  jobs.enqueue(UPSTREAM_INBOX_QUEUE, { inbox_id: inboxId } satisfies InboxJob, {
    dedupeKey: `inbox:${inboxId}`,
    retryLimit: 4,
    retryDelayMs: 2_000
  })

/**
 * Arms the end of a conversation 24 hours after its last message. One timer
 * per conversation is queued at a time (`key`); a timer that fires early
 * re-arms itself for the newer last message under a key of its own.
 */
export const armInactivity = (
  jobs: JobQueue["Service"],
  conversation: ConversationRecord,
  key?: string,
  withinTransaction?: boolean
) =>
  jobs.enqueue(
    CONVERSATION_INACTIVITY_QUEUE,
    { project_id: conversation.project_id, conversation_id: conversation.id } satisfies InactivityJob,
    {
      runAt: Date.parse(conversation.last_active_at) + CONVERSATION_IDLE_MS,
      dedupeKey: key ?? `inactivity:${conversation.id}`,
      retryLimit: 5,
      withinTransaction
    }
  ).pipe(Effect.asVoid)
