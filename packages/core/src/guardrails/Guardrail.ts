/**
 * The records of conversation guardrails (issue 32 §1, §2) and their wire forms: opt-outs (a contact that stopped a
 * number's marketing messages, or every number's of the project), the settings of a project or one number (opt-out
 * and resubscribe keywords with their confirmations, quiet hours, marketing frequency caps), and a contact's own time
 * zone.
 */
import { Schema } from "effect"
import { described } from "../shared/Described.ts"
import { QuietHoursWindow } from "./QuietHours.ts"

/** Why a send was not made: the step event's, the API answer's and log search's `code`. */
export type WithheldReason = "opted_out" | "quiet_hours" | "frequency_cap"

/** A send the guardrails did not let through, and why; `until` when it may go later (quiet hours). */
export interface Withheld {
  readonly reason: WithheldReason
  readonly message: string
  readonly until: string | null
}

export const OPT_OUT_SOURCES = ["keyword", "network", "api"] as const
export type OptOutSource = (typeof OPT_OUT_SOURCES)[number]

export interface OptOutRecord {
  readonly id: string
  readonly project_id: string
  /** The number it applies to; null: every number of the project. */
  readonly msg_config_id: string | null
  /** The contact's phone number digits (or business-scoped user id). */
  readonly recipient: string
  readonly source: OptOutSource
  /** The keyword the contact wrote (`keyword`), else null. */
  readonly keyword: string | null
  readonly created_at: string
}

export const OptOut = Schema.Struct(described({
  id: Schema.String,
  msg_config_id: Schema.NullOr(Schema.String),
  phone_number: Schema.String,
  source: Schema.Literals(OPT_OUT_SOURCES),
  keyword: Schema.NullOr(Schema.String),
  created_at: Schema.String
}, {
  msg_config_id: "The number whose marketing messages the contact stopped; null: every number of the project",
  phone_number: "The contact's phone number (digits) or business-scoped id",
  source: "`keyword` (the contact wrote one), `network` (the network refused a send with 131050) or `api`",
  keyword: "The keyword the contact wrote"
})).annotate({ identifier: "OptOut" })
export type OptOut = typeof OptOut.Type

export const toOptOut = (r: OptOutRecord): OptOut => ({
  id: r.id,
  msg_config_id: r.msg_config_id,
  phone_number: r.recipient,
  source: r.source,
  keyword: r.keyword,
  created_at: r.created_at
})

export const OptOutCreateInput = Schema.Struct({
  phone_number: Schema.String.annotate({ description: "The contact's phone number (digits with `+`, spaces, dashes) or business-scoped id" }),
  msg_config_id: Schema.optionalKey(Schema.NullOr(Schema.String)).annotate({ description: "One number; omitted or null: every number of the project" })
})

export const FrequencyCaps = Schema.Struct({
  marketing_per_day: Schema.NullOr(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 1000 }))).annotate({
    description: "Marketing templates a contact receives in 24 hours at most; null: no daily cap"
  }),
  marketing_per_week: Schema.NullOr(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 10000 }))).annotate({
    description: "Marketing templates a contact receives in 7 days at most; null: no weekly cap"
  }),
  scope: Schema.Literals(["number", "project"]).annotate({
    description: "Count the sends of this number only, or of every number of the project"
  })
})
export type FrequencyCaps = typeof FrequencyCaps.Type

const Keywords = Schema.Array(Schema.String.check(Schema.isBetweenLength(1, 40))).check(Schema.isMaxLength(50))
const Confirmation = Schema.NullOr(Schema.String.check(Schema.isBetweenLength(1, 1024)))

/** The editable settings; a null field of a number's settings takes the project's. */
export const GuardrailSettingsInput = Schema.Struct(described({
  opt_out_keywords: Schema.NullOr(Keywords),
  opt_in_keywords: Schema.NullOr(Keywords),
  opt_out_confirmation: Confirmation,
  opt_in_confirmation: Confirmation,
  quiet_hours: Schema.NullOr(QuietHoursWindow),
  frequency_caps: Schema.NullOr(FrequencyCaps)
}, {
  opt_out_keywords: "Whole messages that opt a contact out (any case, surrounding spaces and punctuation ignored); null: the defaults (STOP, UNSUBSCRIBE, CANCEL, PARAR, BAJA, CANCELAR, SAIR, ...)",
  opt_in_keywords: "Whole messages that undo an opt-out; null: the defaults (START, SUBSCRIBE, UNSTOP, ALTA, INICIAR, VOLTAR, ...)",
  opt_out_confirmation: "Sent to a contact who opted out by keyword; null: the default text",
  opt_in_confirmation: "Sent to a contact who resubscribed by keyword; null: the default text",
  quiet_hours: "When broadcasts and workflow sends wait, in the recipient's local time; null: none",
  frequency_caps: "Caps on marketing templates per contact; null: none"
}))
export type GuardrailSettingsInput = typeof GuardrailSettingsInput.Type

