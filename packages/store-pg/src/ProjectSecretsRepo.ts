/** `ProjectSecretsRepo` on PostgreSQL (migration 0013). */
import { PgClient } from "@effect/sql-pg"
import { type ProjectSecretRecord, ProjectSecretsRepo } from "@parley/core"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { changeSignals, decodeRows, IsoFromDate } from "./Rows.ts"

/** A row of `project_secrets`: the sealed value, ISO times. */
const SecretRow = Schema.Struct({
  project_id: Schema.String,
  name: Schema.String,
  ciphertext: Schema.String,
  created_at: IsoFromDate,
  updated_at: IsoFromDate
})
const toSecrets: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<ProjectSecretRecord>> = decodeRows(
  "project_secrets",
  SecretRow
)

/** Puts and deletes, NOTIFY'd after the write to every host's cache of resolved secrets. */
const CHANGES_CHANNEL = "parley_project_secrets"

export const layerProjectSecretsRepo = Layer.effect(
  ProjectSecretsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    // Inside a transaction the NOTIFY is delivered at its commit, outside it after the write's.
    const signal = <A>(result: A) => Effect.as(sql`SELECT pg_notify(${CHANGES_CHANNEL}, '')`, result)
    return ProjectSecretsRepo.of({
      put: Effect.fnUntraced(function*(s: ProjectSecretRecord) {
        const rows = yield* sql`
          INSERT INTO project_secrets (project_id, name, ciphertext, created_at, updated_at)
          VALUES (${s.project_id}, ${s.name}, ${s.ciphertext}, ${s.created_at}, ${s.updated_at})
          ON CONFLICT (project_id, name) DO UPDATE SET ciphertext = EXCLUDED.ciphertext, updated_at = EXCLUDED.updated_at
          RETURNING *`
        return yield* signal((yield* toSecrets(rows))[0]!)
      }, Effect.orDie),
      list: Effect.fnUntraced(function*(projectId: string) {
        return yield* toSecrets(yield* sql`SELECT * FROM project_secrets WHERE project_id = ${projectId} ORDER BY name`)
      }, Effect.orDie),
      delete: Effect.fnUntraced(function*(projectId: string, name: string) {
        const rows = yield* sql`DELETE FROM project_secrets WHERE project_id = ${projectId} AND name = ${name} RETURNING name`
        return rows.length > 0 ? yield* signal(true) : false
      }, Effect.orDie),
      changes: changeSignals(pg, CHANGES_CHANNEL)
    })
  })
)
