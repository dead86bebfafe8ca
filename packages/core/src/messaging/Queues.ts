/**
 * The job queues of messaging and the enqueue helpers the services use after
 * their transactions commit (the workers live in `MessagingJobs.ts`).
 */
import { Schema } from "effect"
import type { JobQueue } from "../ports/JobQueue.ts"

/** One acknowledged upstream POST to process: `{ inbox_id }`. */
export const UPSTREAM_INBOX_QUEUE = "messaging.upstream-inbox"
/** Forward one raw POST to a config's `webhook_destination_url`: `{ inbox_id, msg_config_id }`. */
export const UPSTREAM_FORWARD_QUEUE = "messaging.upstream-forward"
/** Every minute (`SlotJob`): ends the conversations 24 hours without a message. */
export const CONVERSATION_IDLE_SWEEP_QUEUE = "messaging.idle-sweep"
/** Read a number's facts from the network again: `{ msg_config_id }`. */
export const NUMBER_REFRESH_QUEUE = "messaging.number-refresh"
/** Every 10 minutes (`SlotJob`): lost inbox jobs, old inbox entries, idle provisioned numbers. */
export const MESSAGING_MAINTENANCE_QUEUE = "messaging.maintenance"

/** A conversation ends after this long without a message in either direction (decisions 3.5). */
export const CONVERSATION_IDLE_MS = 24 * 60 * 60 * 1000

export const InboxJob = Schema.Struct({ inbox_id: Schema.String })
export type InboxJob = typeof InboxJob.Type

export const ForwardJob = Schema.Struct({ inbox_id: Schema.String, msg_config_id: Schema.String })
export type ForwardJob = typeof ForwardJob.Type

export const NumberRefreshJob = Schema.Struct({ msg_config_id: Schema.String })
export type NumberRefreshJob = typeof NumberRefreshJob.Type

export const requestInboxProcessing = (jobs: JobQueue["Service"], inboxId: string) =>
  jobs.enqueue(UPSTREAM_INBOX_QUEUE, { inbox_id: inboxId } satisfies InboxJob, {
    dedupeKey: `inbox:${inboxId}`,
    retryLimit: 4,
    retryDelayMs: 2_000
  })
