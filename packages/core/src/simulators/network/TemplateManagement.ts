/**
 * The templates of a business account on the simulated network (`<waba>/message_templates`, `GET`/`POST /<id>`):
 * listed and filtered, created `PENDING` (at most 250 an account; a deleted approved name is not reused for 30
 * days), edited within the network's limits (an approved one once a day, 10 times in 30 days, its category kept),
 * deleted by name or id; each review ends after `templateReviewMs`, reported by a followup. `Templates.ts` reads
 * the definitions.
 */
import { Predicate } from "effect"
import { isSimError } from "./Access.ts"
import {
  DAY_MS,
  fail,
  numericId,
  ok,
  type RequestContext,
  type SimState,
  type TemplateRecord
} from "./Model.ts"
import { type ListAddress, page } from "./Paging.ts"
import { simError } from "../../network/ErrorCodes.ts"
import type { SimRequest } from "./Protocol.ts"
import type { SimConfig } from "./Routes.ts"
import { checkLanguage, checkName, readTemplate } from "./Templates.ts"

const TEMPLATE_LIMIT = 250

export const refreshTemplate = (template: TemplateRecord, now: number): void => {
  if (template.review !== undefined && now >= template.review.at) {
    template.status = template.review.verdict
    template.rejectedReason = template.review.reason
    template.review = undefined
  }
}

export const templateView = (template: TemplateRecord): Record<string, unknown> => ({
  id: template.id,
  name: template.name,
  language: template.language,
  status: template.status,
  category: template.category,
  ...(template.subCategory !== undefined ? { sub_category: template.subCategory } : {}),
  parameter_format: template.parameterFormat,
  components: template.components,
  ...(template.status === "REJECTED" ? { rejected_reason: template.rejectedReason } : {})
})

export const project = (view: Record<string, unknown>, fields: string | undefined): Record<string, unknown> => {
  if (fields === undefined) return view
  const wanted = new Set(["id", ...fields.split(",").map((f) => f.trim()).filter((f) => f.length > 0)])
  return Object.fromEntries(Object.entries(view).filter(([key]) => wanted.has(key)))
}

const accountTiers = (state: SimState, businessAccountId: string) =>
  [...state.numbers.values()].filter((n) => n.businessAccountId === businessAccountId).map((n) => n.messagingLimitTier)

export const listTemplates = (state: SimState, request: SimRequest, ctx: RequestContext, accountId: string, self: ListAddress) => {
  const { query } = request
  const nameFilter = query["name"]?.toLowerCase()
  const matching = [...state.templates.values()]
    .filter((t) => !t.deleted && t.businessAccountId === accountId)
    .map((t) => {
      refreshTemplate(t, ctx.now)
      return t
    })
    .filter((t) =>
      (nameFilter === undefined || t.name.includes(nameFilter)) &&
      (query["status"] === undefined || t.status === query["status"].toUpperCase()) &&
      (query["category"] === undefined || t.category === query["category"].toUpperCase()) &&
      (query["language"] === undefined || t.language === query["language"])
    )
    .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
    .map((t) => project(templateView(t), query["fields"]))
  const result = page(matching, query, self, 25)
  return isSimError(result) ? fail(result) : ok(result)
}

const reviewFollowup = (template: TemplateRecord) => ({
  _tag: "TemplateReview" as const,
  templateId: template.id,
  generation: template.generation,
  at: template.review!.at
})

