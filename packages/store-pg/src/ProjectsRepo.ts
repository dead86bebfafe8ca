/** `ProjectsRepo` on PostgreSQL. */
import { type ApiKey, type Project, ProjectsRepo } from "@parley/core"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { changeSignals, first, iso, isoOrNull } from "./Rows.ts"

interface ProjectRow {
  readonly id: string
  readonly name: string
  readonly disabled: boolean
  readonly created_at: Date
  readonly updated_at: Date
}

interface ApiKeyRow {
  readonly id: string
  readonly project_id: string
  readonly name: string
  readonly key_hash: string
  readonly prefix: string
  readonly created_at: Date
  readonly revoked_at: Date | null
}

/** A key's project, joined in beside the key's own columns. */
interface ProjectColumns {
  readonly project_name: string
  readonly project_disabled: boolean
  readonly project_created_at: Date
  readonly project_updated_at: Date
}

const toProject = (row: ProjectRow): Project => ({
  id: row.id,
  name: row.name,
  disabled: row.disabled,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at)
})

const toKey = (row: ApiKeyRow): ApiKey => ({
  id: row.id,
  project_id: row.project_id,
  name: row.name,
  key_hash: row.key_hash,
  prefix: row.prefix,
  created_at: iso(row.created_at),
  revoked_at: isoOrNull(row.revoked_at)
})

const KEY_CHANNEL = "parley_api_keys"

export const layerProjectsRepo = Layer.effect(
  ProjectsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    /** Delivered to listeners when the surrounding transaction commits. */
    const notifyKeyChange = sql`SELECT pg_notify(${KEY_CHANNEL}, '')`
    const signal = <A>(result: Option.Option<A>) =>
      Option.isSome(result) ? Effect.as(notifyKeyChange, result) : Effect.succeed<Option.Option<A>>(result)
    return ProjectsRepo.of({
      insert: Effect.fnUntraced(function*(project: Project) {
        yield* sql`
          INSERT INTO projects (id, name, disabled, created_at, updated_at)
          VALUES (${project.id}, ${project.name}, ${project.disabled}, ${project.created_at}, ${project.updated_at})`
      }, Effect.orDie),

      findById: Effect.fnUntraced(function*(id: string) {
        const rows = yield* sql<ProjectRow>`SELECT * FROM projects WHERE id = ${id}`
        return first(rows, toProject)
      }, Effect.orDie),

      list: sql<ProjectRow>`SELECT * FROM projects ORDER BY created_at, id`.pipe(
        Effect.map((rows) => rows.map(toProject)),
        Effect.orDie,
        Effect.withSpan("ProjectsRepo.list")
      ),

      setDisabled: Effect.fnUntraced(function*(id: string, disabled: boolean, at: string) {
        const rows = yield* sql<ProjectRow>`
          UPDATE projects SET disabled = ${disabled}, updated_at = ${at} WHERE id = ${id} RETURNING *`
        return yield* signal(first(rows, toProject))
      }, Effect.orDie),

      insertKey: Effect.fnUntraced(function*(key: ApiKey) {
        yield* sql`
          INSERT INTO api_keys (id, project_id, name, key_hash, prefix, created_at, revoked_at)
          VALUES (${key.id}, ${key.project_id}, ${key.name}, ${key.key_hash}, ${key.prefix}, ${key.created_at},
            ${key.revoked_at})`
      }, Effect.orDie),

      findKeyByHash: Effect.fnUntraced(function*(hash: string) {
        const rows = yield* sql<ApiKeyRow & ProjectColumns>`
          SELECT k.*, p.name AS project_name, p.disabled AS project_disabled,
            p.created_at AS project_created_at, p.updated_at AS project_updated_at
          FROM api_keys k JOIN projects p ON p.id = k.project_id
          WHERE k.key_hash = ${hash} AND k.revoked_at IS NULL`
        return first(rows, (row) => ({
          key: toKey(row),
          project: toProject({
            id: row.project_id,
            name: row.project_name,
            disabled: row.project_disabled,
            created_at: row.project_created_at,
            updated_at: row.project_updated_at
          })
        }))
      }, Effect.orDie),

      listKeys: Effect.fnUntraced(function*(projectId: string) {
        const rows = yield* sql<ApiKeyRow>`SELECT * FROM api_keys WHERE project_id = ${projectId} ORDER BY created_at, id`
        return rows.map(toKey)
      }, Effect.orDie),

      revokeKey: Effect.fnUntraced(function*(projectId: string, keyId: string, at: string) {
        const rows = yield* sql<ApiKeyRow>`
          UPDATE api_keys SET revoked_at = ${at}
          WHERE project_id = ${projectId} AND id = ${keyId} AND revoked_at IS NULL
          RETURNING *`
        return yield* signal(first(rows, toKey))
      }, Effect.orDie),

      keyChanges: changeSignals(pg, KEY_CHANNEL),

      // Awaited, not deferred: the transaction's next read must come after the lock (a fresh snapshot that sees
      // what the previous holder committed).
      lockBootstrap: sql`SELECT pg_advisory_xact_lock(hashtextextended('parley.projects.bootstrap', 0))`.pipe(
        Effect.asVoid,
        Effect.orDie,
        Effect.withSpan("ProjectsRepo.lockBootstrap")
      )
    })
  })
)
