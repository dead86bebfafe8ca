/** The triggers set on a number (`inbound_message`, `msg_event`), which go with it when it is disconnected. */
import { Effect } from "effect"
import type { TriggersRepo } from "./WorkflowsRepo.ts"

export const removeNumberTriggers = Effect.fnUntraced(function*(
  triggers: TriggersRepo["Service"],
  projectId: string,
  phoneNumberId: string
) {
  for (const type of ["inbound_message", "msg_event"] as const) {
    for (const { trigger } of yield* triggers.listByType(projectId, type)) {
      if ((trigger.triggerable as { readonly phone_number_id?: unknown }).phone_number_id === phoneNumberId) {
        yield* triggers.delete(projectId, trigger.id)
      }
    }
  }
})
