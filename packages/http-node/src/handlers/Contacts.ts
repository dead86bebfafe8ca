/** Contact erasure: one service call; the 204 is answered once the erasure and its job are stored. */
import { ContactErasures, CurrentPrincipal, ParleyApi } from "@parley/core"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"

export const MsgContactsHandlers = HttpApiBuilder.group(
  ParleyApi,
  "msgContacts",
  Effect.fn(function*(handlers) {
    const erasures = yield* ContactErasures
    return handlers.handle("erase", ({ params }) =>
      Effect.gen(function*() {
        const principal = yield* CurrentPrincipal
        yield* erasures.request(principal.project.id, params.identifier)
      }))
  })
)
