/**
 * Whether the host serves yet (`/readyz`): its services and workers are built, and the default project's bootstrap
 * is done, so a configured key works. Until then a key the host does not know may be one the bootstrap is about to
 * make: authenticated routes answer 503 with `Retry-After` for it, never a wrong 401.
 */
import { Context, Effect, Layer } from "effect"
import { HttpServerResponse } from "effect/http"

export class Readiness extends Context.Service<Readiness, {
  readonly markReady: Effect.Effect<void>
  readonly isReady: Effect.Effect<boolean>
}>()("@parley/http-node/Readiness") {
  static readonly layer = Layer.sync(Readiness, () => {
    let ready = false
    return Readiness.of({ markReady: Effect.sync(() => void (ready = true)), isReady: Effect.sync(() => ready) })
  })
}

/** 503 `{ "error": "Not ready: <why>" }`, to be asked again in a second. */
export const notReady = (why: string) =>
  HttpServerResponse.jsonUnsafe({ error: `Not ready: ${why}` }, { status: 503, headers: { "retry-after": "1" } })

/**
 * What a request whose key was not found gets: `refusal` (the 401) once the host is ready; before, 503, since the
 * key may be the one the bootstrap has not stored yet.
 */
export const unknownKey = <A, E, R>(
  readiness: Readiness["Service"],
  refusal: Effect.Effect<A, E, R>
): Effect.Effect<A | HttpServerResponse.HttpServerResponse, E, R> =>
  Effect.flatMap(
    readiness.isReady,
    (ready): Effect.Effect<A | HttpServerResponse.HttpServerResponse, E, R> => ready ? refusal : Effect.succeed(notReady("starting"))
  )
