/** `WorkflowStatsRepo` in memory: the same counts as the PostgreSQL query, by scanning the tables. */
import { Effect, Layer } from "effect"
import type { EventRecord } from "../../events/Event.ts"
import { MemoryStore, memoryTable, type MemoryTables } from "../../ports/MemoryStore.ts"
import { instant } from "../../ports/MemoryRows.ts"
import type { ExecutionRecord, StepEventRecord } from "../Execution.ts"
import type { SplitGoal } from "../nodes/SplitNode.ts"
import { type BranchCounts, type NodeFlow, WorkflowStatsRepo } from "./WorkflowStatsRepo.ts"

const Executions = memoryTable<ExecutionRecord>("workflow_executions")
const StepEvents = memoryTable<StepEventRecord>("workflow_step_events")
const Events = memoryTable<EventRecord>("events")

/** Events in step-log order within a run. */
const bySeq = (a: StepEventRecord, b: StepEventRecord) => a.seq - b.seq

export const layerMemoryWorkflowStatsRepo = Layer.effect(
  WorkflowStatsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    const runsOf = (db: MemoryTables, projectId: string, workflowId: string) =>
      new Map(db.all(Executions).filter((e) => e.project_id === projectId && e.workflow_id === workflowId).map((e) => [e.id, e] as const))

    return WorkflowStatsRepo.of({
      splitCounts: Effect.fn("WorkflowStatsRepo.splitCounts")((projectId: string, workflowId: string, nodeId: string, goal: SplitGoal | null) =>
        store.run((db) => {
          const runs = runsOf(db, projectId, workflowId)
          const events = db.all(StepEvents).filter((e) => runs.has(e.execution_id)).sort(bySeq)
          const first = new Map<string, StepEventRecord>()
          for (const e of events) {
            if (e.event_type === "split_assigned" && e.step?.identifier === nodeId && !first.has(e.execution_id)) first.set(e.execution_id, e)
          }
          const converted = (entry: StepEventRecord): boolean => {
            if (goal === null) return false
            if (goal.type === "event") {
              const conversation = runs.get(entry.execution_id)?.msg_conversation_id ?? null
              return conversation !== null && db.all(Events).some((ev) =>
                ev.project_id === projectId && ev.name === goal.event_name && ev.conversation_id === conversation &&
                instant(ev.created_at) >= instant(entry.created_at)
              )
            }
            return events.some((e) =>
              e.execution_id === entry.execution_id && e.seq > entry.seq &&
              (goal.type === "node" ? e.event_type === "step_entered" && e.step?.identifier === goal.node_id : e.event_type === "user_input_received")
            )
          }
          const counts = new Map<string, { entries: number; conversions: number }>()
          for (const entry of first.values()) {
            const branch = String(entry.payload["branch"])
            const c = counts.get(branch) ?? { entries: 0, conversions: 0 }
            counts.set(branch, { entries: c.entries + 1, conversions: c.conversions + (converted(entry) ? 1 : 0) })
          }
          return [...counts].map(([branch, c]): BranchCounts => ({ branch, ...c }))
        })
      ),
      nodeFlow: Effect.fn("WorkflowStatsRepo.nodeFlow")((projectId: string, workflowId: string) =>
        store.run((db) => {
          const runs = runsOf(db, projectId, workflowId)
          const entered = new Map<string, Set<string>>()
          const left = new Map<string, Set<string>>()
          const add = (into: Map<string, Set<string>>, node: string, run: string) => into.set(node, (into.get(node) ?? new Set()).add(run))
          for (const e of db.all(StepEvents)) {
            if (!runs.has(e.execution_id) || e.step === null) continue
            if (e.event_type === "step_entered") add(entered, e.step.identifier, e.execution_id)
            if (e.event_type === "step_completed") add(left, e.step.identifier, e.execution_id)
          }
          const waiting = new Map<string, number>()
          for (const r of runs.values()) {
            if (r.status === "waiting" && r.current_node !== null) waiting.set(r.current_node, (waiting.get(r.current_node) ?? 0) + 1)
          }
          const nodes = new Set([...entered.keys(), ...left.keys(), ...waiting.keys()])
          return [...nodes].map((node_id): NodeFlow => ({
            node_id,
            entered: entered.get(node_id)?.size ?? 0,
            left: left.get(node_id)?.size ?? 0,
            waiting: waiting.get(node_id) ?? 0
          }))
        })
      )
    })
  })
)
