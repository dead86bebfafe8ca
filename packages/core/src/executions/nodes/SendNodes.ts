/**
 * The send nodes (decisions 2.3.1–2.3.3) and the agent's sends: addressed,
 * built (AI fields filled first, 2.3.14) and handed to the engine as a
 * pending send, which it records before it sends.
 */
import { Effect, Option, Predicate } from "effect"
import { Templates } from "../../messaging/templates/Templates.ts"
import { Messaging } from "../../messaging/Messaging.ts"
import type { MessageConfigRecord } from "../../messaging/numbers/MessageConfig.ts"
import { phoneDigits } from "../../messaging/numbers/MessageConfig.ts"
import type { PendingSend } from "../Execution.ts"
import { secretsUsed } from "../Interpolation.ts"
import { interactiveEnvelope, textEnvelope } from "../Envelopes.ts"
import { TemplateMismatch, templateComponents, templateEnvelope } from "../TemplateEnvelope.ts"
import { follow, type StepOutcome, StepFailed } from "../Step.ts"
import { aiFieldsOf, generateAiFields, withAiValues } from "../ai/AiFields.ts"
import { configTexts, contextTexts, fail, type StepInput, text, value } from "./NodeInput.ts"

/** Sender resolution (decisions 2.3): node number, node config, the run's number, the API start's config. */
const resolveSender = Effect.fnUntraced(function*(input: StepInput) {
  const messaging = yield* Messaging
  const config = input.node.data.config
  const projectId = input.execution.project_id
  const phoneNumberId = configTexts(config).phone_number_id
  if (phoneNumberId !== undefined) return yield* messaging.findNumberOf(projectId, phoneNumberId)
  const msgConfigId = configTexts(config).msg_config_id
  if (msgConfigId !== undefined) return yield* messaging.findNumber(projectId, msgConfigId)
  const own = input.execution.msg_config_id ?? contextTexts(input.execution.execution_context.system).trigger_msg_config_id
  if (own !== undefined) {
    return input.sender?.id === own && input.sender.project_id === projectId ? Option.some(input.sender) : yield* messaging.findNumber(projectId, own)
  }
  return Option.none<MessageConfigRecord>()
})

/** Destination (decisions 2.3): `to_phone_number`, the contact's number, else its business-scoped id. */
const resolveRecipient = Effect.fnUntraced(function*(input: StepInput) {
  const ctx = input.execution.execution_context
  const override = configTexts(input.node.data.config).to_phone_number
  if (override !== undefined) {
    const digits = phoneDigits(yield* text(override, ctx, input.secrets))
    return digits.length > 0 ? Option.some({ to: digits }) : Option.none()
  }
  const phone = contextTexts(ctx.context).phone_number
  if (phone !== undefined && phoneDigits(phone).length > 0) return Option.some({ to: phoneDigits(phone) })
  const recipient = contextTexts(ctx.context).recipient
  return recipient !== undefined ? Option.some({ recipient }) : Option.none<{ to: string } | { recipient: string }>()
})

/** The pending send of `message` from `sender` to `recipient`: recorded by the engine before it sends. */
const pendingSend = (
  input: StepInput,
  sender: MessageConfigRecord,
  recipient: { to: string } | { recipient: string },
  message: Record<string, unknown>
): PendingSend => {
  const key = `${input.execution.id}:${input.execution.step_seq}`
  return {
    kind: "send",
    key,
    node_id: input.node.id,
    message_id: "",
    msg_config_id: sender.id,
    to: "to" in recipient ? recipient.to : recipient.recipient,
    envelope: {
      messaging_product: "whatsapp",
      recipient_type: "individual",
      ...recipient,
      ...message,
      biz_opaque_callback_data: key
    },
    started_at: input.now
  }
}

/** An agent's message (decisions 2.3.10), addressed as the send nodes address theirs; None without sender or recipient. */
export const agentSend = Effect.fnUntraced(function*(input: StepInput, message: Record<string, unknown>) {
  const sender = yield* resolveSender(input)
  const recipient = yield* resolveRecipient(input)
  if (Option.isNone(sender) || Option.isNone(recipient)) return Option.none<PendingSend>()
  return Option.some(pendingSend(input, sender.value, recipient.value, message))
})

const sendStep = <R>(
  action: "send_text" | "send_template" | "send_interactive",
  build: (input: StepInput, sender: MessageConfigRecord) => Effect.Effect<Record<string, unknown>, StepFailed, R>
) =>
  Effect.fnUntraced(function*(input: StepInput) {
    const ctx = input.execution.execution_context
    const hasOverride = configTexts(input.node.data.config).to_phone_number !== undefined
    if (input.execution.observer && !hasOverride) {
      return follow(ctx, [{ event_type: "action_skipped", payload: { action, reason: "observer" } }])
    }
    const sender = yield* resolveSender(input)
    if (Option.isNone(sender)) return yield* fail("No sender number")
    const recipient = yield* resolveRecipient(input)
    if (Option.isNone(recipient)) return yield* fail("No recipient")
    const values = yield* generateAiFields(input, aiFieldsOf(input.node))
    const message = yield* build({ ...input, node: withAiValues(input.node, values) }, sender.value)
    const outcome: StepOutcome = {
      context: ctx,
      events: [],
      next: { _tag: "Perform", pending: pendingSend(input, sender.value, recipient.value, message), sender: sender.value },
      secrets: secretsUsed(input.node.data.config, input.secrets)
    }
    return outcome
  })

export const sendText = sendStep("send_text", (input) =>
  Effect.gen(function*() {
    const raw = input.node.data.config.message
    const body = Predicate.isString(raw)
      ? yield* text(raw, input.execution.execution_context, input.secrets)
      : JSON.stringify(yield* value(raw, input.execution.execution_context, input.secrets))
    if (body.length > 4096) return yield* fail("Message is longer than 4096 characters")
    return textEnvelope(body)
  }))

export const sendInteractive = sendStep("send_interactive", (input) =>
  Effect.gen(function*() {
    const config = yield* value(input.node.data.config, input.execution.execution_context, input.secrets)
    return yield* interactiveEnvelope(config as Record<string, unknown>, input.execution.id).pipe(
      Effect.mapError((message) => new StepFailed({ message }))
    )
  }))

/** `send_template` (decisions 2.3.3): the mirrored template, read again from the network, must be approved now. */
export const sendTemplate = sendStep("send_template", (input, sender) =>
  Effect.gen(function*() {
    const templates = yield* Templates
    const config = input.node.data.config
    const found = yield* templates.forSend(input.execution.project_id, configTexts(config).template_id ?? "")
    if (Option.isNone(found)) return yield* fail("Template not found", "template_not_found")
    const t = found.value
    if (t.status !== "approved") {
      return yield* fail(`Template ${t.name} (${t.language}) is not approved: its status is ${t.status}`, "template_not_approved")
    }
    if (t.business_account_id !== sender.business_account_id) {
      return yield* fail(`Template ${t.name} belongs to another business account than the sender number`, "template_account_mismatch")
    }
    const parameters = yield* value(config.parameters, input.execution.execution_context, input.secrets)
    const components = templateComponents(t, parameters)
    if (components instanceof TemplateMismatch) return yield* fail(components.message, "template_parameter_mismatch")
    return templateEnvelope(t, components)
  }))
