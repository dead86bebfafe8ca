/**
 * The template mirror (decisions 4.8.1): the records `send_template` and
 * broadcasts name by uuid, kept in step with the network.
 *
 * The mirror is read from the network (`GET /<waba_id>/message_templates`,
 * every page) per business account: before `GET /msg/templates` answers,
 * after a template is created, edited or deleted through the proxy, and the
 * network's status reports move a known template's status. A send reads its
 * template from the network again (`GET /<template_id>`), so the `APPROVED`
 * check sees the network's word of the moment, not the last sync's.
 *
 * When the network cannot be reached the mirror answers as it stands: a
 * stale list is more useful than none, and a send then checks the mirrored
 * status.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { MessageConfigsRepo } from "../numbers/MessageConfigsRepo.ts"
import { MessagingNetwork, type NetworkAccess } from "../../network/MessagingNetwork.ts"
import { TemplatesRepo } from "./TemplatesRepo.ts"
import type { Principal } from "../../projects/Projects.ts"
import { type NotFound, notFound } from "../../shared/ApiError.ts"
import type { ListSlice, ListWindow } from "../../shared/Pagination.ts"
import type { MessageConfigRecord } from "../numbers/MessageConfig.ts"
import type { NetworkTemplate } from "../../network/NetworkObjects.ts"
import { fromNetwork, type TemplateFilter, type TemplateRecord, templateId } from "./Template.ts"

export interface TemplateListQuery extends TemplateFilter {
  readonly phone_number_id?: string | undefined
}

/** Pages read from the network per sync at most (100 templates each). */
const MAX_PAGES = 50

const decoder = new TextDecoder()

/** The templates of a list answer as the network sent them: components keep every field, known to Parley or not. */
const rawTemplates = (body: Uint8Array): Map<string, Record<string, unknown>> => {
  const parsed: unknown = JSON.parse(decoder.decode(body))
  const data = typeof parsed === "object" && parsed !== null ? (parsed as { data?: unknown }).data : undefined
  const out = new Map<string, Record<string, unknown>>()
  if (Array.isArray(data)) {
    for (const item of data) {
      if (typeof item === "object" && item !== null && typeof (item as { id?: unknown }).id === "string") {
        out.set((item as { id: string }).id, item as Record<string, unknown>)
      }
    }
  }
  return out
}

const withRawComponents = (t: NetworkTemplate, raw: Record<string, unknown> | undefined): NetworkTemplate =>
  raw !== undefined && Array.isArray(raw.components) ? { ...t, components: raw.components as NetworkTemplate["components"] } : t

