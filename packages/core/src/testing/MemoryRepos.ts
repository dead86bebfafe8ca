/**
 * Memory implementations of the storage ports over one `MemoryStore`. They
 * keep the rules the Postgres schema enforces (foreign keys, unique keys,
 * timestamps and JSON as they come back from the database), so a test that
 * passes here passes on Postgres; the conformance suites hold both to that.
 */
import { Effect, Layer, Option, PubSub, Stream } from "effect"
import { ProjectsRepo } from "../projects/ProjectsRepo.ts"
import { Duplicate } from "../ports/StorageError.ts"
import { TriggersRepo, WorkflowsRepo } from "../workflows/WorkflowsRepo.ts"
import type { ApiKey, Project } from "../projects/Project.ts"
import type { CursorKey, ListSlice, ListWindow } from "../shared/Pagination.ts"
import type { TriggerRecord, TriggerType } from "../workflows/Trigger.ts"
import type { WorkflowFilter, WorkflowRecord } from "../workflows/Workflow.ts"
import { layerMemoryTransactor, MemoryStore, memoryTable } from "./MemoryStore.ts"
import { layerMemoryEventsStorage } from "./MemoryEvents.ts"
import { layerMemoryExecutionsStorage, removeWorkflowExecutions } from "./MemoryExecutions.ts"
import { layerMemoryFunctionsStorage } from "./MemoryFunctions.ts"
import { layerMemoryMessagingStorage } from "./MemoryMessaging.ts"
import { layerMemoryWebhooksStorage } from "./MemoryWebhooks.ts"
import { layerMemoryCustomersRepo } from "./MemoryCustomers.ts"
import { layerMemoryTemplatesRepo } from "./MemoryTemplates.ts"
import { layerMemoryProjectSecretsRepo } from "./MemoryProjectSecrets.ts"
import { layerMemoryProviderModelsRepo } from "./MemoryProviderModels.ts"
import { layerMemoryContactErasureRepo } from "./MemoryContactErasure.ts"
import { layerMemoryVoiceAgentsRepo } from "./MemoryVoiceAgents.ts"
import { layerMemoryKnowledgeSearch } from "./MemoryKnowledgeSearch.ts"
import { layerMemoryRateLimits } from "./MemoryRateLimits.ts"
import { layerMemorySetupLinksRepo } from "./MemorySetupLinks.ts"
import { layerMemoryInboxEmbedsRepo } from "./MemoryInboxEmbeds.ts"
import { layerMemoryLogSearch } from "./MemoryLogSearch.ts"
import { layerMemoryNumberOperations } from "./MemoryNumberOperations.ts"
import { layerMemoryBroadcastsRepo } from "./MemoryBroadcasts.ts"
import { compareKeys, instant, json, nullableTimestamp, sliceWindow, timestamp, violation } from "./MemoryRows.ts"

export { sliceWindow }

const Projects = memoryTable<Project>("projects")
const ApiKeys = memoryTable<ApiKey>("api_keys")
const Workflows = memoryTable<WorkflowRecord>("workflows")
const Triggers = memoryTable<TriggerRecord>("triggers")

const keyOf = (row: { readonly created_at: string; readonly id: string }): CursorKey => ({
  sortKey: row.created_at,
  id: row.id
})

const oldestFirst = <A extends { readonly created_at: string; readonly id: string }>(rows: ReadonlyArray<A>) =>
  [...rows].sort((a, b) => compareKeys(keyOf(a), keyOf(b)))


const storedProject = (p: Project): Project => ({
  ...p,
  created_at: timestamp(p.created_at),
  updated_at: timestamp(p.updated_at)
})

const storedKey = (k: ApiKey): ApiKey => ({
  ...k,
  created_at: timestamp(k.created_at),
  revoked_at: nullableTimestamp(k.revoked_at)
})

