/** Structured logs: one JSON line per entry on stdout, level from `PARLEY_LOG_LEVEL` (default Info). */
import { Config, Effect, Layer, Logger, References } from "effect"

export const layerLogging = Layer.unwrap(Effect.gen(function*() {
  const level = yield* Config.LogLevel("PARLEY_LOG_LEVEL").pipe(Config.withDefault("Info" as const))
  return Layer.mergeAll(
    Logger.layer([Logger.consoleJson]),
    Layer.succeed(References.MinimumLogLevel, level)
  )
}))
