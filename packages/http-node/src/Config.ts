/** The standalone host's settings, read from the environment (see the README's configuration table). */
import { Config, Effect, Option, Redacted } from "effect"

export interface HostConfig {
  readonly host: string
  readonly port: number
  readonly publicUrl: string
  /** An operator-chosen key for the default project (scripts, CI); never logged. */
  readonly apiKey: Option.Option<Redacted.Redacted<string>>
}

export const HostConfig = Effect.gen(function*() {
  const host = yield* Config.String("HOST").pipe(Config.withDefault("127.0.0.1"))
  const port = yield* Config.Port("PORT").pipe(Config.withDefault(4000))
  const display = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host
  const publicUrl = yield* Config.String("PARLEY_PUBLIC_URL").pipe(Config.withDefault(`http://${display}:${port}`))
  const apiKey = yield* Config.option(Config.Redacted("PARLEY_API_KEY"))
  return {
    host,
    port,
    publicUrl: publicUrl.replace(/\/+$/, ""),
    apiKey: Option.filter(apiKey, (k) => Redacted.value(k).length > 0)
  } satisfies HostConfig
})
