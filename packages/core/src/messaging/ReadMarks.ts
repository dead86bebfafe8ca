/**
 * Read mode's mark-reads (decisions 10.3), off the inbound path: a courtesy to the contact (the ticks turn blue, the
 * typing indicator shows), not acknowledged work, so not durable. Routing hands its mark here once the batch is
 * routed and returns at once: the network's webhook is answered without waiting for Parley's own call to the network.
 *
 * Marks wait in memory, one per conversation: a newer mark of a conversation replaces the one waiting (the network
 * marks every message before it read, and the store marks the conversation's earlier inbound messages too), and a
 * conversation has one mark-read in flight at a time. `CALLS` mark-reads run at once (the real network answers in
 * tens of milliseconds, so the calls overlap); each goes through `Messaging.markRead`, whose store writes of accepted
 * marks are group-committed. A mark is lost when the process stops before its call (as one between the network's
 * answer and the store write always was), and past `WAITING_MAX` conversations waiting a new conversation's mark is
 * dropped and logged: the network answers slower than the contacts write, and the courtesy gives way.
 */
import { Effect, Queue } from "effect"
import type { InboundRecording } from "./InboundRecording.ts"
import type { MessageConfigRecord } from "./numbers/MessageConfig.ts"

/** One conversation's mark: the newest message of a batch a workflow took. */
export interface ReadMark {
  readonly config: MessageConfigRecord
  readonly conversationId: string
  /** The message's network id. */
  readonly messageId: string
  /** When the message was recorded: of two marks of one conversation, the later wins. */
  readonly receivedAt: string
  readonly typingIndicator: boolean
}

export interface ReadMarks {
  /** Hands a mark to the mark-readers and returns at once. */
  readonly markReadLater: (mark: ReadMark) => Effect.Effect<void>
}

/** Mark-reads in flight at once. */
export const CALLS = 32
/** The most conversations whose marks wait. */
export const WAITING_MAX = 10_000

export const makeReadMarks = Effect.fnUntraced(function*(markRead: InboundRecording["markRead"]) {
  // Insertion order is the order marks are taken in; a replaced mark keeps its conversation's place.
  const waiting = new Map<string, ReadMark>()
  const inFlight = new Set<string>()
  // Wake-ups for idle mark-readers: at most one each, so a burst of marks does not pile them up.
  const ready = yield* Queue.dropping<void>(CALLS)
  let dropped = 0

  const next = (): ReadMark | undefined => {
    for (const [conversationId, mark] of waiting) {
      if (inFlight.has(conversationId)) continue
      waiting.delete(conversationId)
      return mark
    }
    return undefined
  }

  const call = (mark: ReadMark) =>
    markRead(mark.config, { accessToken: mark.config.access_token }, { messageId: mark.messageId, typingIndicator: mark.typingIndicator }).pipe(
      Effect.asVoid,
      Effect.catch((error) =>
        Effect.logWarning("Read mode: the network refused the mark-read").pipe(
          Effect.annotateLogs({ phone_number_id: mark.config.phone_number_id, message_id: mark.messageId, error: String(error._tag) })
        ))
    )

  const reader = Effect.forever(Effect.gen(function*() {
    const mark = next()
    if (mark === undefined) return yield* Queue.take(ready)
    inFlight.add(mark.conversationId)
    yield* Effect.ensuring(
      call(mark),
      Effect.suspend(() => {
        inFlight.delete(mark.conversationId)
        // A newer mark of the conversation came while this one was in flight: it is free to go now.
        return waiting.has(mark.conversationId) ? Effect.asVoid(Queue.offer(ready, undefined)) : Effect.void
      })
    )
  }))
  for (let i = 0; i < CALLS; i++) yield* Effect.forkScoped(reader)

  const markReadLater = (mark: ReadMark): Effect.Effect<void> =>
    Effect.suspend(() => {
      const held = waiting.get(mark.conversationId)
      if (held !== undefined) {
        if (Date.parse(mark.receivedAt) >= Date.parse(held.receivedAt)) waiting.set(mark.conversationId, mark)
        return Effect.void
      }
      if (waiting.size >= WAITING_MAX) {
        // Logged once per overflow, with how many it dropped when it ends.
        return dropped++ === 0
          ? Effect.logWarning("Read mode: too many mark-reads waiting for the network; new ones are dropped").pipe(
            Effect.annotateLogs({ waiting: WAITING_MAX })
          )
          : Effect.void
      }
      if (dropped > 0) {
        const count = dropped
        dropped = 0
        waiting.set(mark.conversationId, mark)
        return Effect.andThen(
          Effect.logWarning("Read mode: mark-reads dropped while too many waited").pipe(Effect.annotateLogs({ dropped: count })),
          Queue.offer(ready, undefined)
        )
      }
      waiting.set(mark.conversationId, mark)
      return Effect.asVoid(Queue.offer(ready, undefined))
    })

  return { markReadLater } satisfies ReadMarks
})
