/**
 * The workflow service: create, read, update (with optimistic locking and
 * status moves), delete, and the definition read form. Depends only on ports.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { Principal } from "../projects/Projects.ts"
import type { Duplicate } from "../ports/StorageError.ts"
import { Transactor } from "../ports/Transactor.ts"
import { WorkflowsRepo } from "./WorkflowsRepo.ts"
import {
  type Conflict,
  type NotFound,
  notFound,
  staleLockVersion,
  type Unprocessable,
  unprocessable
} from "../shared/ApiError.ts"
import { Ids } from "../shared/Ids.ts"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import { SLUG_MAX, SLUG_PATTERN, slugCandidate, slugify } from "../shared/Slug.ts"
import { nowIso } from "../shared/Time.ts"
import { defaultDefinition, validateDefinition, withReadOnlyNames } from "./Definition.ts"
import type { DefinitionReferences } from "./References.ts"
import { Triggers } from "./Triggers.ts"
import { revisionId, type SaveAction } from "./Revision.ts"
import { RevisionsRepo } from "./RevisionsRepo.ts"
import type {
  Definition,
  WorkflowCreateInput,
  WorkflowFilter,
  WorkflowRecord,
  WorkflowSummary,
  WorkflowStatus,
  WorkflowUpdateInput
} from "./Workflow.ts"

type WriteError = NotFound | Unprocessable | Conflict

const nameTaken = () => unprocessable("Name has already been taken", [{ path: "workflow.name", message: "has already been taken" }])
const slugTaken = () => unprocessable("Slug has already been taken", [{ path: "workflow.slug", message: "has already been taken" }])
const onDuplicate = (e: Duplicate) => e.field === "slug" ? slugTaken() : nameTaken()

const checkName = (name: string) => {
  const trimmed = name.trim()
  return trimmed.length === 0 || trimmed.length > 200
    ? Effect.fail(unprocessable("name must be 1-200 characters", [{ path: "workflow.name", message: "must be 1-200 characters" }]))
    : Effect.succeed(trimmed)
}

const checkFields = (input: WorkflowUpdateInput) =>
  Effect.gen(function*() {
    if (input.description !== undefined && input.description !== null && input.description.length > 2000) {
      return yield* unprocessable("description must be at most 2000 characters", [
        { path: "workflow.description", message: "must be at most 2000 characters" }
      ])
    }
    const debounce = input.message_debounce_seconds
    if (debounce !== undefined && debounce !== null && (debounce < 0 || debounce > 60)) {
      return yield* unprocessable("message_debounce_seconds must be between 0 and 60", [
        { path: "workflow.message_debounce_seconds", message: "must be between 0 and 60" }
      ])
    }
    const tools = input.agent_default_tools_version
    if (tools !== undefined && tools !== null && tools !== 1 && tools !== 2) {
      return yield* unprocessable("agent_default_tools_version must be 1 or 2", [
        { path: "workflow.agent_default_tools_version", message: "must be 1 or 2" }
      ])
    }
    if (input.slug !== undefined && (!SLUG_PATTERN.test(input.slug) || input.slug.length > SLUG_MAX)) {
      return yield* unprocessable("slug must match ^[a-z0-9]+(?:-[a-z0-9]+)*$ and be at most 100 characters", [
        { path: "workflow.slug", message: "is invalid" }
      ])
    }
  })

/** Status moves of decisions 3.1 other than the activation checks. */
const checkMove = (from: WorkflowStatus, to: WorkflowStatus) =>
  from === "archived" && to === "active"
    ? Effect.fail(unprocessable("Restore the workflow to draft first"))
    : Effect.void

export interface SaveOptions {
  readonly action?: SaveAction | undefined
  readonly previous?: Definition | undefined
}