const storedWorkflow = (w: WorkflowRecord): WorkflowRecord => ({
  ...w,
  created_at: timestamp(w.created_at),
  updated_at: timestamp(w.updated_at),
  last_executed_at: nullableTimestamp(w.last_executed_at),
  created_by: json(w.created_by),
  definition: json(w.definition)
})

const storedTrigger = (t: TriggerRecord): TriggerRecord => ({
  ...t,
  created_at: timestamp(t.created_at),
  updated_at: timestamp(t.updated_at),
  triggerable: json(t.triggerable)
})

export const layerMemoryProjectsRepo = Layer.effect(
  ProjectsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const changes = yield* PubSub.unbounded<void>()
    const signal = <A>(result: Option.Option<A>): Effect.Effect<Option.Option<A>> =>
      Option.isSome(result) ? Effect.as(PubSub.publish(changes, undefined), result) : Effect.succeed(result)

    return ProjectsRepo.of({
      insert: Effect.fn("ProjectsRepo.insert")((project: Project) =>
        store.run((db) => {
          if (db.get(Projects, project.id) !== undefined) violation(`duplicate project id ${project.id}`)
          db.put(Projects, project.id, storedProject(project))
        })
      ),
      findById: Effect.fn("ProjectsRepo.findById")((id: string) =>
        store.run((db) => Option.fromNullishOr(db.get(Projects, id)))
      ),
      list: store.run((db) => oldestFirst(db.all(Projects))).pipe(Effect.withSpan("ProjectsRepo.list")),
      setDisabled: Effect.fn("ProjectsRepo.setDisabled")((id: string, disabled: boolean, at: string) =>
        store.run((db): Option.Option<Project> => {
          const project = db.get(Projects, id)
          if (project === undefined) return Option.none()
          const updated = storedProject({ ...project, disabled, updated_at: at })
          db.put(Projects, id, updated)
          return Option.some(updated)
        }).pipe(Effect.flatMap(signal))
      ),
      insertKey: Effect.fn("ProjectsRepo.insertKey")((key: ApiKey) =>
        store.run((db) => {
          if (db.get(Projects, key.project_id) === undefined) violation(`no project ${key.project_id}`)
          if (db.get(ApiKeys, key.id) !== undefined) violation(`duplicate api key id ${key.id}`)
          if (db.all(ApiKeys).some((k) => k.key_hash === key.key_hash)) violation("duplicate api key hash")
          db.put(ApiKeys, key.id, storedKey(key))
        })
      ),
      findKeyByHash: Effect.fn("ProjectsRepo.findKeyByHash")((hash: string) =>
        store.run((db) => {
          const key = db.all(ApiKeys).find((k) => k.key_hash === hash && k.revoked_at === null)
          const project = key === undefined ? undefined : db.get(Projects, key.project_id)
          return key === undefined || project === undefined ? Option.none() : Option.some({ key, project })
        })
      ),
      listKeys: Effect.fn("ProjectsRepo.listKeys")((projectId: string) =>
        store.run((db) => oldestFirst(db.all(ApiKeys).filter((k) => k.project_id === projectId)))
      ),
      revokeKey: Effect.fn("ProjectsRepo.revokeKey")((projectId: string, keyId: string, at: string) =>
        store.run((db): Option.Option<ApiKey> => {
          const key = db.get(ApiKeys, keyId)
          if (key === undefined || key.project_id !== projectId || key.revoked_at !== null) return Option.none()
          const revoked = storedKey({ ...key, revoked_at: at })
          db.put(ApiKeys, keyId, revoked)
          return Option.some(revoked)
        }).pipe(Effect.flatMap(signal))
      ),
      keyChanges: Stream.fromPubSub(changes),
      // Memory transactions already run one at a time.
      lockBootstrap: Effect.void
    })
  })
)

const matches = (filter: WorkflowFilter) => (w: WorkflowRecord) =>
  (filter.status !== undefined ? w.status === filter.status : w.status !== "archived") &&
  (filter.name_contains === undefined || w.name.toLowerCase().includes(filter.name_contains.toLowerCase())) &&
  (filter.created_after === undefined || instant(w.created_at) >= instant(filter.created_after)) &&
  (filter.created_before === undefined || instant(w.created_at) <= instant(filter.created_before))

