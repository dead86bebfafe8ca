/**
 * A step event's foreign key to its run goes (issue 30 §1). It checked every event row with a lookup of the run,
 * `FOR KEY SHARE`, through a trigger per row: a checkpoint of a 51-step chain inserts 154 events, and its insert took
 * 7.0 ms with the key against 2.7–3.1 ms without (`EXPLAIN ANALYZE`, the key's trigger 2.0 ms of it; loaded machine).
 * Nothing needs the check: an event is written by its run's checkpoint, in the statement that compare-and-sets the
 * run's row (`ExecutionsRepo.checkpoint`: no row, no events), or in the transaction that inserted the run, whose
 * append still refuses an event of no run (`StepEventsRepo.append` takes the run's id from a join).
 *
 * What the key's `ON DELETE CASCADE` did, a statement trigger on the runs does: every statement that deletes runs
 * (a workflow's deletion, a contact's erasure, each a cascade or a delete of its own) deletes their events after it,
 * by the runs' ids, through each partition's execution index. Its statement runs with a snapshot taken after the
 * runs' rows were deleted, so the events of a checkpoint that committed while the delete waited for the run's row
 * are seen and deleted, as the cascade saw them.
 */
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { decodeRows } from "../Rows.ts"

const toKeys = decodeRows("0041 foreign keys", Schema.Struct({ conname: Schema.String }))

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const keys = yield* toKeys(
    yield* sql`
      SELECT conname FROM pg_constraint
      WHERE conrelid = 'workflow_step_events'::regclass AND contype = 'f' AND confrelid = 'workflow_executions'::regclass`
  )
  for (const { conname } of keys) yield* sql`ALTER TABLE workflow_step_events DROP CONSTRAINT ${sql(conname)}`
  // PL/pgSQL, so the statement's plan is kept per session; `= ANY` of an array, not a join to the transition table:
  // the planner reads each partition by its index whatever number of runs it guesses.
  yield* sql`
    CREATE FUNCTION workflow_executions_events_delete() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM workflow_step_events WHERE execution_id = ANY (ARRAY(SELECT id FROM gone));
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER workflow_executions_events_delete AFTER DELETE ON workflow_executions
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION workflow_executions_events_delete()`
})
