/** `ProjectsRepo` on PostgreSQL. */
import { type ApiKey, type Project, ProjectsRepo } from "@parley/core"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { changeSignals, decodeFirst, decodeRows, IsoFromDate, Nullable } from "./Rows.ts"

/** A row of `projects`, times as ISO text. */
const ProjectRow = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  disabled: Schema.Boolean,
  created_at: IsoFromDate,
  updated_at: IsoFromDate
})
const toProjects: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<Project>> = decodeRows(
  "projects",
  ProjectRow
)
const firstProject = decodeFirst("projects", ProjectRow)

/** A row of `api_keys`, times as ISO text. */
const ApiKeyRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  name: Schema.String,
  key_hash: Schema.String,
  prefix: Schema.String,
  created_at: IsoFromDate,
  revoked_at: Nullable(IsoFromDate)
})
const toKeys: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<ApiKey>> = decodeRows("api_keys", ApiKeyRow)
const firstKey = decodeFirst("api_keys", ApiKeyRow)

/** A key with its project's columns joined in beside its own (read on every authenticated request). */
const KeyWithProjectRow = Schema.Struct({
  ...ApiKeyRow.fields,
  project_name: Schema.String,
  project_disabled: Schema.Boolean,
  project_created_at: IsoFromDate,
  project_updated_at: IsoFromDate
})
const firstKeyWithProject = decodeFirst("api_keys join projects", KeyWithProjectRow)

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
        return yield* firstProject(yield* sql`SELECT * FROM projects WHERE id = ${id}`)
      }, Effect.orDie),

      list: sql`SELECT * FROM projects ORDER BY created_at, id`.pipe(
        Effect.flatMap(toProjects),
        Effect.orDie,
        Effect.withSpan("ProjectsRepo.list")
      ),

      setDisabled: Effect.fnUntraced(function*(id: string, disabled: boolean, at: string) {
        const rows = yield* sql`
          UPDATE projects SET disabled = ${disabled}, updated_at = ${at} WHERE id = ${id} RETURNING *`
        return yield* signal(yield* firstProject(rows))
      }, Effect.orDie),

      insertKey: Effect.fnUntraced(function*(key: ApiKey) {
        yield* sql`
          INSERT INTO api_keys (id, project_id, name, key_hash, prefix, created_at, revoked_at)
          VALUES (${key.id}, ${key.project_id}, ${key.name}, ${key.key_hash}, ${key.prefix}, ${key.created_at},
            ${key.revoked_at})`
      }, Effect.orDie),

      findKeyByHash: Effect.fnUntraced(function*(hash: string) {
        const rows = yield* sql`
          SELECT k.*, p.name AS project_name, p.disabled AS project_disabled,
            p.created_at AS project_created_at, p.updated_at AS project_updated_at
          FROM api_keys k JOIN projects p ON p.id = k.project_id
          WHERE k.key_hash = ${hash} AND k.revoked_at IS NULL`
        return Option.map(
          yield* firstKeyWithProject(rows),
          ({ project_created_at, project_disabled, project_name, project_updated_at, ...key }) => ({
            key,
            project: {
              id: key.project_id,
              name: project_name,
              disabled: project_disabled,
              created_at: project_created_at,
              updated_at: project_updated_at
            }
          })
        )
      }, Effect.orDie),

      listKeys: Effect.fnUntraced(function*(projectId: string) {
        return yield* toKeys(yield* sql`SELECT * FROM api_keys WHERE project_id = ${projectId} ORDER BY created_at, id`)
      }, Effect.orDie),

      revokeKey: Effect.fnUntraced(function*(projectId: string, keyId: string, at: string) {
        const rows = yield* sql`
          UPDATE api_keys SET revoked_at = ${at}
          WHERE project_id = ${projectId} AND id = ${keyId} AND revoked_at IS NULL
          RETURNING *`
        return yield* signal(yield* firstKey(rows))
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
