/**
 * Observer executions (decisions 10.1 step 3): one per active `msg_event`
 * trigger of an active workflow matching a `msg.*` domain event (received,
 * sent, failed, conversation created or ended) on its number or on every
 * number, started at once and per event, outside debounce and routing.
 * Observers are read-only (their sends are skipped unless a node names
 * `to_phone_number`, their waits end them: `Nodes.ts`) and never routed
 * (`ExecutionsRepo.findRouted` passes them by). A repeated delivery of the
 * domain event starts nothing new (dedupe key per trigger and entry).
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import type { ContactRecord, ConversationRecord } from "../messaging/Message.ts"
import type { MessageConfigRecord } from "../messaging/numbers/MessageConfig.ts"
import { Messaging } from "../messaging/Messaging.ts"
import type { DomainEvent } from "../ports/Outbox.ts"
import { StoredWorkflows } from "../workflows/StoredWorkflows.ts"
import type { TriggerRecord } from "../workflows/Trigger.ts"
import type { WorkflowRecord } from "../workflows/Workflow.ts"
import { type Launch, Launcher } from "./Launcher.ts"
import { ActiveTriggers, matchesMsgEvent } from "./TriggerIndex.ts"

/** The conversation a run follows, with its number and contact. */
export interface Channel {
  readonly conversation: ConversationRecord
  readonly config: MessageConfigRecord
  readonly contact: ContactRecord
}

/** A conversation with its (live) number and contact; None when any of them is gone. */
export const channelOf = Effect.fnUntraced(function*(projectId: string, conversationId: string) {
  const messaging = yield* Messaging
  const conversation = yield* messaging.findConversation(projectId, conversationId)
  if (Option.isNone(conversation)) return Option.none<Channel>()
  const config = yield* messaging.findNumber(projectId, conversation.value.msg_config_id)
  const contact = yield* messaging.findContact(projectId, conversation.value.contact_id)
  if (Option.isNone(config) || Option.isNone(contact)) return Option.none<Channel>()
  return Option.some<Channel>({ conversation: conversation.value, config: config.value, contact: contact.value })
})

/** The launch fields a channel gives (context phone and recipient, number, contact, conversation). */
const channelLaunch = (channel: Channel | undefined) => ({
  config: channel?.config ?? null,
  contact: channel?.contact ?? null,
  conversationId: channel?.conversation.id ?? null,
  phone: channel === undefined ? null : channel.contact.wa_id ?? channel.conversation.phone_number,
  recipient: channel?.contact.business_scoped_user_id ?? null
})

/** What one trigger adds to the launch of the run it starts. */
export type TriggeredLaunch = Pick<Launch, "triggerType" | "observer" | "system" | "dedupeKey">

/**
 * Starts one run per trigger whose workflow is active, following `channel` when there is one (observers, event
 * triggers); answers how many started (a repeated delivery starts none: dedupe keys).
 */
export const launchEach = Effect.fnUntraced(function*(
  launcher: Launcher["Service"],
  triggers: ReadonlyArray<TriggerRecord>,
  channel: Option.Option<Channel>,
  launchOf: (trigger: TriggerRecord) => TriggeredLaunch
) {
  let started = 0
  for (const trigger of triggers) {
    const workflow = yield* firingWorkflow(trigger)
    if (Option.isNone(workflow)) continue
    const launched = yield* launcher.launch({
      workflow: workflow.value,
      ...channelLaunch(Option.getOrUndefined(channel)),
      vars: {},
      context: {},
      initialData: undefined,
      metadata: {},
      ...launchOf(trigger)
    })
    if (Option.isSome(launched)) started++
  }
  return started
})

/** What observers read of a `msg.*` entry (`messaging/DomainEvents.ts`). */
const MsgEntry = Schema.Struct({
  data: Schema.Struct({ conversation: Schema.optionalKey(Schema.Struct({ id: Schema.String })) }),
  msg_config: Schema.Struct({ id: Schema.String, phone_number_id: Schema.String })
})
const decodeMsgEntry = Schema.decodeUnknownOption(MsgEntry)

/** The workflow of a trigger, if it can fire now. */
export const firingWorkflow = Effect.fnUntraced(function*(trigger: TriggerRecord) {
  const workflows = yield* StoredWorkflows
  return Option.filter(yield* workflows.findById(trigger.project_id, trigger.workflow_id), (w: WorkflowRecord) => w.status === "active")
})

export class Observers extends Context.Service<Observers, {
  /** Starts the observers of a `msg.*` domain event; answers how many started. */
  readonly start: (entry: DomainEvent) => Effect.Effect<number>
}>()("@parley/core/executions/Observers") {
  static readonly layer = Layer.effect(
    Observers,
    Effect.gen(function*() {
      const triggers = yield* ActiveTriggers
      const launcher = yield* Launcher
      const repos = yield* Effect.context<Messaging | StoredWorkflows>()

      const start = Effect.fn("Observers.start")(function*(entry: DomainEvent) {
        const decoded = decodeMsgEntry(entry.payload)
        if (entry.project_id === null || Option.isNone(decoded)) return 0
        const projectId = entry.project_id
        const { data, msg_config } = decoded.value
        const matches = (ts: ReadonlyArray<TriggerRecord>) => ts.filter((t) => matchesMsgEvent(t, entry.type, msg_config.phone_number_id))
        // Most messages have no observer: the remembered triggers say so without a read (as the interest does).
        if (matches(yield* triggers.remembered(projectId, "msg_event")).length === 0) return 0
        const matching = matches(yield* triggers.list(projectId, "msg_event"))
        if (matching.length === 0) return 0
        const channel = data.conversation === undefined
          ? Option.none<Channel>()
          : yield* channelOf(projectId, data.conversation.id)
        return yield* launchEach(launcher, matching, channel, (trigger) => ({
          triggerType: "msg_event",
          observer: true,
          // The event as webhooks deliver it (the v2 payload).
          system: { trigger_payload: (entry.payload as { readonly data: unknown }).data },
          dedupeKey: `observer:${trigger.id}:${entry.id}`
        }))
      }, Effect.provideContext(repos))

      return Observers.of({ start })
    })
  )
}
