/**
 * The host's work inside conversations (issue 30 §2): its sends that are not a broadcast's (a workflow's reply, the
 * proxy's, an inbox user's), counted while they are in flight, and contacts' messages as they arrive, since a reply
 * follows them (the routing and the run's step come before the reply's send). `Outbound` counts the sends and
 * ingestion the messages; the broadcasts' sender reads them and narrows its window while replies are under way, so
 * the host (its event loop, its connections, the database on the same cores) has headroom for them: a reply waits at
 * each of its round trips for whatever else the host runs, and effect resumes fibers in the I/O callbacks that
 * complete them, so it cannot be put first there.
 */
import { Clock, Context, Effect, Layer } from "effect"

export interface Conversing {
  /** Conversational sends in flight now. */
  readonly inFlight: number
  /** When conversational work was last seen (ms, `Clock`): a send ended or a message arrived; undefined before any. */
  readonly lastSeenMs: number | undefined
}

export class ConversationalSends extends Context.Service<ConversationalSends, {
  /** Runs a conversational send, counted as in flight until it ends however it ends. */
  readonly track: <A, E, R>(send: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** A contact's message was acknowledged: its reply is under way from now, before its send starts. */
  readonly arrived: Effect.Effect<void>
  readonly current: Effect.Effect<Conversing>
}>()("@parley/core/messaging/ConversationalSends") {
  static readonly layer = Layer.sync(ConversationalSends, () => {
    let inFlight = 0
    let lastSeenMs: number | undefined
    return ConversationalSends.of({
      track: (send) =>
        Effect.acquireUseRelease(
          Effect.sync(() => void inFlight++),
          () => send,
          () =>
            Effect.map(Clock.currentTimeMillis, (now) => {
              inFlight--
              lastSeenMs = now
            })
        ),
      arrived: Effect.map(Clock.currentTimeMillis, (now) => {
        lastSeenMs = now
      }),
      current: Effect.sync(() => ({ inFlight, lastSeenMs }))
    })
  })
}