export class Templates extends Context.Service<Templates, {
  /** Reads one business account's templates from the network into the mirror; false when the network could not answer. */
  readonly syncAccount: (projectId: string, businessAccountId: string) => Effect.Effect<boolean>
  /** `GET /msg/templates`: syncs the accounts asked about (all of the project's by default), then lists the mirror. */
  readonly list: (principal: Principal, query: TemplateListQuery, window: ListWindow) => Effect.Effect<ListSlice<TemplateRecord>>
  readonly get: (principal: Principal, id: string) => Effect.Effect<TemplateRecord, NotFound>
  /** The project's template as the mirror has it (no network read). */
  readonly find: (projectId: string, id: string) => Effect.Effect<Option.Option<TemplateRecord>>
  /**
   * The template a send names, read again from the network (its status of the moment); the mirrored record when
   * the network cannot answer; None when neither knows it (the network no longer has it: removed from the mirror).
   */
  readonly forSend: (projectId: string, id: string) => Effect.Effect<Option.Option<TemplateRecord>>
  /** A status report of the network (`message_template_status_update`) for a template of the account. */
  readonly statusReported: (businessAccountId: string, upstreamTemplateId: string, event: string) => Effect.Effect<void>
}>()("@parley/core/messaging/templates/Templates") {
  static readonly layer = Layer.effect(
    Templates,
    Effect.gen(function*() {
      const repo = yield* TemplatesRepo
      const configs = yield* MessageConfigsRepo
      const network = yield* MessagingNetwork

      const now = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms).toISOString())

      /** A live number of the project on the account: whose token reads the account's templates. */
      const accountConfig = (projectId: string, businessAccountId: string) =>
        Effect.map(configs.listByBusinessAccount(businessAccountId), (all) =>
          Option.fromNullishOr(all.find((c) => c.project_id === projectId && c.deleted_at === null)))

      const access = (config: MessageConfigRecord): NetworkAccess => ({ accessToken: config.access_token })

      const syncAccount = Effect.fn("Templates.syncAccount")(function*(projectId: string, businessAccountId: string) {
        const config = yield* accountConfig(projectId, businessAccountId)
        if (Option.isNone(config)) {
          yield* repo.replaceAccount(projectId, businessAccountId, [])
          return true
        }
        const at = yield* now
        const seen: Array<TemplateRecord> = []
        let after: string | undefined
        for (let page = 0; page < MAX_PAGES; page++) {
          const answer = yield* Effect.result(network.listTemplates(access(config.value), businessAccountId, { limit: 100, after }))
          if (answer._tag === "Failure") {
            yield* Effect.logWarning("The network's template list could not be read; the mirror stays as it was").pipe(
              Effect.annotateLogs({ business_account_id: businessAccountId, error: answer.failure.message })
            )
            return false
          }
          const raw = rawTemplates(answer.success.body)
          for (const t of answer.success.value.data) seen.push(fromNetwork(projectId, businessAccountId, withRawComponents(t, raw.get(t.id)), at))
          after = answer.success.value.paging?.next !== undefined ? answer.success.value.paging.cursors?.after : undefined
          if (after === undefined || answer.success.value.data.length === 0) break
        }
        yield* repo.replaceAccount(projectId, businessAccountId, seen)
        return true
      })

      const projectAccounts = Effect.fnUntraced(function*(projectId: string) {
        const accounts = new Set<string>()
        for (let page = 1;; page++) {
          const slice = yield* configs.list(projectId, {}, { mode: "page", page, perPage: 100 })
          for (const c of slice.items) if (c.deleted_at === null) accounts.add(c.business_account_id)
          if (!slice.hasMore) break
        }
        return [...accounts]
      })

      const list = Effect.fn("Templates.list")(function*(principal: Principal, query: TemplateListQuery, window: ListWindow) {
        const projectId = principal.project.id
        let account = query.business_account_id
        if (query.phone_number_id !== undefined) {
          const config = yield* configs.findByPhoneNumberId(query.phone_number_id)
          // A number the project has not connected matches nothing, as any other filter value (conversations do so too).
          if (Option.isNone(config) || config.value.project_id !== projectId || config.value.deleted_at !== null) {
            return { items: [], hasMore: false, total: 0 }
          }
          if (account !== undefined && account !== config.value.business_account_id) return { items: [], hasMore: false, total: 0 }
          account = config.value.business_account_id
        }
        const accounts = account !== undefined ? [account] : yield* projectAccounts(projectId)
        yield* Effect.forEach(accounts, (a) => syncAccount(projectId, a), { concurrency: 4, discard: true })
        return yield* repo.list(projectId, {
          business_account_id: account,
          name: query.name,
          language: query.language,
          status: query.status?.toLowerCase(),
          category: query.category?.toUpperCase()
        }, window)
      })

      const get = Effect.fn("Templates.get")(function*(principal: Principal, id: string) {
        const found = yield* repo.findById(principal.project.id, id)
        if (Option.isNone(found)) return yield* notFound("Template", id)
        return found.value
      })

      const forSend = Effect.fn("Templates.forSend")(function*(projectId: string, id: string) {
        const mirrored = yield* repo.findById(projectId, id)
        if (Option.isNone(mirrored)) return mirrored
        const t = mirrored.value
        const config = yield* accountConfig(projectId, t.business_account_id)
        if (Option.isNone(config)) return mirrored
        const answer = yield* Effect.result(network.getTemplate(access(config.value), t.upstream_template_id))
        if (answer._tag === "Failure") {
          // The network no longer knows the template (deleted elsewhere): neither does the mirror.
          if (answer.failure._tag === "NetworkRefused" && (answer.failure.status === 404 || answer.failure.code === 100)) {
            yield* repo.remove(projectId, id)
            return Option.none<TemplateRecord>()
          }
          return mirrored
        }
        const fresh = fromNetwork(projectId, t.business_account_id, withRawComponents(answer.success.value, rawOne(answer.success.body)), yield* now)
        return Option.some(yield* repo.upsert(fresh))
      })

      const statusReported = Effect.fn("Templates.statusReported")(function*(businessAccountId: string, upstreamTemplateId: string, event: string) {
        const projects = new Set((yield* configs.listByBusinessAccount(businessAccountId)).filter((c) => c.deleted_at === null).map((c) => c.project_id))
        for (const projectId of projects) {
          const known = yield* repo.findById(projectId, templateId(projectId, upstreamTemplateId))
          // A template the mirror has not seen yet: the account's list brings it in whole.
          if (Option.isNone(known)) {
            yield* syncAccount(projectId, businessAccountId)
            continue
          }
          yield* repo.upsert({ ...known.value, status: statusOfEvent(event), updated_at: yield* now })
        }
      })

      return Templates.of({ syncAccount, list, get, find: repo.findById, forSend, statusReported })
    })
  )
}

const rawOne = (body: Uint8Array): Record<string, unknown> | undefined => {
  const parsed: unknown = JSON.parse(decoder.decode(body))
  return typeof parsed === "object" && parsed !== null ? parsed as Record<string, unknown> : undefined
}

/** The status a report's event leaves the template in (`REINSTATED` brings a paused one back). */
export const statusOfEvent = (event: string) => (event.toUpperCase() === "REINSTATED" ? "approved" : event.toLowerCase())