export const createTemplate = (state: SimState, config: SimConfig, ctx: RequestContext, accountId: string, body: unknown) => {
  if (!Predicate.isObject(body)) return fail(simError(100, "The request body must be a JSON object"))
  const name = checkName(body["name"])
  if (isSimError(name)) return fail(name)
  const language = checkLanguage(body["language"])
  if (isSimError(language)) return fail(language)
  const read = readTemplate(body, accountTiers(state, accountId))
  if (isSimError(read)) return fail(read)
  const live = [...state.templates.values()].filter((t) => !t.deleted && t.businessAccountId === accountId)
  if (live.some((t) => t.name === name && t.language === language)) {
    return fail(simError(100, `Content in this language already exists for template ${name}`, { subcode: 2388024 }))
  }
  const deletedAt = state.deletedNames.get(`${accountId}|${name}`)
  if (deletedAt !== undefined && ctx.now - deletedAt < 30 * DAY_MS) {
    return fail(simError(100, `The name ${name} was used by a deleted template and cannot be reused for 30 days`, {
      subcode: 2388023
    }))
  }
  if (live.length >= TEMPLATE_LIMIT) {
    return fail(simError(100, `The business account already has ${TEMPLATE_LIMIT} templates`, { subcode: 2388025 }))
  }
  const template: TemplateRecord = {
    id: numericId(ctx.uuid),
    businessAccountId: accountId,
    name,
    language,
    category: read.category,
    subCategory: read.subCategory,
    parameterFormat: read.parameterFormat,
    components: read.components,
    status: "PENDING",
    rejectedReason: "NONE",
    review: { at: ctx.now + config.templateReviewMs, verdict: read.verdict, reason: read.reason },
    generation: 1,
    createdAt: ctx.now,
    edits: [],
    deleted: false
  }
  state.templates.set(template.id, template)
  state.touch("template", template.id)
  return ok({ id: template.id, status: template.status, category: template.category }, [reviewFollowup(template)])
}

export const editTemplate = (
  state: SimState,
  config: SimConfig,
  ctx: RequestContext,
  template: TemplateRecord,
  body: unknown
) => {
  if (!Predicate.isObject(body)) return fail(simError(100, "The request body must be a JSON object"))
  refreshTemplate(template, ctx.now)
  if (!["APPROVED", "REJECTED", "PAUSED"].includes(template.status)) {
    return fail(simError(100, `A template in status ${template.status} cannot be edited`, { subcode: 2388040 }))
  }
  const wasApproved = template.status === "APPROVED"
  const category = body["category"]
  if (wasApproved && category !== undefined && String(category).toUpperCase() !== template.category) {
    return fail(simError(100, "The category of an approved template cannot be changed", { subcode: 2388041 }))
  }
  if (wasApproved) {
    const recent = template.edits.filter((at) => ctx.now - at < 30 * DAY_MS)
    if (recent.some((at) => ctx.now - at < DAY_MS)) {
      return fail(simError(100, "An approved template can be edited once per 24 hours", { subcode: 2388042 }))
    }
    if (recent.length >= 10) {
      return fail(simError(100, "An approved template can be edited 10 times per 30 days", { subcode: 2388043 }))
    }
  }
  const read = readTemplate(
    {
      ...body,
      components: body["components"] ?? template.components,
      parameter_format: body["parameter_format"] ?? template.parameterFormat
    },
    accountTiers(state, template.businessAccountId),
    template.category
  )
  if (isSimError(read)) return fail(read)
  template.category = read.category
  template.subCategory = read.subCategory ?? template.subCategory
  template.parameterFormat = read.parameterFormat
  template.components = read.components
  template.status = "PENDING"
  template.rejectedReason = "NONE"
  template.review = { at: ctx.now + config.templateReviewMs, verdict: read.verdict, reason: read.reason }
  template.generation++
  if (wasApproved) template.edits.push(ctx.now)
  state.touch("template", template.id)
  return ok({ success: true }, [reviewFollowup(template)])
}

export const deleteTemplates = (state: SimState, request: SimRequest, ctx: RequestContext, accountId: string) => {
  const name = request.query["name"]
  const hsmId = request.query["hsm_id"]
  if (name === undefined && hsmId === undefined) return fail(simError(100, "The parameter name is required."))
  const targets = [...state.templates.values()].filter((t) =>
    !t.deleted && t.businessAccountId === accountId &&
    (hsmId !== undefined ? t.id === hsmId && (name === undefined || t.name === name) : t.name === name)
  )
  if (targets.length === 0) {
    return fail(simError(100, `Message template ${hsmId ?? name} not found`, { subcode: 2593002 }))
  }
  for (const template of targets) {
    refreshTemplate(template, ctx.now)
    if (template.status === "APPROVED") {
      state.deletedNames.set(`${accountId}|${template.name}`, ctx.now)
      state.touch("deletedName", `${accountId}|${template.name}`)
    }
    template.deleted = true
    template.status = "DELETED"
    template.generation++
    state.touch("template", template.id)
  }
  return ok({ success: true })
}
