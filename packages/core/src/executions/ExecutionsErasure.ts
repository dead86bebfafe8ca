/**
 * What contact erasure (decisions 4.8) removes of executions' records: the contact's runs (its id, or one of its
 * conversations), their step events and its routed inputs. Executions owns the port; `Parley.ts` wires it into
 * erasure (`ContactHoldings`). Each deletion removes at most `limit` rows, answers how many and is idempotent: erasure
 * calls it until it answers less.
 */
import { Context, Effect, Layer } from "effect"
import type { ConversationRecord } from "../messaging/Message.ts"
import type { ExecutionRecord, StepEventRecord } from "./Execution.ts"
import type { ExecutionInputRecord } from "./ExecutionsRepo.ts"
import { byId, MemoryStore, memoryTable, type MemoryTables, removeSome } from "../ports/MemoryStore.ts"

export class ExecutionsErasure extends Context.Service<ExecutionsErasure, {
  /** Step events of the contact's runs. */
  readonly deleteStepEvents: (projectId: string, contactId: string, limit: number) => Effect.Effect<number>
  /** The contact's routed inputs, then its runs whatever their status (a live run is fenced off by its missing row). */
  readonly deleteRuns: (projectId: string, contactId: string, limit: number) => Effect.Effect<number>
}>()("@parley/core/executions/ExecutionsErasure") {}

const Conversations = memoryTable<ConversationRecord>("msg_conversations")
const Executions = memoryTable<ExecutionRecord>("workflow_executions")
const StepEvents = memoryTable<StepEventRecord>("workflow_step_events")
const Inputs = memoryTable<ExecutionInputRecord>("workflow_execution_inputs")

const runsOf = (db: MemoryTables, projectId: string, contactId: string) => {
  const conversations = new Set(
    db.all(Conversations).filter((c) => c.project_id === projectId && c.contact_id === contactId).map((c) => c.id)
  )
  return db.all(Executions).filter((e) =>
    e.project_id === projectId &&
    (e.contact_id === contactId || (e.msg_conversation_id !== null && conversations.has(e.msg_conversation_id)))
  )
}

export const layerMemoryExecutionsErasure = Layer.effect(
  ExecutionsErasure,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    return ExecutionsErasure.of({
      deleteStepEvents: Effect.fn("ExecutionsErasure.deleteStepEvents")((projectId: string, contactId: string, limit: number) =>
        store.run((db) => {
          const runs = new Set(runsOf(db, projectId, contactId).map((e) => e.id))
          return removeSome(db, StepEvents, db.all(StepEvents).filter((e) => runs.has(e.execution_id)), limit, byId)
        })
      ),
      deleteRuns: Effect.fn("ExecutionsErasure.deleteRuns")((projectId: string, contactId: string, limit: number) =>
        store.run((db) => {
          const inputs = db.all(Inputs).filter((i) => i.project_id === projectId && i.contact_id === contactId)
          const removedInputs = removeSome(db, Inputs, inputs, limit, byId)
          const runs = runsOf(db, projectId, contactId)
          const gone = new Set(runs.slice(0, limit - removedInputs).map((e) => e.id))
          // Step events are the previous step's; any a live run wrote since go with their execution.
          for (const e of db.all(StepEvents)) if (gone.has(e.execution_id)) db.remove(StepEvents, e.id)
          return removedInputs + removeSome(db, Executions, runs, limit - removedInputs, byId)
        })
      )
    })
  })
)
