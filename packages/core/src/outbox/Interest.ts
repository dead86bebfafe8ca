/**
 * Which domain events anyone would act on.
 *
 * Some consumers act on an entry only sometimes: webhooks deliver a message
 * status only when a webhook listens to it, and most projects listen to few
 * of the types messaging writes (every send writes several). Such a consumer
 * declares its interest here under its subscriber name, from what it can
 * read cheaply (a cache). Then:
 *
 * - the outbox (`layerSignalingOutbox`) does not write an entry of a
 *   declared type that no declaration wants: nothing would happen to it, so
 *   it costs no row, no take and no job;
 * - the relay asks each subscriber's declaration before queueing its job
 *   (the answer may have changed since the append).
 *
 * Types nobody declared are always written. The declarations come with the
 * capabilities' service layers (`Parley.layerWebhookServices`), so every
 * process that appends knows them, whether or not it runs the workers. A
 * subscriber of a type somebody declared must declare too
 * (`DomainEventSubscribers.subscribe` refuses otherwise), or entries it
 * needs could be skipped.
 *
 * The answers come from caches kept fresh by change signals: a webhook
 * created a few milliseconds before an event may miss it, as it would have
 * missed an event emitted just before it existed.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { DomainEvent } from "../ports/Outbox.ts"

/** Where an entry not built yet would be about: a project's number. */
export interface InterestScope {
  readonly projectId: string
  readonly phoneNumberId: string
}

interface Declaration {
  readonly subscriber: string
  readonly types: ReadonlySet<string>
  readonly wants: (event: DomainEvent) => Effect.Effect<boolean>
  readonly inScope: ((type: string, scope: InterestScope) => Effect.Effect<boolean>) | undefined
}

export class DomainEventInterest extends Context.Service<DomainEventInterest, {
  /**
   * Declares (or replaces) what `subscriber` would act on among entries of `types`; with `inScope`, also whether it
   * could want any entry of a type about a number (answering true whenever `wants` might, for such an entry).
   */
  readonly declare: (
    subscriber: string,
    types: ReadonlyArray<string>,
    wants: (event: DomainEvent) => Effect.Effect<boolean>,
    inScope?: (type: string, scope: InterestScope) => Effect.Effect<boolean>
  ) => Effect.Effect<void>
  /** Whether `subscriber` would act on the entry: its declaration's answer; undeclared, yes. */
  readonly wants: (subscriber: string, event: DomainEvent) => Effect.Effect<boolean>
  /** Whether the entry is worth writing: its type is undeclared, or some declaration wants it. */
  readonly worthWriting: (event: DomainEvent) => Effect.Effect<boolean>
  /**
   * Whether an entry of `type` about `scope` could be worth writing, asked before it is built (its payload and the
   * rows it reads cost more than the answer): false only when the type is declared and every declaration answers
   * from the scope that it wants none there.
   */
  readonly mayWant: (type: string, scope: InterestScope) => Effect.Effect<boolean>
  /** The subscribers that declared an interest in `type`. */
  readonly declarers: (type: string) => ReadonlyArray<string>
}>()("@parley/core/outbox/DomainEventInterest") {
  static readonly layer = Layer.sync(DomainEventInterest, () => {
    const declarations = new Map<string, Declaration>()
    // Asked for every append: the declarations by type are kept ready, rebuilt when one is declared.
    let ofType = new Map<string, ReadonlyArray<Declaration>>()
    const byType = (type: string) => ofType.get(type) ?? []
    const yes = Effect.succeed(true)
    return DomainEventInterest.of({
      declare: (subscriber, types, wants, inScope) =>
        Effect.sync(() => {
          declarations.set(subscriber, { subscriber, types: new Set(types), wants, inScope })
          const next = new Map<string, Array<Declaration>>()
          for (const d of declarations.values()) {
            for (const type of d.types) next.set(type, [...(next.get(type) ?? []), d])
          }
          ofType = next
        }),
      wants: (subscriber, event) => {
        const declaration = declarations.get(subscriber)
        return declaration === undefined || !declaration.types.has(event.type) ? yes : declaration.wants(event)
      },
      worthWriting: (event) => {
        const declared = byType(event.type)
        return declared.length === 0 ? yes : Effect.map(Effect.findFirst(declared, (d) => d.wants(event)), Option.isSome)
      },
      mayWant: (type, scope) => {
        const declared = byType(type)
        return declared.length === 0
          ? yes
          : Effect.map(Effect.findFirst(declared, (d) => (d.inScope === undefined ? yes : d.inScope(type, scope))), Option.isSome)
      },
      declarers: (type) => byType(type).map((d) => d.subscriber)
    })
  })
}
