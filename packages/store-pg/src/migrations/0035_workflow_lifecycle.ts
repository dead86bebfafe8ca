/**
 * A workflow's lifecycle (issue 32 §3): every save of a definition (the graph itself goes to `workflow_revisions`,
 * shared by content hash with the revisions runs are pinned to) and the staged rollout of a revision.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE workflow_saves (
      id text COLLATE "C" PRIMARY KEY,
      project_id text COLLATE "C" NOT NULL,
      workflow_id text COLLATE "C" NOT NULL,
      revision_id text COLLATE "C" NOT NULL,
      action text NOT NULL,
      saved_by jsonb NOT NULL,
      saved_at timestamptz NOT NULL,
      CONSTRAINT workflow_saves_workflow_fkey FOREIGN KEY (project_id, workflow_id)
        REFERENCES workflows (project_id, id) ON DELETE CASCADE
    )`
  // A revision's saves newest first; also the cascade from workflows (project_id, workflow_id lead the other index).
  yield* sql`CREATE INDEX workflow_saves_revision_idx ON workflow_saves (revision_id, saved_at DESC, id DESC)`
  yield* sql`CREATE INDEX workflow_saves_workflow_idx ON workflow_saves (project_id, workflow_id)`
  yield* sql`
    CREATE TABLE workflow_rollouts (
      project_id text COLLATE "C" NOT NULL,
      workflow_id text COLLATE "C" NOT NULL,
      revision_id text COLLATE "C" NOT NULL,
      percent integer NOT NULL CHECK (percent BETWEEN 0 AND 100),
      started_by jsonb NOT NULL,
      started_at timestamptz NOT NULL,
      PRIMARY KEY (project_id, workflow_id),
      CONSTRAINT workflow_rollouts_workflow_fkey FOREIGN KEY (project_id, workflow_id)
        REFERENCES workflows (project_id, id) ON DELETE CASCADE
    )`
})
