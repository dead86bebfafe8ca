/**
 * `WorkflowStatsRepo` on PostgreSQL: one aggregate query over a workflow's runs (by their workflow index) and their
 * step events (by execution), nothing loaded into memory. Step seq orders a run's events (state version × 1000 +
 * index), so "after the assignment" is `seq >` the assignment's. Each run's events are read from its start on
 * (`stepEventsSince`), and all of them from the workflow's first run's: PostgreSQL skips the weekly partitions (0036)
 * from before the workflow ran.
 */
import { type SplitGoal, WorkflowStatsRepo } from "@parley/core"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { stepEventsSinceStart } from "./ExecutionsRepo.ts"
import { decodeRows } from "./Rows.ts"

const decodeBranches = decodeRows(Schema.Struct({ branch: Schema.String, entries: Schema.Int, conversions: Schema.Int }))
const decodeFlows = decodeRows(Schema.Struct({
  node_id: Schema.String,
  entered: Schema.Int,
  left_count: Schema.Int,
  waiting: Schema.Int
}))

export const layerWorkflowStatsRepo = Layer.effect(
  WorkflowStatsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const since = (started: string) => stepEventsSinceStart(sql, sql.literal(started))
    /** No event of the workflow's runs is older: a value the executor prunes the partitions by. */
    const workflowSince = (projectId: string, workflowId: string) =>
      sql`(SELECT ${since("min(started_at)")} FROM workflow_executions WHERE project_id = ${projectId} AND workflow_id = ${workflowId})`

    const reached = (projectId: string, goal: SplitGoal | null) => {
      if (goal === null) return sql`false`
      if (goal.type === "event") {
        return sql`entries.msg_conversation_id IS NOT NULL AND EXISTS (
          SELECT 1 FROM events v
          WHERE v.project_id = ${projectId} AND v.name = ${goal.event_name}
            AND v.conversation_id = entries.msg_conversation_id AND v.created_at >= entries.created_at)`
      }
      const later = goal.type === "node"
        ? sql`g.event_type = 'step_entered' AND g.step->>'identifier' = ${goal.node_id}`
        : sql`g.event_type = 'user_input_received'`
      return sql`EXISTS (
        SELECT 1 FROM workflow_step_events g
        WHERE g.execution_id = entries.execution_id AND g.created_at >= ${since("entries.started_at")}
          AND g.seq > entries.seq AND ${later})`
    }

    return WorkflowStatsRepo.of({
      splitCounts: Effect.fnUntraced(function*(projectId: string, workflowId: string, nodeId: string, goal: SplitGoal | null) {
        return yield* decodeBranches(yield* sql`
          WITH entries AS (
            SELECT DISTINCT ON (e.execution_id)
              e.execution_id, e.seq, e.created_at, x.started_at, e.payload->>'branch' AS branch, x.msg_conversation_id
            FROM workflow_executions x
            JOIN workflow_step_events e ON e.execution_id = x.id AND e.created_at >= ${since("x.started_at")}
            WHERE x.project_id = ${projectId} AND x.workflow_id = ${workflowId}
              AND e.created_at >= ${workflowSince(projectId, workflowId)}
              AND e.event_type = 'split_assigned' AND e.step->>'identifier' = ${nodeId}
            ORDER BY e.execution_id, e.seq
          )
          SELECT COALESCE(branch, '') AS branch, count(*)::int AS entries,
                 (count(*) FILTER (WHERE ${reached(projectId, goal)}))::int AS conversions
          FROM entries GROUP BY 1`)
      }, Effect.orDie),
      nodeFlow: Effect.fnUntraced(function*(projectId: string, workflowId: string) {
        const rows = yield* decodeFlows(yield* sql`
          WITH passed AS (
            SELECT e.step->>'identifier' AS node_id,
                   (count(DISTINCT e.execution_id) FILTER (WHERE e.event_type = 'step_entered'))::int AS entered,
                   (count(DISTINCT e.execution_id) FILTER (WHERE e.event_type = 'step_completed'))::int AS left_count
            FROM workflow_executions x
            JOIN workflow_step_events e ON e.execution_id = x.id AND e.created_at >= ${since("x.started_at")}
            WHERE x.project_id = ${projectId} AND x.workflow_id = ${workflowId}
              AND e.created_at >= ${workflowSince(projectId, workflowId)}
              AND e.event_type IN ('step_entered', 'step_completed') AND e.step IS NOT NULL
            GROUP BY 1
          ), waiting AS (
            SELECT current_node AS node_id, count(*)::int AS waiting
            FROM workflow_executions
            WHERE project_id = ${projectId} AND workflow_id = ${workflowId} AND status = 'waiting' AND current_node IS NOT NULL
            GROUP BY 1
          )
          SELECT COALESCE(p.node_id, w.node_id) AS node_id, COALESCE(p.entered, 0) AS entered,
                 COALESCE(p.left_count, 0) AS left_count, COALESCE(w.waiting, 0) AS waiting
          FROM passed p FULL JOIN waiting w ON w.node_id = p.node_id`)
        return rows.map((r) => ({ node_id: r.node_id, entered: r.entered, left: r.left_count, waiting: r.waiting }))
      }, Effect.orDie)
    })
  })
)
