/**
 * Workflow triggers (decisions 2.6, 4.3): validation of each trigger type,
 * the project-wide uniqueness rules (counted among active workflows only),
 * atomic replacement of a workflow's whole set, and the activation check the
 * workflow service runs when a workflow goes live.
 */
import { canonicalJson } from "../shared/CanonicalJson.ts"
import { Context, Effect, Layer, Option } from "effect"
import type { Principal } from "../projects/Projects.ts"
import { Transactor } from "../ports/Transactor.ts"
import { TriggersRepo, WorkflowsRepo } from "./WorkflowsRepo.ts"
import { type ErrorDetail, type NotFound, notFound, type Unprocessable, unprocessable } from "../shared/ApiError.ts"
import { Ids } from "../shared/Ids.ts"
import { nowIso } from "../shared/Time.ts"
import { DefinitionReferences } from "./References.ts"
import type { Triggerable, TriggerInput, TriggerRecord, TriggerType } from "./Trigger.ts"

export const MSG_TRIGGER_EVENTS = [
  "msg.message.received",
  "msg.message.sent",
  "msg.message.failed",
  "msg.conversation.created",
  "msg.conversation.ended"
] as const

const OPERATORS = ["eq", "lt", "lte", "gt", "gte"] as const
const EVENT_NAME = /^[^A-Z]{1,128}$/

/** A validated trigger before it gets an id. */
interface TriggerDraft {
  readonly trigger_type: TriggerType
  readonly active: boolean
  readonly display_name: string
  readonly triggerable: Triggerable
}

const isNumeric = (v: unknown) =>
  (typeof v === "number" && Number.isFinite(v)) || (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v)))

/** The key under which uniqueness is counted; null for types without a project-wide rule. */
const uniquenessKey = (type: TriggerType, t: Triggerable): string | null => {
  switch (type) {
    case "inbound_message":
      return `inbound_message:${String(t.phone_number_id)}`
    case "msg_event":
      return `msg_event:${String(t.event)}:${String(t.phone_number_id ?? "*")}`
    default:
      return null
  }
}

const conflictMessage = (type: TriggerType, other: string) =>
  type === "inbound_message"
    ? `Another workflow already has an active inbound message trigger for this number (${other})`
    : `Another workflow already has an active trigger for this event and number (${other})`

/** Same type and triggerable, whatever order the keys were stored in (decisions 4.3: such items keep their id). */
const sameTrigger = (a: TriggerRecord, b: TriggerDraft) =>
  a.trigger_type === b.trigger_type && canonicalJson(a.triggerable) === canonicalJson(b.triggerable)

