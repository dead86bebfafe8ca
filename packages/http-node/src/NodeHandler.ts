/**
 * Parley as a plain Node request handler, for teams that already run a
 * `node:http` server (or Express, Fastify's raw handler, ...) and mount
 * Parley beside their own routes instead of running the standalone host.
 *
 * The handler answers every route of the host (Platform API, older surface,
 * `/openapi.json`, `/docs`, `/healthz`, and 404s in the spec's error shape);
 * the caller decides which requests reach it.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Layer, ManagedRuntime, Scope } from "effect"
import { HttpRouter } from "effect/http"
import type { IncomingMessage, ServerResponse } from "node:http"
import * as Host from "./Host.ts"

/**
 * What the host needs from the caller: storage, ids, job queue (`layerPorts`
 * for Postgres, `Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)` for demos).
 * The router and Node's platform services are provided here.
 */
export type HostPorts = Exclude<
  Layer.Services<ReturnType<typeof Host.layer>>,
  HttpRouter.HttpRouter | Layer.Success<typeof NodeHttpServer.layerHttpServices>
>

export interface NodeHandler {
  readonly handler: (request: IncomingMessage, response: ServerResponse) => void
  /** Stops in-flight requests and releases the ports (closes pools, ...). */
  readonly dispose: () => Promise<void>
}

class Handler extends Context.Service<Handler, NodeHandler["handler"]>()("@parley/http-node/NodeHandler") {}

/** The host's routes over `ports`, as a Node handler. Resolves once the ports and services are built. */
export const makeNodeHandler = async <E>(options: {
  readonly publicUrl: string
  readonly ports: Layer.Layer<HostPorts, E>
  /**
   * Shares layer instances with the caller's own `ManagedRuntime`s built with
   * the same memo map: pass it to reach the very ports the handler uses (the
   * same memory store, the same database pool), e.g. to bootstrap a project.
   */
  readonly memoMap?: Layer.MemoMap | undefined
}): Promise<NodeHandler> => {
  const handlerLayer = Layer.effect(
    Handler,
    Effect.gen(function*() {
      const scope = yield* Scope.Scope
      const httpEffect = yield* HttpRouter.toHttpEffect(Host.layer({ publicUrl: options.publicUrl }))
      return yield* NodeHttpServer.makeHandler(httpEffect, { scope })
    })
  ).pipe(Layer.provide([options.ports, NodeHttpServer.layerHttpServices]))
  const runtime = ManagedRuntime.make(handlerLayer, { memoMap: options.memoMap })
  const handler = await runtime.runPromise(Handler.useSync((handler) => handler)).catch(async (error: unknown) => {
    await runtime.dispose()
    throw error
  })
  return { handler, dispose: () => runtime.dispose() }
}
