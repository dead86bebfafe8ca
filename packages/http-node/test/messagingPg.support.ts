/**
 * Test support for messaging on the production ports without a host: the
 * messaging services (and `more` beside them) over a fresh PostgreSQL
 * database and the pg-boss queue, the simulator as the network, one project
 * with its simulated number connected. Built before the suite, closed after.
 */
import { Ids, layerMessagingServices, type MessageConfigRecord, MessageConfigs, Projects } from "@parley/core"
import { layerFromUrl, layerJobQueue, layerStorage } from "@parley/store-pg"
import { Context, Effect, Exit, Layer, Option, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { freshDatabase } from "../../store-pg/test/pg.ts"
import { SimulatedUpstream } from "@parley/core/simulators"

export interface MessagingOnPostgres {
  /** The services and ports, once the suite started. */
  readonly context: Context.Context<any>
  readonly projectId: string
  /** The project's simulated number. */
  readonly config: MessageConfigRecord
}

export const messagingOnPostgres = <A, E>(more: Layer.Layer<A, E, any> = Layer.empty as any) => {
  const env = {} as { -readonly [K in keyof MessagingOnPostgres]: MessagingOnPostgres[K] }
  let close = () => Promise.resolve()
  beforeAll(async () => {
    const scope = Effect.runSync(Scope.make())
    await Effect.runPromise(Effect.gen(function*() {
      const url = yield* freshDatabase
      env.context = yield* Layer.build(
        Layer.mergeAll(Projects.layer, more).pipe(
          Layer.provideMerge(layerMessagingServices),
  Layer.provideMerge(SimulatedUpstream.layerSimulatorConfig),
          Layer.provideMerge(Layer.mergeAll(layerStorage, layerJobQueue({ pollingIntervalSeconds: 0.5 }), Ids.layer)),
          Layer.provideMerge(layerFromUrl(url))
        )
      ) as Effect.Effect<Context.Context<any>, never, Scope.Scope>
      const project = yield* Context.get(env.context, Projects).create("Acme")
      env.projectId = project.id
      env.config = Option.getOrThrow(yield* Context.get(env.context, MessageConfigs).bootstrap(project.id))
    }).pipe(Effect.provideService(Scope.Scope, scope)))
    close = () => Effect.runPromise(Scope.close(scope, Exit.void))
  }, 120_000)
  afterAll(() => close())
  return {
    env: env as MessagingOnPostgres,
    run: <A, E>(effect: Effect.Effect<A, E, any>) =>
      Effect.runPromise(Effect.provideContext(effect, env.context) as Effect.Effect<A, E>),
    runExit: <A, E>(effect: Effect.Effect<A, E, any>) =>
      Effect.runPromiseExit(Effect.provideContext(effect, env.context) as Effect.Effect<A, E>)
  }
}
