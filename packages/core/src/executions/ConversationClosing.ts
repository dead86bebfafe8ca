/**
 * Closing a conversation releases its contact (decisions 3.2: `handoff` →
 * `ended` when the conversation is closed by PATCH `status` `ended`). A run
 * in `handoff` holds the (number, contact) pair: while it lives, routing
 * stores the contact's messages `blocked` (10.1). The conversation PATCH,
 * the inbox's "End conversation" and the MCP `set_status` all end the
 * conversation here, so the pair's handoff run ends with it, in the same
 * transaction: the contact's next message opens a new conversation and
 * reaches the triggers. The end by inactivity does not come here (3.2: a
 * long wait survives into the next conversation).
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import type { ConversationRecord } from "../messaging/Message.ts"
import { Messaging } from "../messaging/Messaging.ts"
import type { ConversationChange } from "../messaging/StoredConversations.ts"
import { ExecutionsRepo } from "./ExecutionsRepo.ts"
import { Transactor } from "../ports/Transactor.ts"
import type { NotFound, Unprocessable } from "../shared/ApiError.ts"
import { ExecutionEngine } from "./Engine.ts"
import { RouteLocks } from "./RouteLocks.ts"
import * as T from "./Transitions.ts"

export class ConversationClosing extends Context.Service<ConversationClosing, {
  /**
   * `PATCH /msg/conversations/<id>` (decisions 2.10, 3.5) with its effect on executions: a move from `active` to
   * `ended` also ends the pair's `handoff` run (reason `manual`).
   */
  readonly update: (
    projectId: string,
    id: string,
    change: ConversationChange
  ) => Effect.Effect<ConversationRecord, NotFound | Unprocessable>
}>()("@parley/core/executions/ConversationClosing") {
  static readonly layer = Layer.effect(
    ConversationClosing,
    Effect.gen(function*() {
      const messaging = yield* Messaging
      const repo = yield* ExecutionsRepo
      const locks = yield* RouteLocks
      const tx = yield* Transactor
      const engine = yield* ExecutionEngine

      /** Ends the pair's run in `handoff`, read under the route lock (routing reads the owner under it too). */
      const releaseHandoff = Effect.fnUntraced(function*(conversation: ConversationRecord) {
        yield* locks.lock(conversation.msg_config_id, conversation.contact_id)
        for (let attempt = 0; attempt < 5; attempt++) {
          const owner = yield* repo.findRouted(conversation.msg_config_id, conversation.contact_id)
          if (Option.isNone(owner) || owner.value.status !== "handoff") return
          const g = yield* engine.graph(owner.value.revision_id)
          const now = new Date(yield* Clock.currentTimeMillis).toISOString()
          // A resume that won the race moved it out of handoff: read again.
          if (yield* engine.write(owner.value, T.end(owner.value, g, "manual", now))) return
        }
      })

      const update = Effect.fn("ConversationClosing.update")(function*(projectId: string, id: string, change: ConversationChange) {
        return yield* tx.withTransaction(Effect.gen(function*() {
          const before = yield* messaging.getConversation(projectId, id)
          const after = yield* messaging.updateConversation(projectId, id, change)
          if (before.status === "active" && after.status === "ended") yield* releaseHandoff(after)
          return after
        }))
      })

      return ConversationClosing.of({ update })
    })
  )
}
