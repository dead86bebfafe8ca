/**
 * Who calls a function or a workflow (issue 30 §4): the references of each workflow's current definition
 * (`@parley/core` `definitionReferences`), written by the repository in the statement that inserts or updates the
 * workflow and gone with it (the foreign key's cascade), so a workflow's delete and a function's delete find their
 * callers by key instead of decoding every graph of the project. Backfilled here from the stored definitions, a batch
 * of workflows at a time (a project's graphs are megabytes).
 */
import { type Definition, definitionReferences, type WorkflowReference } from "@parley/core"
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { columnRows, decodeRows, JsonObject } from "../Rows.ts"

const BATCH = 500

const toDefinitions = decodeRows(
  "workflows",
  Schema.Struct({ project_id: Schema.String, id: Schema.String, definition: JsonObject<Definition>() })
)

type Row = WorkflowReference & { readonly project_id: string; readonly workflow_id: string }

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE workflow_references (
      project_id text COLLATE "C" NOT NULL,
      workflow_id text COLLATE "C" NOT NULL,
      kind text NOT NULL CHECK (kind IN ('function', 'workflow')),
      target text COLLATE "C" NOT NULL,
      -- Also the cascade's and a rewrite's path: a workflow's references lead with (project_id, workflow_id).
      PRIMARY KEY (project_id, workflow_id, kind, target),
      CONSTRAINT workflow_references_workflow_fkey FOREIGN KEY (project_id, workflow_id)
        REFERENCES workflows (project_id, id) ON DELETE CASCADE
    )`
  // The lookup: the workflows of a project that reference one target.
  yield* sql`CREATE INDEX workflow_references_target_idx ON workflow_references (project_id, kind, target, workflow_id)`
  for (let after = "";;) {
    const batch = yield* toDefinitions(
      yield* sql`SELECT project_id, id, definition FROM workflows WHERE id > ${after} ORDER BY id LIMIT ${BATCH}`
    )
    if (batch.length === 0) return
    const rows = batch.flatMap((w) =>
      definitionReferences(w.definition).map((r): Row => ({ project_id: w.project_id, workflow_id: w.id, ...r }))
    )
    if (rows.length > 0) {
      yield* sql`
        INSERT INTO workflow_references (project_id, workflow_id, kind, target)
        SELECT project_id, workflow_id, kind, target FROM ${
        columnRows(sql, rows, [
          ["project_id", "text", (r) => r.project_id],
          ["workflow_id", "text", (r) => r.workflow_id],
          ["kind", "text", (r) => r.kind],
          ["target", "text", (r) => r.target]
        ])
      }`
    }
    after = batch[batch.length - 1]!.id
  }
})