export class Workflows extends Context.Service<Workflows, {
  /** Summaries, read without their graphs: what the API's lists answer. */
  readonly list: (
    principal: Principal,
    filter: WorkflowFilter,
    window: ListWindow
  ) => Effect.Effect<ListSlice<WorkflowSummary>>
  readonly create: (principal: Principal, input: WorkflowCreateInput) => Effect.Effect<WorkflowRecord, Unprocessable>
  readonly get: (principal: Principal, id: string) => Effect.Effect<WorkflowRecord, NotFound>
  /** The workflow without its graph, read without it: what the API's GET answers. */
  readonly getSummary: (principal: Principal, id: string) => Effect.Effect<WorkflowSummary, NotFound>
  /**
   * A changed definition is recorded as a save of its revision (`action`, `update` by default). `previous` is the
   * graph whose edge and condition ids the new definition may keep (the current one by default; a restored
   * revision's own when it comes back).
   */
  readonly update: (
    principal: Principal,
    id: string,
    input: WorkflowUpdateInput,
    options?: SaveOptions
  ) => Effect.Effect<WorkflowRecord, WriteError>
  /** Validates a definition and stores it as a revision of the workflow without making it current; answers its id. */
  readonly saveDraft: (principal: Principal, id: string, definition: unknown) => Effect.Effect<string, NotFound | Unprocessable>
  /**
   * Removes a draft or archived workflow that no active workflow calls (decisions 3.1). `beforeRemove` runs in the
   * same transaction once the checks passed, before the workflow and its runs go: the executions capability ends the
   * live runs there (`Executions.deleteWorkflow`).
   */
  readonly delete: (
    principal: Principal,
    id: string,
    options?: { readonly beforeRemove?: ((workflow: WorkflowRecord) => Effect.Effect<void>) | undefined }
  ) => Effect.Effect<void, NotFound | Unprocessable>
  /** The workflow with its definition, read-only name fields filled. */
  readonly getWithDefinition: (principal: Principal, id: string) => Effect.Effect<WorkflowRecord, NotFound>
}>()("@parley/core/workflows/Workflows") {
  static readonly layer = Layer.effect(
    Workflows,
    Effect.gen(function*() {
      const repo = yield* WorkflowsRepo
      const tx = yield* Transactor
      const ids = yield* Ids
      const triggers = yield* Triggers
      const revisions = yield* RevisionsRepo
      const refs = yield* Effect.context<DefinitionReferences>()
      const provide = <A, E>(effect: Effect.Effect<A, E, DefinitionReferences | Ids>) =>
        effect.pipe(Effect.provideService(Ids, ids), Effect.provideContext(refs))

      const find = (projectId: string, id: string) =>
        repo.findById(projectId, id).pipe(
          Effect.flatMap(Option.match({ onNone: () => Effect.fail(notFound("Workflow", id)), onSome: Effect.succeed }))
        )

      const freeSlug = Effect.fnUntraced(function*(projectId: string, name: string) {
        const base = slugify(name, "workflow")
        for (let attempt = 1;; attempt++) {
          const candidate = slugCandidate(base, attempt)
          if (!(yield* repo.slugTaken(projectId, candidate))) return candidate
        }
      })

      /** Full graph validation plus trigger uniqueness, run when a workflow becomes active. */
      const activationChecks = Effect.fnUntraced(function*(workflow: WorkflowRecord) {
        yield* provide(validateDefinition(workflow.definition, {
          projectId: workflow.project_id,
          workflowId: workflow.id,
          previous: workflow.definition
        }))
        yield* triggers.checkActivation(workflow.project_id, workflow.id)
      })

      /** Records the save of `workflow`'s definition (issue 32 §3): who saved which graph, when, and how. */
      const recordSave = Effect.fnUntraced(function*(principal: Principal, workflow: WorkflowRecord, action: SaveAction, definition: Definition) {
        yield* revisions.recordSave({
          id: yield* ids.uuid,
          project_id: workflow.project_id,
          workflow_id: workflow.id,
          revision_id: revisionId(workflow.id, definition),
          action,
          saved_by: principal.apiKey,
          saved_at: yield* nowIso
        }, definition)
      })

      const create = Effect.fn("Workflows.create")(function*(principal: Principal, input: WorkflowCreateInput) {
        const projectId = principal.project.id
        const name = yield* checkName(input.name)
        yield* checkFields(input)
        const id = yield* ids.uuid
        const definition: Definition = input.definition === undefined
          ? defaultDefinition()
          : yield* provide(validateDefinition(input.definition, { projectId, workflowId: id, previous: undefined }))
        const now = yield* nowIso
        const record: WorkflowRecord = {
          id,
          project_id: projectId,
          name,
          slug: input.slug ?? (yield* freeSlug(projectId, name)),
          description: input.description ?? null,
          status: input.status ?? "draft",
          lock_version: 0,
          message_debounce_seconds: input.message_debounce_seconds ?? null,
          agent_default_tools_version: input.agent_default_tools_version === undefined
            ? 2
            : input.agent_default_tools_version,
          inbound_message_read_mode: input.inbound_message_read_mode ?? "read_with_typing",
          created_at: now,
          updated_at: now,
          execution_count: 0,
          last_executed_at: null,
          created_by: principal.apiKey,
          definition
        }
        if (record.status === "active") yield* activationChecks(record)
        yield* tx.withTransaction(Effect.gen(function*() {
          yield* repo.insert(record).pipe(Effect.catchTag("Duplicate", (e) => Effect.fail(onDuplicate(e))))
          yield* recordSave(principal, record, "create", definition)
        }))
        return record
      })

      const update = Effect.fn("Workflows.update")(function*(principal: Principal, id: string, input: WorkflowUpdateInput, options: SaveOptions = {}) {
        const projectId = principal.project.id
        return yield* tx.withTransaction(Effect.gen(function*() {
          const current = yield* find(projectId, id)
          if (input.lock_version !== undefined && input.lock_version !== null && input.lock_version !== current.lock_version) {
            return yield* staleLockVersion()
          }
          yield* checkFields(input)
          const name = input.name !== undefined ? yield* checkName(input.name) : current.name
          const definition = input.definition !== undefined
            ? yield* provide(validateDefinition(input.definition, { projectId, workflowId: id, previous: options.previous ?? current.definition }))
            : current.definition
          const status = input.status ?? current.status
          yield* checkMove(current.status, status)
          const next: WorkflowRecord = {
            ...current,
            name,
            slug: input.slug ?? current.slug,
            description: input.description !== undefined ? input.description : current.description,
            status,
            message_debounce_seconds: input.message_debounce_seconds !== undefined
              ? input.message_debounce_seconds
              : current.message_debounce_seconds,
            agent_default_tools_version: input.agent_default_tools_version !== undefined
              ? input.agent_default_tools_version
              : current.agent_default_tools_version,
            inbound_message_read_mode: input.inbound_message_read_mode ?? current.inbound_message_read_mode,
            definition,
            lock_version: current.lock_version + 1,
            updated_at: yield* nowIso
          }
          if (status === "active" && current.status !== "active") yield* activationChecks(next)
          const stored = yield* repo.update(next, current.lock_version).pipe(
            Effect.catchTag("Duplicate", (e) => Effect.fail(onDuplicate(e)))
          )
          if (Option.isNone(stored)) return yield* staleLockVersion()
          if (input.definition !== undefined && revisionId(id, definition) !== revisionId(id, current.definition)) {
            yield* recordSave(principal, stored.value, options.action ?? "update", definition)
          }
          return stored.value
        }))
      })

      const saveDraft = Effect.fn("Workflows.saveDraft")(function*(principal: Principal, id: string, input: unknown) {
        const projectId = principal.project.id
        return yield* tx.withTransaction(Effect.gen(function*() {
          const current = yield* find(projectId, id)
          const definition = yield* provide(validateDefinition(input, { projectId, workflowId: id, previous: current.definition }))
          yield* recordSave(principal, current, "draft", definition)
          return revisionId(id, definition)
        }))
      })

      const remove = Effect.fn("Workflows.delete")(function*(
        principal: Principal,
        id: string,
        options: { readonly beforeRemove?: ((workflow: WorkflowRecord) => Effect.Effect<void>) | undefined } = {}
      ) {
        const projectId = principal.project.id
        yield* tx.withTransaction(Effect.gen(function*() {
          const current = yield* find(projectId, id)
          if (current.status === "active") {
            return yield* unprocessable("Archive or unpublish the workflow before deleting it")
          }
          // The newest active workflow whose current definition has a `call` node starting this one (never itself:
          // it is not active).
          const callers = yield* repo.referrers(projectId, { kind: "workflow", target: id }, ["active"], 1)
          if (callers.length > 0) {
            return yield* unprocessable(`Workflow is called by active workflow ${callers[0]!.name}`)
          }
          if (options.beforeRemove !== undefined) yield* options.beforeRemove(current)
          yield* repo.delete(projectId, id)
        }))
      })

      return Workflows.of({
        list: (principal, filter, window) => repo.listSummaries(principal.project.id, filter, window),
        create,
        get: (principal, id) => find(principal.project.id, id),
        getSummary: (principal, id) =>
          repo.findSummary(principal.project.id, id).pipe(
            Effect.flatMap(Option.match({ onNone: () => Effect.fail(notFound("Workflow", id)), onSome: Effect.succeed }))
          ),
        update,
        saveDraft,
        delete: remove,
        getWithDefinition: Effect.fn("Workflows.getWithDefinition")(function*(principal: Principal, id: string) {
          const workflow = yield* find(principal.project.id, id)
          const definition = yield* withReadOnlyNames(principal.project.id, workflow.definition).pipe(Effect.provideContext(refs))
          return { ...workflow, definition }
        })
      })
    })
  )
}