export interface GuardrailSettingsRecord extends GuardrailSettingsInput {
  readonly project_id: string
  /** Null: the project's settings, which every number without its own field takes. */
  readonly msg_config_id: string | null
  readonly updated_at: string
}

export const GuardrailSettings = Schema.Struct({
  msg_config_id: Schema.NullOr(Schema.String).annotate({ description: "The number these settings are for; null: the project's" }),
  ...GuardrailSettingsInput.fields,
  updated_at: Schema.String
}).annotate({ identifier: "GuardrailSettings" })

export const toGuardrailSettings = (r: GuardrailSettingsRecord): typeof GuardrailSettings.Type => ({
  msg_config_id: r.msg_config_id,
  opt_out_keywords: r.opt_out_keywords,
  opt_in_keywords: r.opt_in_keywords,
  opt_out_confirmation: r.opt_out_confirmation,
  opt_in_confirmation: r.opt_in_confirmation,
  quiet_hours: r.quiet_hours,
  frequency_caps: r.frequency_caps,
  updated_at: r.updated_at
})

export interface ContactZoneRecord {
  readonly project_id: string
  readonly recipient: string
  readonly time_zone: string
  readonly updated_at: string
}

/** A marketing template let through to a contact: what frequency caps count. `key` names the send across retries. */
export interface MarketingSendRecord {
  readonly project_id: string
  readonly msg_config_id: string
  readonly recipient: string
  readonly key: string
  readonly sent_at: string
}

/** Default keywords: English, Spanish and Portuguese (compared without case, accents and surrounding punctuation). */
export const DEFAULT_OPT_OUT_KEYWORDS = [
  "STOP", "STOP ALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT", "OPT OUT", "OPTOUT",
  "PARAR", "DETENER", "BAJA", "CANCELAR", "DESUSCRIBIR", "NO MAS",
  "SAIR", "PARE", "CANCELAR INSCRICAO", "DESCADASTRAR", "NAO QUERO"
] as const
export const DEFAULT_OPT_IN_KEYWORDS = ["START", "SUBSCRIBE", "UNSTOP", "ALTA", "INICIAR", "SUSCRIBIR", "VOLTAR", "ASSINAR"] as const
export const DEFAULT_OPT_OUT_CONFIRMATION =
  "You have been unsubscribed and will receive no more marketing messages from this number. Reply START to subscribe again."
export const DEFAULT_OPT_IN_CONFIRMATION = "You are subscribed again. Reply STOP to unsubscribe."

/** A message as compared with keywords: upper case, no accents, inner spaces single, no surrounding punctuation. */
export const keywordForm = (text: string): string =>
  text.normalize("NFD").replace(/\p{M}/gu, "").toUpperCase().replace(/^[\s\p{P}\p{S}]+|[\s\p{P}\p{S}]+$/gu, "").replace(/\s+/g, " ")

// The defaults' forms, made once: settings are worked out for every send, and most numbers keep the defaults.
const DEFAULT_OPT_OUT_FORMS: ReadonlySet<string> = new Set(DEFAULT_OPT_OUT_KEYWORDS.map(keywordForm))
const DEFAULT_OPT_IN_FORMS: ReadonlySet<string> = new Set(DEFAULT_OPT_IN_KEYWORDS.map(keywordForm))

/** The settings a number works under: its own fields, the project's where it has none, the defaults last. */
export interface EffectiveSettings {
  readonly optOutKeywords: ReadonlySet<string>
  readonly optInKeywords: ReadonlySet<string>
  readonly optOutConfirmation: string | null
  readonly optInConfirmation: string | null
  readonly quietHours: QuietHoursWindow | null
  readonly frequencyCaps: FrequencyCaps | null
}

export const effectiveSettings = (
  project: GuardrailSettingsRecord | undefined,
  number: GuardrailSettingsRecord | undefined
): EffectiveSettings => {
  const pick = <K extends keyof GuardrailSettingsInput>(key: K): GuardrailSettingsInput[K] | null =>
    number?.[key] ?? project?.[key] ?? null
  const keywords = (list: ReadonlyArray<string> | null, defaults: ReadonlySet<string>) =>
    list === null ? defaults : new Set(list.map(keywordForm))
  return {
    optOutKeywords: keywords(pick("opt_out_keywords"), DEFAULT_OPT_OUT_FORMS),
    optInKeywords: keywords(pick("opt_in_keywords"), DEFAULT_OPT_IN_FORMS),
    optOutConfirmation: pick("opt_out_confirmation") ?? DEFAULT_OPT_OUT_CONFIRMATION,
    optInConfirmation: pick("opt_in_confirmation") ?? DEFAULT_OPT_IN_CONFIRMATION,
    quietHours: pick("quiet_hours"),
    frequencyCaps: pick("frequency_caps")
  }
}
