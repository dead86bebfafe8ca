/**
 * The host's sends inside conversations (a workflow's reply, the proxy's, an inbox user's: every send that is not a
 * broadcast's), counted while they are in flight (issue 30 §2). `Outbound` counts them; the broadcasts' sender reads
 * the count and narrows its window while replies are under way, so the host (its event loop, its connections, the
 * database on the same cores) has headroom for them: a reply waits at each of its round trips for whatever else the
 * host runs, and effect resumes fibers in the I/O callbacks that complete them, so it cannot be put first there.
 */
import { Clock, Context, Effect, Layer } from "effect"

export interface Conversing {
  /** Conversational sends in flight now. */
  readonly inFlight: number
  /** When the last one ended (ms, `Clock`); undefined before any did. */
  readonly lastEndedMs: number | undefined
}

export class ConversationalSends extends Context.Service<ConversationalSends, {
  /** Runs a conversational send, counted as in flight until it ends however it ends. */
  readonly track: <A, E, R>(send: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly current: Effect.Effect<Conversing>
}>()("@parley/core/messaging/ConversationalSends") {
  static readonly layer = Layer.sync(ConversationalSends, () => {
    let inFlight = 0
    let lastEndedMs: number | undefined
    return ConversationalSends.of({
      track: (send) =>
        Effect.acquireUseRelease(
          Effect.sync(() => void inFlight++),
          () => send,
          () =>
            Effect.map(Clock.currentTimeMillis, (now) => {
              inFlight--
              lastEndedMs = now
            })
        ),
      current: Effect.sync(() => ({ inFlight, lastEndedMs }))
    })
  })
}
