/**
 * The health check body of a number (decisions 2.16, 4.8): each check's
 * outcome, the status rule that folds them, and the state the checks keep
 * between runs (the 3-minute cache and the backoff after access errors).
 */
import { Schema } from "effect"

export const HealthStatusValue = Schema.Literals(["healthy", "degraded", "unhealthy", "error"])
export type HealthStatusValue = typeof HealthStatusValue.Type

export const HealthCheck = Schema.Struct({
  /** Null when the check could not tell (a connection status the network reports as unknown). */
  passed: Schema.NullOr(Schema.Boolean),
  details: Schema.Record(Schema.String, Schema.Unknown),
  error: Schema.optionalKey(Schema.String)
})
export type HealthCheck = typeof HealthCheck.Type

export const HealthReport = Schema.Struct({
  status: HealthStatusValue,
  timestamp: Schema.String,
  /** Seconds until the number is checked again (held by the backoff, or after a check that ran out of time). */
  retry_after: Schema.optionalKey(Schema.Number),
  error: Schema.optionalKey(Schema.String),
  checks: Schema.optionalKey(Schema.Record(Schema.String, HealthCheck))
})
export type HealthReport = typeof HealthReport.Type

/** Which checks make the number unhealthy when they fail; every other one only degrades it (decisions 2.16). */
export type CheckWeight = "critical" | "degrading"

/** Unhealthy when a critical check failed, else degraded when any failed, else healthy (`passed` null never fails). */
export const foldStatus = (
  checks: ReadonlyArray<{ readonly check: HealthCheck; readonly weight: CheckWeight }>
): HealthStatusValue =>
  checks.some(({ check, weight }) => weight === "critical" && check.passed === false)
    ? "unhealthy"
    : checks.some(({ check }) => check.passed === false)
    ? "degraded"
    : "healthy"

/** What the checks of one number keep between runs (`NumberHealthRepo`). */
export interface NumberHealthState {
  readonly msg_config_id: string
  /**
   * Digest of the credentials the state was obtained with (number, business account, token): a state of other
   * credentials is void, so a config change clears the cache and a reconnect resets the backoff.
   */
  readonly credentials: string
  /** The last answer of a run that finished, and when it ran; none before the first. */
  readonly report: HealthReport | null
  readonly checked_at: string | null
  /** Access or token failures in a row (0 after a run without one). */
  readonly failures: number
  /** No run before this instant (the backoff); null when not held. */
  readonly held_until: string | null
}
