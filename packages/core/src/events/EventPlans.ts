/**
 * Project events on a project's plan (spec "Errors", decisions 7.1): whether
 * they are included, the monthly allowance and whether overage is metered,
 * and the retention window. Projects without stored settings get
 * `EventPlanDefaults`. Other capabilities gated by the same plan (webhook
 * subscriptions to `project.event`) ask `requireEvents`.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { EventPlansRepo } from "./EventsRepo.ts"
import { Projects } from "../projects/Projects.ts"
import { invalid, type NotFound, notFound, PaymentRequired, type Unprocessable } from "../shared/ApiError.ts"
import { nowIso } from "../shared/Time.ts"
import type { EventPlan } from "./Event.ts"

/** The plan of a project that never had one set. */
export class EventPlanDefaults extends Context.Reference<EventPlan>("@parley/core/events/EventPlanDefaults", {
  defaultValue: () => ({ events_enabled: true, monthly_allowance: 100_000, metered_overage: false, retention_days: 365 })
}) {}

export const MAX_RETENTION_DAYS = 3650

/** The plan with this calendar month's (UTC) emission count. */
export interface EventPlanStatus extends EventPlan {
  readonly project_id: string
  readonly period: string
  readonly used_this_period: number
}

/** Calendar month (UTC) an emission at `ms` counts against, e.g. `2026-03`. */
export const allowancePeriod = (ms: number): string => new Date(ms).toISOString().slice(0, 7)

export const planRequired = () =>
  new PaymentRequired({ error: "Project events are not included in this project's plan", code: "plan_required" })
export const allowanceExceeded = () =>
  new PaymentRequired({ error: "Monthly project event allowance exceeded", code: "allowance_exceeded" })

export class EventPlans extends Context.Service<EventPlans, {
  readonly get: (projectId: string) => Effect.Effect<EventPlanStatus, NotFound>
  /** Changes the given settings; the others keep their value (or default). */
  readonly set: (projectId: string, changes: Partial<EventPlan>) => Effect.Effect<EventPlanStatus, NotFound | Unprocessable>
  /** The project's plan: its stored settings or the defaults. */
  readonly effective: (projectId: string) => Effect.Effect<EventPlan>
  /** 402 `plan_required` unless project events are on the project's plan. */
  readonly requireEvents: (projectId: string) => Effect.Effect<EventPlan, PaymentRequired>
  /**
   * Counts one emission against this month's allowance; 402
   * `allowance_exceeded` when it is used up and overage is not metered. Run it
   * inside the emission's transaction, so a refused or failed emission does
   * not count.
   */
  readonly consumeAllowance: (projectId: string, plan: EventPlan, atMs: number) => Effect.Effect<void, PaymentRequired>
  /**
   * Counts one emission per plan (each as read by its emitter) against the
   * month of `atMs`, in one step; false when one of them, counted in this
   * order, would be refused: then roll the transaction back and emit them
   * one by one.
   */
  readonly consumeAllowances: (
    projectId: string,
    plans: ReadonlyArray<EventPlan>,
    atMs: number
  ) => Effect.Effect<boolean>
}>()("@parley/core/events/EventPlans") {
  static readonly layer = Layer.effect(
    EventPlans,
    Effect.gen(function*() {
      const repo = yield* EventPlansRepo
      const projects = yield* Projects
      const defaults = yield* EventPlanDefaults

      const effective = (projectId: string) =>
        Effect.map(repo.find(projectId), Option.match({
          onNone: (): EventPlan => defaults,
          onSome: ({ project_id: _, updated_at: __, ...plan }): EventPlan => plan
        }))

      const status = Effect.fnUntraced(function*(projectId: string, plan: EventPlan) {
        const period = allowancePeriod(yield* Clock.currentTimeMillis)
        return { project_id: projectId, ...plan, period, used_this_period: yield* repo.usage(projectId, period) }
      })

      const ensureProject = (projectId: string) =>
        Effect.flatMap(projects.find(projectId), (found) => Option.isSome(found) ? Effect.void : Effect.fail(notFound("Project", projectId)))

      const check = (changes: Partial<EventPlan>) => {
        const allowance = changes.monthly_allowance
        if (allowance !== undefined && (!Number.isSafeInteger(allowance) || allowance < 0)) {
          return Effect.fail(invalid("monthly_allowance", "must be a whole number >= 0"))
        }
        const days = changes.retention_days
        if (days !== undefined && (!Number.isSafeInteger(days) || days < 1 || days > MAX_RETENTION_DAYS)) {
          return Effect.fail(invalid("retention_days", `must be between 1 and ${MAX_RETENTION_DAYS}`))
        }
        return Effect.void
      }

      return EventPlans.of({
        get: Effect.fn("EventPlans.get")(function*(projectId: string) {
          yield* ensureProject(projectId)
          return yield* status(projectId, yield* effective(projectId))
        }),
        set: Effect.fn("EventPlans.set")(function*(projectId: string, changes: Partial<EventPlan>) {
          yield* ensureProject(projectId)
          yield* check(changes)
          const current = yield* effective(projectId)
          const next: EventPlan = {
            events_enabled: changes.events_enabled ?? current.events_enabled,
            monthly_allowance: changes.monthly_allowance ?? current.monthly_allowance,
            metered_overage: changes.metered_overage ?? current.metered_overage,
            retention_days: changes.retention_days ?? current.retention_days
          }
          yield* repo.save({ project_id: projectId, ...next, updated_at: yield* nowIso })
          return yield* status(projectId, next)
        }),
        effective,
        requireEvents: Effect.fn("EventPlans.requireEvents")(function*(projectId: string) {
          const plan = yield* effective(projectId)
          if (!plan.events_enabled) return yield* planRequired()
          return plan
        }),
        consumeAllowance: Effect.fn("EventPlans.consumeAllowance")(function*(projectId: string, plan: EventPlan, atMs: number) {
          const count = yield* repo.countEmission(projectId, allowancePeriod(atMs))
          if (count > plan.monthly_allowance && !plan.metered_overage) return yield* allowanceExceeded()
        }),
        consumeAllowances: Effect.fn("EventPlans.consumeAllowances")(
          function*(projectId: string, plans: ReadonlyArray<EventPlan>, atMs: number) {
            const count = yield* repo.countEmission(projectId, allowancePeriod(atMs), plans.length)
            const before = count - plans.length
            return plans.every((plan, i) => plan.metered_overage || before + i + 1 <= plan.monthly_allowance)
          }
        )
      })
    })
  )
}
