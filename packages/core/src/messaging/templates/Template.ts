/**
 * The service's mirror of the network's message templates (decisions 2.19,
 * 4.8.1): one record per template of a project's business accounts, with a
 * uuid `id` that `send_template.template_id` (and broadcasts) name, and the
 * network's status in lowercase.
 */
import { Schema } from "effect"
import { nameUuid } from "../../shared/Ids.ts"
import type { NetworkTemplate } from "../../network/NetworkObjects.ts"

export interface TemplateRecord {
  /** Fixed per (project, network template id): every sync names a template the same way. */
  readonly id: string
  readonly project_id: string
  readonly business_account_id: string
  /** The network's id of the template (`hsm_id`). */
  readonly upstream_template_id: string
  readonly name: string
  readonly language: string
  /** `approved`, `pending`, `rejected`, `paused`, `disabled`, ... (the network's, lowercase). */
  readonly status: string
  /** `UTILITY`, `MARKETING`, `AUTHENTICATION`. */
  readonly category: string
  readonly sub_category: string | null
  /** `POSITIONAL` or `NAMED`. */
  readonly parameter_format: string
  readonly components: ReadonlyArray<Readonly<Record<string, unknown>>>
  readonly created_at: string
  readonly updated_at: string
}

export interface TemplateFilter {
  readonly business_account_id?: string | undefined
  readonly name?: string | undefined
  readonly language?: string | undefined
  /** Lowercase. */
  readonly status?: string | undefined
  readonly category?: string | undefined
}

export const templateId = (projectId: string, upstreamTemplateId: string) =>
  nameUuid(`template:${projectId}:${upstreamTemplateId}`)

/** The mirror record of a template the network lists; `created_at` stays the first sighting's. */
export const fromNetwork = (
  projectId: string,
  businessAccountId: string,
  t: NetworkTemplate,
  now: string
): TemplateRecord => ({
  id: templateId(projectId, t.id),
  project_id: projectId,
  business_account_id: businessAccountId,
  upstream_template_id: t.id,
  name: t.name,
  language: t.language,
  status: t.status.toLowerCase(),
  category: t.category.toUpperCase(),
  sub_category: t.sub_category ?? null,
  parameter_format: (t.parameter_format ?? "POSITIONAL").toUpperCase(),
  components: t.components as ReadonlyArray<Readonly<Record<string, unknown>>>,
  created_at: now,
  updated_at: now
})

/** One template on the wire (`GET /msg/templates`). */
export const MsgTemplate = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  language: Schema.String,
  status: Schema.String,
  category: Schema.String,
  sub_category: Schema.NullOr(Schema.String),
  parameter_format: Schema.String,
  components: Schema.Array(Schema.Record(Schema.String, Schema.Unknown)),
  business_account_id: Schema.String,
  upstream_template_id: Schema.String,
  created_at: Schema.String,
  updated_at: Schema.String
})
export type MsgTemplate = typeof MsgTemplate.Type

export const toMsgTemplate = (t: TemplateRecord): MsgTemplate => ({
  id: t.id,
  name: t.name,
  language: t.language,
  status: t.status,
  category: t.category,
  sub_category: t.sub_category,
  parameter_format: t.parameter_format,
  components: t.components,
  business_account_id: t.business_account_id,
  upstream_template_id: t.upstream_template_id,
  created_at: t.created_at,
  updated_at: t.updated_at
})
