/** Messaging's `NumberTriggers` answered from the stored triggers. */
import { Effect, Layer } from "effect"
import { NumberTriggers } from "../messaging/numbers/NumberTriggers.ts"
import { TriggersRepo } from "./WorkflowsRepo.ts"

export const layerNumberTriggers = Layer.effect(
  NumberTriggers,
  Effect.gen(function*() {
    const triggers = yield* TriggersRepo
    return NumberTriggers.of({
      removeFor: Effect.fnUntraced(function*(projectId: string, phoneNumberId: string) {
        for (const type of ["inbound_message", "msg_event"] as const) {
          for (const { trigger } of yield* triggers.listByType(projectId, type)) {
            if ((trigger.triggerable as { readonly phone_number_id?: unknown }).phone_number_id === phoneNumberId) {
              yield* triggers.delete(projectId, trigger.id)
            }
          }
        }
      })
    })
  })
)
