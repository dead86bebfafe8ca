/**
 * The floor of Parley's HTTP stack: effect's own `HttpApi` + `HttpApiBuilder` served by `@effect/platform-node` (the
 * versions Parley runs), ONE endpoint `GET /platform/v1/workflows/:id` answering the given JSON, no storage, no
 * authentication, no request log. With `middleware`, the endpoint carries one `HttpApiMiddleware` that passes the
 * request through: what the middleware machinery alone costs. What separates Parley's GET from this is Parley's own;
 * what separates this from bare `node:http` is effect's platform, which no host code can remove.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer, Schema } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware } from "effect/http-api"
import * as Http from "node:http"

class PassThrough extends HttpApiMiddleware.Service<PassThrough>()("bench/effectFloor/PassThrough") {}

const get = HttpApiEndpoint.get("get", "/platform/v1/workflows/:id", {
  params: { id: Schema.String },
  success: Schema.Unknown
})

const plainApi = HttpApi.make("floor").add(HttpApiGroup.make("workflows").add(get))
const middlewareApi = HttpApi.make("floor").add(HttpApiGroup.make("workflows").add(get.middleware(PassThrough)))

/** Serves the floor on a loopback port for the caller's scope; answers its URL prefix (`http://127.0.0.1:<port>`). */
export const startEffectFloor = (options: { readonly body: string; readonly middleware: boolean }) =>
  Effect.gen(function*() {
    const value: unknown = JSON.parse(options.body)
    const api = options.middleware
      ? HttpApiBuilder.layer(middlewareApi).pipe(
        Layer.provide(HttpApiBuilder.group(middlewareApi, "workflows", (h) => h.handle("get", () => Effect.succeed(value)))),
        Layer.provide(Layer.succeed(PassThrough, (effect) => effect))
      )
      : HttpApiBuilder.layer(plainApi).pipe(
        Layer.provide(HttpApiBuilder.group(plainApi, "workflows", (h) => h.handle("get", () => Effect.succeed(value))))
      )
    const context = yield* Layer.build(
      HttpRouter.serve(api, { disableLogger: true, disableListenLog: true }).pipe(
        Layer.provideMerge(NodeHttpServer.layer(Http.createServer, { port: 0, host: "127.0.0.1" }))
      )
    )
    return yield* HttpServer.addressFormattedWith(Effect.succeed).pipe(Effect.provideContext(context))
  })
