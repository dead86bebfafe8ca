/** `ProjectSecretsRepo` on PostgreSQL (migration 0013). */
import { type ProjectSecretRecord, ProjectSecretsRepo } from "@parley/core"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { iso } from "./Rows.ts"

interface SecretRow {
  readonly project_id: string
  readonly name: string
  readonly ciphertext: string
  readonly created_at: Date
  readonly updated_at: Date
}

const toSecret = (row: SecretRow): ProjectSecretRecord => ({
  project_id: row.project_id,
  name: row.name,
  ciphertext: row.ciphertext,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at)
})

export const layerProjectSecretsRepo = Layer.effect(
  ProjectSecretsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return ProjectSecretsRepo.of({
      put: Effect.fnUntraced(function*(s: ProjectSecretRecord) {
        const rows = yield* sql<SecretRow>`
          INSERT INTO project_secrets (project_id, name, ciphertext, created_at, updated_at)
          VALUES (${s.project_id}, ${s.name}, ${s.ciphertext}, ${s.created_at}, ${s.updated_at})
          ON CONFLICT (project_id, name) DO UPDATE SET ciphertext = EXCLUDED.ciphertext, updated_at = EXCLUDED.updated_at
          RETURNING *`
        return toSecret(rows[0]!)
      }, Effect.orDie),
      list: Effect.fnUntraced(function*(projectId: string) {
        const rows = yield* sql<SecretRow>`SELECT * FROM project_secrets WHERE project_id = ${projectId} ORDER BY name`
        return rows.map(toSecret)
      }, Effect.orDie),
      delete: Effect.fnUntraced(function*(projectId: string, name: string) {
        const rows = yield* sql`DELETE FROM project_secrets WHERE project_id = ${projectId} AND name = ${name} RETURNING name`
        return rows.length > 0
      }, Effect.orDie)
    })
  })
)
