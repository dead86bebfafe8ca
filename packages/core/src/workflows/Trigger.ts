/** Workflow triggers (decisions 2.6). */
import { Schema } from "effect"
import { documentedEnum } from "../shared/DocumentedEnum.ts"

export const TriggerType = Schema.Literals(["inbound_message", "api_call", "msg_event", "project_event"])
export type TriggerType = typeof TriggerType.Type

export const TriggerOperator = Schema.Literals(["eq", "lt", "lte", "gt", "gte"])
export type TriggerOperator = typeof TriggerOperator.Type

/** Type-specific settings, as stored and shown under `triggerable`. */
export type Triggerable = Readonly<Record<string, unknown>>

export interface TriggerRecord {
  readonly id: string
  readonly project_id: string
  readonly workflow_id: string
  readonly trigger_type: TriggerType
  readonly active: boolean
  readonly display_name: string
  readonly triggerable: Triggerable
  readonly created_at: string
  readonly updated_at: string
}

export const Trigger = Schema.Struct({
  id: Schema.String,
  workflow_id: Schema.String,
  trigger_type: TriggerType,
  active: Schema.Boolean,
  display_name: Schema.String,
  triggerable: Schema.Record(Schema.String, Schema.Unknown),
  created_at: Schema.String,
  updated_at: Schema.String
})
export type Trigger = typeof Trigger.Type

export const toTrigger = (t: TriggerRecord): Trigger => ({
  id: t.id,
  workflow_id: t.workflow_id,
  trigger_type: t.trigger_type,
  active: t.active,
  display_name: t.display_name,
  triggerable: t.triggerable,
  created_at: t.created_at,
  updated_at: t.updated_at
})

/** Write form of one trigger (inside `trigger` or the `triggers` array). */
export const TriggerInput = Schema.Struct({
  trigger_type: documentedEnum(TriggerType.literals),
  active: Schema.optionalKey(Schema.Boolean),
  phone_number_id: Schema.optionalKey(Schema.NullOr(Schema.String)),
  event: Schema.optionalKey(Schema.NullOr(Schema.String)),
  event_name: Schema.optionalKey(Schema.NullOr(Schema.String)),
  property_key: Schema.optionalKey(Schema.NullOr(Schema.String)),
  operator: Schema.optionalKey(Schema.NullOr(documentedEnum(TriggerOperator.literals))),
  property_value: Schema.optionalKey(Schema.Unknown)
})
export type TriggerInput = typeof TriggerInput.Type
