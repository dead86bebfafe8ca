/**
 * `ExecutionsErasure` on PostgreSQL: contact erasure's deletions of executions' rows (the contact's runs, their step
 * events, its routed inputs), each at most `limit` rows chosen by a sub-select.
 */
import { ExecutionsErasure } from "@parley/core"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { stepEventsSinceStart } from "./ExecutionsRepo.ts"
import { conversationsOf } from "./MessagingErasure.ts"

export const layerExecutionsErasure = Layer.effect(
  ExecutionsErasure,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    /** The contact's runs: its id, or one of its conversations. */
    const runsOf = (projectId: string, contactId: string) =>
      sql`
        SELECT id FROM workflow_executions WHERE project_id = ${projectId} AND contact_id = ${contactId}
        UNION
        SELECT id FROM workflow_executions
        WHERE project_id = ${projectId} AND msg_conversation_id IN (${conversationsOf(sql, projectId, contactId)})`
    return ExecutionsErasure.of({
      deleteStepEvents: Effect.fnUntraced(function*(projectId: string, contactId: string, limit: number) {
        // No event of the contact's runs is older than their first start: the executor skips the weekly partitions
        // (0036) from before it. An event outside it (none is: `stepEventsSince`) would still go with its run.
        const since = sql`(
          SELECT ${stepEventsSinceStart(sql, sql.literal("min(started_at)"))} FROM workflow_executions
          WHERE id IN (${runsOf(projectId, contactId)}))`
        // The execution condition outside the subquery too: each partition (0036) finds its rows by its execution
        // index; without it the delete read every partition whole (`bench/partitionPlans.ts`).
        const rows = yield* sql`
          DELETE FROM workflow_step_events
          WHERE execution_id IN (${runsOf(projectId, contactId)}) AND created_at >= ${since} AND (id, created_at) IN (
            SELECT id, created_at FROM workflow_step_events
            WHERE execution_id IN (${runsOf(projectId, contactId)}) AND created_at >= ${since} LIMIT ${limit})
          RETURNING 1`
        return rows.length
      }, Effect.orDie),
      deleteRuns: Effect.fnUntraced(function*(projectId: string, contactId: string, limit: number) {
        const inputs = yield* sql`
          DELETE FROM workflow_execution_inputs WHERE id IN (
            SELECT id FROM workflow_execution_inputs
            WHERE project_id = ${projectId} AND contact_id = ${contactId} LIMIT ${limit})
          RETURNING 1`
        if (inputs.length >= limit) return inputs.length
        // Step events a live run wrote since the previous step go with it (migration 0041's trigger).
        const runs = yield* sql`
          DELETE FROM workflow_executions WHERE id IN (
            SELECT id FROM (${runsOf(projectId, contactId)}) AS e LIMIT ${limit - inputs.length})
          RETURNING 1`
        return inputs.length + runs.length
      }, Effect.orDie)
    })
  })
)
