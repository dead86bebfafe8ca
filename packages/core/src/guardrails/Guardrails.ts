/**
 * The settings of guardrails (issue 32): the project's and each number's (keywords, confirmations, quiet hours,
 * frequency caps; a number's null field takes the project's), and contacts' own time zones.
 */
import { Clock, Context, Effect, Layer } from "effect"
import type { NotFound, Unprocessable } from "../shared/ApiError.ts"
import { notFound, unprocessable } from "../shared/ApiError.ts"
import { type GuardrailSettingsInput, type GuardrailSettingsRecord } from "./Guardrail.ts"
import { ActiveGuardrails } from "./ActiveGuardrails.ts"
import { GuardrailsRepo } from "./GuardrailsRepo.ts"
import { recipientOf } from "./OptOuts.ts"
import { isTimeZone } from "./QuietHours.ts"
import { SendFacts } from "./SendFacts.ts"

export class Guardrails extends Context.Service<Guardrails, {
  readonly listSettings: (projectId: string) => Effect.Effect<ReadonlyArray<GuardrailSettingsRecord>>
  /** Replaces the settings of the project (`msgConfigId` null) or of one of its numbers. */
  readonly putSettings: (
    projectId: string,
    msgConfigId: string | null,
    input: GuardrailSettingsInput
  ) => Effect.Effect<GuardrailSettingsRecord, Unprocessable>
  /** Sets a contact's own time zone (an IANA name), which its quiet hours are read in. */
  readonly setTimeZone: (projectId: string, phoneNumber: string, timeZone: string) => Effect.Effect<void, Unprocessable>
  readonly clearTimeZone: (projectId: string, phoneNumber: string) => Effect.Effect<void, NotFound | Unprocessable>
}>()("@parley/core/guardrails/Guardrails") {
  static readonly layer = Layer.effect(
    Guardrails,
    Effect.gen(function*() {
      const repo = yield* GuardrailsRepo
      const active = yield* ActiveGuardrails
      const facts = yield* SendFacts
      const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

      const recipient = (phoneNumber: string) => {
        const found = recipientOf(phoneNumber)
        return found === undefined
          ? Effect.fail(unprocessable("phone_number must be a phone number (7-15 digits) or a business-scoped id", [
            { path: "phone_number", message: "not a phone number or business-scoped id" }
          ]))
          : Effect.succeed(found)
      }

      const putSettings = Effect.fn("Guardrails.putSettings")(function*(
        projectId: string,
        msgConfigId: string | null,
        input: GuardrailSettingsInput
      ) {
        if (msgConfigId !== null && (yield* facts.phoneNumberIdOf(projectId, msgConfigId)) === undefined) {
          return yield* unprocessable("msg_config_id is not a number of this project", [{ path: "msg_config_id", message: "unknown" }])
        }
        const zone = input.quiet_hours?.default_time_zone
        if (zone !== undefined && zone !== null && !isTimeZone(zone)) {
          return yield* unprocessable("quiet_hours.default_time_zone must be an IANA time zone", [
            { path: "quiet_hours.default_time_zone", message: "unknown time zone" }
          ])
        }
        const record: GuardrailSettingsRecord = { ...input, project_id: projectId, msg_config_id: msgConfigId, updated_at: yield* now }
        yield* repo.putSettings(record)
        yield* active.forget
        return record
      })

      const setTimeZone = Effect.fn("Guardrails.setTimeZone")(function*(projectId: string, phoneNumber: string, timeZone: string) {
        const key = yield* recipient(phoneNumber)
        if (!isTimeZone(timeZone)) {
          return yield* unprocessable("time_zone must be an IANA time zone", [{ path: "time_zone", message: "unknown time zone" }])
        }
        yield* repo.putZone({ project_id: projectId, recipient: key, time_zone: timeZone, updated_at: yield* now })
      })

      const clearTimeZone = Effect.fn("Guardrails.clearTimeZone")(function*(projectId: string, phoneNumber: string) {
        const key = yield* recipient(phoneNumber)
        if (!(yield* repo.deleteZone(projectId, key))) return yield* notFound("Contact time zone", key)
      })

      return Guardrails.of({ listSettings: repo.listSettings, putSettings, setTimeZone, clearTimeZone })
    })
  )
}
