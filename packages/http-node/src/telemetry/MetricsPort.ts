/**
 * The standalone host's operator port (`PARLEY_METRICS_PORT`, on `PARLEY_METRICS_HOST`, default loopback): `GET
 * /metrics` without a token, for a Prometheus on the same machine or network segment; anything else 404. Off unless
 * the port is set; closed with the scope.
 */
import { OperationalMetrics } from "@parley/core"
import { Config, Context, Effect, Layer, Option } from "effect"
import { createServer } from "node:http"
import type { Parley } from "../embed/Embed.ts"
import { CONTENT_TYPE } from "./MetricsRoute.ts"

export const serveMetricsPort = (parley: Parley) =>
  Effect.gen(function*() {
    const port = yield* Config.option(Config.Port("PARLEY_METRICS_PORT"))
    if (Option.isNone(port)) return Option.none<string>()
    const host = yield* Config.String("PARLEY_METRICS_HOST").pipe(Config.withDefault("127.0.0.1"))
    const built = yield* Layer.build(OperationalMetrics.layer.pipe(Layer.provide(Layer.succeedContext(parley.context))))
    const metrics = Context.get(built, OperationalMetrics)
    // Over Parley's services: its metric registry is the one the scrape reads.
    const scrape = () => parley.runPromise(metrics.scrape)
    const server = createServer((request, response) => {
      const path = (request.url ?? "/").split("?")[0]
      if (request.method !== "GET" || path !== "/metrics") {
        response.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: "Not found" }))
        return
      }
      scrape().then(
        (body) => response.writeHead(200, { "content-type": CONTENT_TYPE }).end(body),
        () => response.writeHead(500, { "content-type": "application/json" }).end(JSON.stringify({ error: "Metrics unavailable" }))
      )
    })
    yield* Effect.acquireRelease(
      Effect.callback<void, Error>((resume) => {
        server.once("error", (error) => resume(Effect.fail(error)))
        server.listen(port.value, host, () => resume(Effect.void))
      }),
      () => Effect.callback<void>((resume) => void server.close(() => resume(Effect.void)))
    )
    return Option.some(`http://${host}:${port.value}/metrics`)
  })
