/**
 * What every embed token shares (the inbox's and the workflow viewer's, decisions 2.17; issue 31 §3): a random token
 * shown once and kept as its sha256 hash, a name, the origins allowed to frame the page, an optional expiry, and
 * the check that opens a token (active, unexpired, its project enabled), recording its use at most once a minute.
 */
import { Clock, Effect, Option } from "effect"
import { hashKey, Projects } from "../projects/Projects.ts"
import type { Project } from "../projects/Project.ts"
import { type Unprocessable, unprocessable } from "../shared/ApiError.ts"
import { toIso } from "../shared/Time.ts"

export const EMBED_MODES = ["system", "light", "dark"] as const
export type EmbedMode = (typeof EMBED_MODES)[number]
export const EMBED_LANGUAGES = ["en", "es"] as const
export type EmbedLanguage = (typeof EMBED_LANGUAGES)[number]
export type EmbedStatus = "active" | "revoked"

/** `last_used_at` is written at most this often per embed: embedded pages poll, and a write per poll buys nothing. */
export const LAST_USED_RESOLUTION_MS = 60_000

const NAME_MAX = 200

/** The fields of an embed record that opening its token reads. */
export interface EmbedAccessFields {
  readonly id: string
  readonly project_id: string
  readonly status: EmbedStatus
  readonly expires_at: string | null
  readonly last_used_at: string | null
}

/** A new token: `<prefix>_` and 32 random bytes; the prefix tells which kind of embed a token opens. */
export const generateToken = (prefix: string) =>
  Effect.sync(() => `${prefix}_${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url")}`)

/** Field checks of an embed input; `envelope` is the request's key (`inbox_embed`), named in the 422's paths. */
export const embedFieldChecks = (envelope: string) => {
  const fieldError = (field: string, message: string): Unprocessable =>
    unprocessable(`${field} ${message}`, [{ path: `${envelope}.${field}`, message }])

  const checkName = (name: string) => {
    const trimmed = name.trim()
    return trimmed.length === 0 || trimmed.length > NAME_MAX
      ? Effect.fail(fieldError("name", `must be 1-${NAME_MAX} characters`))
      : Effect.succeed(trimmed)
  }

  /** Each entry an origin as browsers send it (`https://host[:port]`, no path); duplicates dropped. */
  const checkOrigins = (origins: ReadonlyArray<string>) => {
    const kept: Array<string> = []
    for (const [i, given] of origins.entries()) {
      const candidate = given.trim().replace(/\/$/, "")
      const url = URL.canParse(candidate) ? new URL(candidate) : undefined
      if (url === undefined || (url.protocol !== "https:" && url.protocol !== "http:") || url.origin !== candidate.toLowerCase()) {
        return Effect.fail(unprocessable(`allowed_origins[${i}] must be an origin such as https://app.example.com`, [
          { path: `${envelope}.allowed_origins[${i}]`, message: "must be an origin such as https://app.example.com" }
        ]))
      }
      if (!kept.includes(url.origin)) kept.push(url.origin)
    }
    return Effect.succeed(kept)
  }

  const checkExpiry = (value: string | null) => {
    if (value === null) return Effect.succeed(null)
    const parsed = toIso(value)
    return parsed === undefined ? Effect.fail(fieldError("expires_at", "must be an ISO 8601 date-time or null")) : Effect.succeed(parsed)
  }

  return { fieldError, checkName, checkOrigins, checkExpiry }
}

/**
 * Opens a token: the embed it names when it carries `prefix`, is active and unexpired and its project is enabled;
 * `None` otherwise (the caller answers its own 401). Records the use through `touch`.
 */
export const openEmbed = <R extends EmbedAccessFields>(
  token: string,
  prefix: string,
  store: {
    readonly findByTokenHash: (hash: string) => Effect.Effect<Option.Option<R>>
    readonly touch: (id: string, at: string) => Effect.Effect<void>
  }
): Effect.Effect<Option.Option<{ readonly embed: R; readonly project: Project }>, never, Projects> => Effect.gen(function*() {
  if (!token.startsWith(`${prefix}_`)) return Option.none()
  const found = yield* store.findByTokenHash(yield* hashKey(token))
  if (Option.isNone(found) || found.value.status !== "active") return Option.none()
  const embed = found.value
  const nowMs = yield* Clock.currentTimeMillis
  if (embed.expires_at !== null && Date.parse(embed.expires_at) <= nowMs) return Option.none()
  const project = yield* (yield* Projects).find(embed.project_id)
  if (Option.isNone(project) || project.value.disabled) return Option.none()
  if (embed.last_used_at === null || Date.parse(embed.last_used_at) + LAST_USED_RESOLUTION_MS <= nowMs) {
    yield* store.touch(embed.id, new Date(nowMs).toISOString())
  }
  return Option.some({ embed, project: project.value })
}).pipe(Effect.withSpan("openEmbed"))