export const layerMemoryWorkflowsRepo = Layer.effect(
  WorkflowsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore

    /** The unique key `workflow` would collide on among the project's other workflows. */
    const collision = (all: ReadonlyArray<WorkflowRecord>, workflow: WorkflowRecord): Duplicate | undefined => {
      const others = all.filter((w) => w.project_id === workflow.project_id && w.id !== workflow.id)
      if (others.some((w) => w.name.toLowerCase() === workflow.name.toLowerCase())) return new Duplicate({ field: "name" })
      if (others.some((w) => w.slug === workflow.slug)) return new Duplicate({ field: "slug" })
      return undefined
    }

    return WorkflowsRepo.of({
      insert: Effect.fn("WorkflowsRepo.insert")(function*(workflow: WorkflowRecord) {
        const duplicate = yield* store.run((db) => {
          if (db.get(Projects, workflow.project_id) === undefined) violation(`no project ${workflow.project_id}`)
          if (db.get(Workflows, workflow.id) !== undefined) violation(`duplicate workflow id ${workflow.id}`)
          const duplicate = collision(db.all(Workflows), workflow)
          if (duplicate === undefined) db.put(Workflows, workflow.id, storedWorkflow(workflow))
          return duplicate
        })
        if (duplicate !== undefined) return yield* duplicate
      }),
      findById: Effect.fn("WorkflowsRepo.findById")((projectId: string, id: string) =>
        store.run((db) => Option.filter(Option.fromNullishOr(db.get(Workflows, id)), (w) => w.project_id === projectId))
      ),
      list: Effect.fn("WorkflowsRepo.list")((projectId: string, filter: WorkflowFilter, window: ListWindow) =>
        store.run((db) => {
          const rows = db.all(Workflows).filter((w) => w.project_id === projectId).filter(matches(filter))
          return sliceWindow(oldestFirst(rows).reverse(), window)
        })
      ),
      update: Effect.fn("WorkflowsRepo.update")(function*(workflow: WorkflowRecord, expectedLockVersion: number) {
        const result = yield* store.run((db) => {
          const current = db.get(Workflows, workflow.id)
          if (
            current === undefined || current.project_id !== workflow.project_id ||
            current.lock_version !== expectedLockVersion
          ) return Option.none<WorkflowRecord>()
          const duplicate = collision(db.all(Workflows), workflow)
          if (duplicate !== undefined) return duplicate
          // Identity and creation time are not the caller's to change.
          const updated = storedWorkflow({ ...workflow, project_id: current.project_id, created_at: current.created_at })
          db.put(Workflows, workflow.id, updated)
          return Option.some(updated)
        })
        if (result instanceof Duplicate) return yield* result
        return result
      }),
      delete: Effect.fn("WorkflowsRepo.delete")((projectId: string, id: string) =>
        store.run((db) => {
          const workflow = db.get(Workflows, id)
          if (workflow === undefined || workflow.project_id !== projectId) return false
          for (const t of db.all(Triggers)) if (t.workflow_id === id) db.remove(Triggers, t.id)
          removeWorkflowExecutions(db, projectId, id)
          return db.remove(Workflows, id)
        })
      ),
      slugTaken: Effect.fn("WorkflowsRepo.slugTaken")((projectId: string, slug: string) =>
        store.run((db) => db.all(Workflows).some((w) => w.project_id === projectId && w.slug === slug))
      ),
      countExecution: Effect.fn("WorkflowsRepo.countExecution")((projectId: string, id: string, at: string) =>
        store.run((db) => {
          const w = db.get(Workflows, id)
          if (w === undefined || w.project_id !== projectId) return
          const last = w.last_executed_at === null || Date.parse(at) > Date.parse(w.last_executed_at) ? timestamp(at) : w.last_executed_at
          db.put(Workflows, id, { ...w, execution_count: w.execution_count + 1, last_executed_at: last })
        })
      )
    })
  })
)