export class Triggers extends Context.Service<Triggers, {
  readonly list: (principal: Principal, workflowId: string) => Effect.Effect<ReadonlyArray<TriggerRecord>, NotFound>
  readonly create: (
    principal: Principal,
    workflowId: string,
    input: TriggerInput
  ) => Effect.Effect<TriggerRecord, NotFound | Unprocessable>
  /** Replaces the whole set atomically; any invalid item changes nothing. */
  readonly replace: (
    principal: Principal,
    workflowId: string,
    inputs: ReadonlyArray<TriggerInput>
  ) => Effect.Effect<ReadonlyArray<TriggerRecord>, NotFound | Unprocessable>
  readonly setActive: (
    principal: Principal,
    triggerId: string,
    active: boolean | undefined
  ) => Effect.Effect<TriggerRecord, NotFound | Unprocessable>
  readonly delete: (principal: Principal, triggerId: string) => Effect.Effect<void, NotFound>
  /** 422 when one of the workflow's active triggers collides with another active workflow's. */
  readonly checkActivation: (projectId: string, workflowId: string) => Effect.Effect<void, Unprocessable>
}>()("@parley/core/workflows/Triggers") {
  static readonly layer = Layer.effect(
    Triggers,
    Effect.gen(function*() {
      const repo = yield* TriggersRepo
      const workflows = yield* WorkflowsRepo
      const tx = yield* Transactor
      const ids = yield* Ids
      const refs = yield* DefinitionReferences

      const findWorkflow = (projectId: string, id: string) =>
        workflows.findById(projectId, id).pipe(
          Effect.flatMap(Option.match({ onNone: () => Effect.fail(notFound("Workflow", id)), onSome: Effect.succeed }))
        )

      const findTrigger = (projectId: string, id: string) =>
        repo.findById(projectId, id).pipe(
          Effect.flatMap(Option.match({ onNone: () => Effect.fail(notFound("Trigger", id)), onSome: Effect.succeed }))
        )

      /** Checks one input; problems are reported under `prefix` (e.g. `trigger` or `triggers[2]`). */
      const validate = Effect.fnUntraced(function*(projectId: string, input: TriggerInput, prefix: string) {
        const problems: Array<ErrorDetail> = []
        const problem = (field: string, message: string) => problems.push({ path: `${prefix}.${field}`, message })
        const active = input.active ?? true
        const numberName = Effect.fnUntraced(function*(pnid: string) {
          const name = yield* refs.lookup(projectId, "phone_number", pnid)
          if (Option.isNone(name)) problem("phone_number_id", `${pnid} is not a phone number of this project`)
          return Option.getOrElse(name, () => pnid)
        })
        let draft: TriggerDraft | undefined
        switch (input.trigger_type) {
          case "inbound_message": {
            const pnid = input.phone_number_id
            if (typeof pnid !== "string" || pnid.length === 0) {
              problem("phone_number_id", "is required for inbound_message triggers")
              break
            }
            const name = yield* numberName(pnid)
            draft = { trigger_type: "inbound_message", active, display_name: `Msg: ${name}`, triggerable: { phone_number_id: pnid } }
            break
          }
          case "api_call":
            draft = { trigger_type: "api_call", active, display_name: "API Call Trigger", triggerable: {} }
            break
          case "msg_event": {
            const event = input.event
            if (typeof event !== "string" || !(MSG_TRIGGER_EVENTS as ReadonlyArray<string>).includes(event)) {
              problem("event", `must be one of ${MSG_TRIGGER_EVENTS.join(", ")}`)
              break
            }
            const pnid = input.phone_number_id ?? null
            if (pnid !== null) yield* numberName(pnid)
            draft = {
              trigger_type: "msg_event",
              active,
              display_name: `Msg event: ${event}`,
              triggerable: { event, phone_number_id: pnid }
            }
            break
          }
          case "project_event": {
            const name = input.event_name
            if (typeof name !== "string" || !EVENT_NAME.test(name)) {
              problem("event_name", "must be lowercase, at most 128 characters")
              break
            }
            const key = input.property_key ?? null
            const operator = input.operator ?? null
            const value = input.property_value ?? null
            const given = [key, operator, value].filter((v) => v !== null).length
            if (given !== 0 && given !== 3) {
              problem("property_key", "property_key, operator and property_value must be given together")
              break
            }
            if (operator !== null && !(OPERATORS as ReadonlyArray<string>).includes(operator)) {
              problem("operator", `must be one of ${OPERATORS.join(", ")}`)
              break
            }
            if (value !== null && typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean") {
              problem("property_value", "must be a string, number or boolean")
              break
            }
            if (operator !== null && operator !== "eq" && !isNumeric(value)) {
              problem("property_value", `must be a number or numeric string for operator ${operator}`)
              break
            }
            if (key !== null && (key.length === 0 || key.length > 64)) {
              problem("property_key", "must be 1-64 characters")
              break
            }
            draft = {
              trigger_type: "project_event",
              active,
              display_name: `Event: ${name}`,
              triggerable: { event_name: name, property_key: key, operator, property_value: value }
            }
            break
          }
          default:
            problem("trigger_type", "must be one of inbound_message, api_call, msg_event, project_event")
        }
        return { draft: problems.length === 0 ? draft : undefined, problems }
      })

      const failWith = (problems: ReadonlyArray<ErrorDetail>) =>
        unprocessable(`${problems[0]!.path} ${problems[0]!.message}`, problems)

      /**
       * Uniqueness of the active triggers `mine` of workflow `workflowId` against
       * active triggers of other active workflows.
       */
      const checkUnique = Effect.fnUntraced(function*(
        projectId: string,
        workflowId: string,
        mine: ReadonlyArray<{ readonly draft: TriggerDraft; readonly path: string }>
      ) {
        const seen = new Map<string, string>()
        for (const { draft, path } of mine) {
          if (!draft.active) continue
          const key = uniquenessKey(draft.trigger_type, draft.triggerable)
          if (key === null) continue
          if (seen.has(key)) {
            return yield* unprocessable(`${path} duplicates ${seen.get(key)}`, [{ path, message: "duplicate trigger" }])
          }
          seen.set(key, path)
          const others = yield* repo.listByType(projectId, draft.trigger_type)
          const clash = others.find((o) =>
            o.trigger.workflow_id !== workflowId && o.trigger.active && o.workflowStatus === "active" &&
            uniquenessKey(o.trigger.trigger_type, o.trigger.triggerable) === key
          )
          if (clash !== undefined) {
            return yield* unprocessable(conflictMessage(draft.trigger_type, clash.workflowName), [
              { path, message: `conflicts with workflow ${clash.workflowName}` }
            ])
          }
        }
      })

      const checkApiCallOnce = (drafts: ReadonlyArray<{ readonly draft: TriggerDraft; readonly path: string }>) => {
        const apiCalls = drafts.filter((d) => d.draft.trigger_type === "api_call")
        return apiCalls.length > 1
          ? Effect.fail(unprocessable("A workflow has at most one api_call trigger", [{ path: apiCalls[1]!.path, message: "duplicate api_call trigger" }]))
          : Effect.void
      }

      const insertDraft = Effect.fnUntraced(function*(projectId: string, workflowId: string, draft: TriggerDraft) {
        const now = yield* nowIso
        const record: TriggerRecord = { id: yield* ids.uuid, project_id: projectId, workflow_id: workflowId, ...draft, created_at: now, updated_at: now }
        yield* repo.insert(record)
        return record
      })

      const create = Effect.fn("Triggers.create")(function*(principal: Principal, workflowId: string, input: TriggerInput) {
        const projectId = principal.project.id
        return yield* tx.withTransaction(Effect.gen(function*() {
          const workflow = yield* findWorkflow(projectId, workflowId)
          const { draft, problems } = yield* validate(projectId, input, "trigger")
          if (draft === undefined) return yield* failWith(problems)
          const existing = yield* repo.listByWorkflow(projectId, workflowId)
          yield* checkApiCallOnce([
            ...existing.map((t) => ({ draft: t, path: `trigger ${t.id}` })),
            { draft, path: "trigger" }
          ])
          if (workflow.status === "active") yield* checkUnique(projectId, workflowId, [{ draft, path: "trigger" }])
          return yield* insertDraft(projectId, workflowId, draft)
        }))
      })

      const replace = Effect.fn("Triggers.replace")(function*(
        principal: Principal,
        workflowId: string,
        inputs: ReadonlyArray<TriggerInput>
      ) {
        const projectId = principal.project.id
        return yield* tx.withTransaction(Effect.gen(function*() {
          const workflow = yield* findWorkflow(projectId, workflowId)
          const drafts: Array<{ draft: TriggerDraft; path: string }> = []
          for (const [i, input] of inputs.entries()) {
            const { draft, problems } = yield* validate(projectId, input, `triggers[${i}]`)
            if (draft === undefined) return yield* failWith(problems)
            drafts.push({ draft, path: `triggers[${i}]` })
          }
          yield* checkApiCallOnce(drafts)
          if (workflow.status === "active") yield* checkUnique(projectId, workflowId, drafts)
          const existing = [...(yield* repo.listByWorkflow(projectId, workflowId))]
          const result: Array<TriggerRecord> = []
          const now = yield* nowIso
          for (const { draft } of drafts) {
            const keepIndex = existing.findIndex((t) => sameTrigger(t, draft))
            if (keepIndex >= 0) {
              const kept = existing.splice(keepIndex, 1)[0]!
              const next = kept.active === draft.active ? kept : { ...kept, active: draft.active, updated_at: now }
              if (next !== kept) yield* repo.update(next)
              result.push(next)
            } else {
              result.push(yield* insertDraft(projectId, workflowId, draft))
            }
          }
          for (const stale of existing) yield* repo.delete(projectId, stale.id)
          return result
        }))
      })

      const setActive = Effect.fn("Triggers.setActive")(function*(principal: Principal, triggerId: string, active: boolean | undefined) {
        const projectId = principal.project.id
        return yield* tx.withTransaction(Effect.gen(function*() {
          const trigger = yield* findTrigger(projectId, triggerId)
          if (active === undefined || active === trigger.active) return trigger
          if (active) {
            const workflow = yield* findWorkflow(projectId, trigger.workflow_id)
            if (workflow.status === "active") {
              yield* checkUnique(projectId, workflow.id, [{ draft: { ...trigger, active: true }, path: "trigger" }])
            }
          }
          const next = { ...trigger, active, updated_at: yield* nowIso }
          yield* repo.update(next)
          return next
        }))
      })

      return Triggers.of({
        list: Effect.fn("Triggers.list")(function*(principal: Principal, workflowId: string) {
          yield* findWorkflow(principal.project.id, workflowId)
          return yield* repo.listByWorkflow(principal.project.id, workflowId)
        }),
        create,
        replace,
        setActive,
        delete: Effect.fn("Triggers.delete")(function*(principal: Principal, triggerId: string) {
          const deleted = yield* repo.delete(principal.project.id, triggerId)
          if (!deleted) return yield* notFound("Trigger", triggerId)
        }),
        checkActivation: Effect.fn("Triggers.checkActivation")(function*(projectId: string, workflowId: string) {
          const mine = yield* repo.listByWorkflow(projectId, workflowId)
          yield* checkUnique(projectId, workflowId, mine.map((t) => ({ draft: t, path: `trigger ${t.id}` })))
        })
      })
    })
  )
}
