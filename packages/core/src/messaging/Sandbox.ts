/**
 * The simulated contacts of simulator mode (`/sandbox/inbound`,
 * `/sandbox/outbox`): a contact writes to one of the project's numbers and the
 * simulated network posts a genuine signed webhook to ingestion; the outbox
 * lists what the network delivered to contacts. In cloud mode there is no
 * sandbox (404).
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import type { Principal } from "../projects/Projects.ts"
import { MessageConfigsRepo } from "./numbers/MessageConfigsRepo.ts"
import { NotFound, notFound, type Unprocessable, unprocessable } from "../shared/ApiError.ts"
import type { OutboxEntry } from "../network/SimulatedNetwork.ts"
import { UpstreamSettings } from "./Upstream.ts"

/** Body of `POST /sandbox/inbound`. */
export const SandboxInboundInput = Schema.Struct({
  phone_number_id: Schema.String,
  /** The contact's phone number; may be left out when `user_id` names a business-scoped contact. */
  from: Schema.optionalKey(Schema.String),
  user_id: Schema.optionalKey(Schema.String),
  profile_name: Schema.optionalKey(Schema.String),
  username: Schema.optionalKey(Schema.String),
  /** One network message object: `{ "type": "text", "text": { "body": "hi" } }`. */
  message: Schema.Record(Schema.String, Schema.Unknown)
})
export type SandboxInboundInput = typeof SandboxInboundInput.Type

/** What the simulated network delivered to a contact. */
export const SandboxOutboxEntry = Schema.Struct({
  id: Schema.String,
  phone_number_id: Schema.String,
  to: Schema.NullOr(Schema.String),
  user_id: Schema.String,
  type: Schema.String,
  envelope: Schema.Unknown,
  status: Schema.String,
  accepted_at: Schema.String
})
export type SandboxOutboxEntry = typeof SandboxOutboxEntry.Type

export const toSandboxOutboxEntry = (e: OutboxEntry): SandboxOutboxEntry => ({
  id: e.id,
  phone_number_id: e.phoneNumberId,
  to: e.to ?? null,
  user_id: e.userId,
  type: e.type,
  envelope: e.envelope,
  status: e.status,
  accepted_at: new Date(e.acceptedAt).toISOString()
})

const noSandbox = () => new NotFound({ error: "Not found" })

export class Sandbox extends Context.Service<Sandbox, {
  /** A simulated contact writes; answers the network message id (the webhook is already acknowledged). */
  readonly inbound: (principal: Principal, input: SandboxInboundInput) => Effect.Effect<{ readonly id: string }, NotFound | Unprocessable>
  readonly outbox: (principal: Principal, phoneNumberId: string) => Effect.Effect<ReadonlyArray<OutboxEntry>, NotFound>
}>()("@parley/core/messaging/Sandbox") {
  static readonly layer = Layer.effect(
    Sandbox,
    Effect.gen(function*() {
      const settings = yield* UpstreamSettings
      const configs = yield* MessageConfigsRepo

      /** The simulator, and the number if the caller's project has it connected. */
      const numberOf = (principal: Principal, phoneNumberId: string) =>
        Effect.gen(function*() {
          if (Option.isNone(settings.simulator)) return yield* noSandbox()
          const config = yield* configs.findByPhoneNumberId(phoneNumberId)
          if (Option.isNone(config) || config.value.project_id !== principal.project.id) {
            return yield* notFound("Phone number", phoneNumberId)
          }
          return { simulator: settings.simulator.value, config: config.value }
        })

      const inbound = Effect.fn("Sandbox.inbound")(function*(principal: Principal, input: SandboxInboundInput) {
        const { simulator } = yield* numberOf(principal, input.phone_number_id)
        const result = yield* simulator.inbound(input.phone_number_id, {
          from: input.from,
          user_id: input.user_id,
          profile_name: input.profile_name,
          username: input.username,
          message: input.message
        }).pipe(Effect.catchTag("SimulatorInputError", (e) => Effect.fail(unprocessable(e.message))))
        if (result.blocked) return yield* unprocessable("The number blocked this contact")
        return { id: result.id }
      })

      const outbox = Effect.fn("Sandbox.outbox")(function*(principal: Principal, phoneNumberId: string) {
        const { simulator } = yield* numberOf(principal, phoneNumberId)
        return yield* simulator.outbox(phoneNumberId)
      })

      return Sandbox.of({ inbound, outbox })
    })
  )
}