export const layerMemoryTriggersRepo = Layer.effect(
  TriggersRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore

    const inProject = (projectId: string) => (t: TriggerRecord) => t.project_id === projectId

    return TriggersRepo.of({
      insert: Effect.fn("TriggersRepo.insert")((trigger: TriggerRecord) =>
        store.run((db) => {
          const workflow = db.get(Workflows, trigger.workflow_id)
          if (workflow === undefined || workflow.project_id !== trigger.project_id) {
            violation(`no workflow ${trigger.workflow_id} in project ${trigger.project_id}`)
          }
          if (db.get(Triggers, trigger.id) !== undefined) violation(`duplicate trigger id ${trigger.id}`)
          db.put(Triggers, trigger.id, storedTrigger(trigger))
        })
      ),
      findById: Effect.fn("TriggersRepo.findById")((projectId: string, id: string) =>
        store.run((db) => Option.filter(Option.fromNullishOr(db.get(Triggers, id)), inProject(projectId)))
      ),
      listByWorkflow: Effect.fn("TriggersRepo.listByWorkflow")((projectId: string, workflowId: string) =>
        store.run((db) =>
          oldestFirst(db.all(Triggers).filter((t) => t.project_id === projectId && t.workflow_id === workflowId))
        )
      ),
      listByType: Effect.fn("TriggersRepo.listByType")((projectId: string, type: TriggerType) =>
        store.run((db) =>
          oldestFirst(db.all(Triggers).filter((t) => t.project_id === projectId && t.trigger_type === type)).flatMap(
            (trigger) => {
              const workflow = db.get(Workflows, trigger.workflow_id)
              return workflow === undefined
                ? []
                : [{ trigger, workflowStatus: workflow.status, workflowName: workflow.name }]
            }
          )
        )
      ),
      update: Effect.fn("TriggersRepo.update")((trigger: TriggerRecord) =>
        store.run((db) => {
          const current = db.get(Triggers, trigger.id)
          if (current === undefined || current.project_id !== trigger.project_id) return
          db.put(
            Triggers,
            trigger.id,
            storedTrigger({
              ...current,
              trigger_type: trigger.trigger_type,
              active: trigger.active,
              display_name: trigger.display_name,
              triggerable: trigger.triggerable,
              updated_at: trigger.updated_at
            })
          )
        })
      ),
      delete: Effect.fn("TriggersRepo.delete")((projectId: string, id: string) =>
        store.run((db) => {
          const trigger = db.get(Triggers, id)
          return trigger !== undefined && trigger.project_id === projectId && db.remove(Triggers, id)
        })
      )
    })
  })
)

/** Transactor + every storage port in memory, plus the `MemoryStore` they share. */
export const layerMemoryStorage = Layer.mergeAll(
  layerMemoryTransactor,
  layerMemoryProjectsRepo,
  layerMemoryWorkflowsRepo,
  layerMemoryTriggersRepo,
  layerMemoryEventsStorage,
  layerMemoryFunctionsStorage,
  layerMemoryMessagingStorage,
  layerMemoryWebhooksStorage,
  layerMemoryCustomersRepo,
  layerMemoryExecutionsStorage,
  layerMemoryTemplatesRepo,
  layerMemoryProjectSecretsRepo,
  layerMemoryProviderModelsRepo,
  layerMemoryKnowledgeSearch,
  layerMemoryRateLimits,
  layerMemorySetupLinksRepo,
  layerMemoryInboxEmbedsRepo,
  layerMemoryContactErasureRepo,
  layerMemoryVoiceAgentsRepo,
  layerMemoryLogSearch,
  layerMemoryNumberOperations,
  layerMemoryBroadcastsRepo
).pipe(Layer.provideMerge(MemoryStore.layer))
