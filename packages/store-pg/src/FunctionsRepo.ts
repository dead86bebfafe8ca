/** `FunctionsRepo` and `FunctionInvocationsRepo` on PostgreSQL (migration 0006). */
import {
  type FunctionDeploymentRecord,
  type FunctionDeployOutcome,
  FunctionInvocationsRepo,
  type FunctionRecord,
  FunctionsRepo,
  type FunctionInvocationOutcome,
  type FunctionInvocationRecord,
  type ListWindow,
  type FunctionSecretRecord
} from "@parley/core"
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { layerFunctionKv } from "./FunctionKv.ts"
import { iso, isoOrNull, jsonb, mapUnique } from "./Rows.ts"
import { PgTransactions } from "./Transactor.ts"

interface FunctionRow {
  readonly id: string
  readonly project_id: string
  readonly name: string
  readonly slug: string
  readonly description: string | null
  readonly code: string
  readonly function_type: FunctionRecord["function_type"]
  readonly status: FunctionRecord["status"]
  readonly version: number
  readonly last_deployed_at: Date | null
  readonly last_deploy_error: string | null
  readonly runtime_config: FunctionRecord["runtime_config"]
  readonly created_by_id: string
  readonly public_endpoint: boolean
  readonly invoke_response_mode: FunctionRecord["invoke_response_mode"]
  readonly lock_version: number
  readonly deployed_deployment_id: string | null
  readonly created_at: Date
  readonly updated_at: Date
}

interface DeploymentRow {
  readonly id: string
  readonly function_id: string
  readonly project_id: string
  readonly version: number
  readonly status: FunctionDeploymentRecord["status"]
  readonly code_sha256: string
  readonly code: string | null
  readonly runtime_config: FunctionDeploymentRecord["runtime_config"]
  readonly started_at: Date
  readonly finished_at: Date | null
  readonly error: string | null
}

interface SecretRow {
  readonly function_id: string
  readonly name: string
  readonly type: FunctionSecretRecord["type"]
  readonly ciphertext: string
  readonly created_at: Date
  readonly updated_at: Date
}

interface InvocationRow {
  readonly id: string
  readonly project_id: string
  readonly function_id: string
  readonly status_code: number
  readonly duration_ms: number
  readonly request_body: string | null
  readonly response_body: string | null
  readonly error_message: string | null
  readonly source: FunctionInvocationRecord["source"]
  readonly console_logs: FunctionInvocationRecord["console_logs"]
  readonly created_at: Date
}

const toFunction = (row: FunctionRow): FunctionRecord => ({
  id: row.id,
  project_id: row.project_id,
  name: row.name,
  slug: row.slug,
  description: row.description,
  code: row.code,
  function_type: row.function_type,
  status: row.status,
  version: row.version,
  last_deployed_at: isoOrNull(row.last_deployed_at),
  last_deploy_error: row.last_deploy_error,
  runtime_config: row.runtime_config,
  created_by_id: row.created_by_id,
  public_endpoint: row.public_endpoint,
  invoke_response_mode: row.invoke_response_mode,
  lock_version: row.lock_version,
  deployed_deployment_id: row.deployed_deployment_id,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at)
})

const toFunctionDeployment = (row: DeploymentRow): FunctionDeploymentRecord => ({
  id: row.id,
  function_id: row.function_id,
  project_id: row.project_id,
  version: row.version,
  status: row.status,
  code_sha256: row.code_sha256,
  code: row.code,
  runtime_config: row.runtime_config,
  started_at: iso(row.started_at),
  finished_at: isoOrNull(row.finished_at),
  error: row.error
})

const toSecret = (row: SecretRow): FunctionSecretRecord => ({
  function_id: row.function_id,
  name: row.name,
  type: row.type,
  ciphertext: row.ciphertext,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at)
})

const toFunctionInvocation = (row: InvocationRow): FunctionInvocationRecord => ({
  id: row.id,
  project_id: row.project_id,
  function_id: row.function_id,
  status_code: row.status_code,
  duration_ms: row.duration_ms,
  request_body: row.request_body,
  response_body: row.response_body,
  error_message: row.error_message,
  source: row.source,
  console_logs: row.console_logs,
  created_at: iso(row.created_at)
})

/** The unique index of 0006_functions the domain can act on. */
const duplicates = mapUnique({ functions_project_slug_key: "slug" })

export const layerFunctionsRepo = Layer.effect(
  FunctionsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { transaction: inTransaction } = yield* PgTransactions

    /** Newest first by (key, id) in either paging mode; `from` is the filtered relation. */
    const listWindow = <Row extends object>(
      from: { readonly table: string; readonly where: ReturnType<typeof sql.and>; readonly key: "created_at" | "started_at" },
      window: ListWindow
    ) =>
      Effect.gen(function*() {
        const table = sql(from.table)
        const key = sql(from.key)
        if (window.mode === "page") {
          const [{ total }] = yield* sql<{ readonly total: number }>`
            SELECT count(*)::int AS total FROM ${table} WHERE ${from.where}`
          const rows = yield* sql<Row>`
            SELECT * FROM ${table} WHERE ${from.where}
            ORDER BY ${key} DESC, id DESC LIMIT ${window.perPage} OFFSET ${(window.page - 1) * window.perPage}`
          return { rows, hasMore: (window.page - 1) * window.perPage + rows.length < total, total }
        }
        const { after, before, limit } = window
        const conditions = [
          from.where,
          ...(after !== undefined ? [sql`(${key}, id) < (${after.sortKey}::timestamptz, ${after.id})`] : []),
          ...(before !== undefined ? [sql`(${key}, id) > (${before.sortKey}::timestamptz, ${before.id})`] : [])
        ]
        const order = before !== undefined ? sql`${key} ASC, id ASC` : sql`${key} DESC, id DESC`
        const rows = yield* sql<Row>`SELECT * FROM ${table} WHERE ${sql.and(conditions)} ORDER BY ${order} LIMIT ${limit + 1}`
        const page = rows.slice(0, limit)
        return { rows: before !== undefined ? page.reverse() : page, hasMore: rows.length > limit, total: 0 }
      })

    return FunctionsRepo.of({
      insert: Effect.fnUntraced(function*(f: FunctionRecord) {
        yield* sql`
          INSERT INTO functions (id, project_id, name, slug, description, code, function_type, status, version,
            last_deployed_at, last_deploy_error, runtime_config, created_by_id, public_endpoint, invoke_response_mode,
            lock_version, deployed_deployment_id, created_at, updated_at)
          VALUES (${f.id}, ${f.project_id}, ${f.name}, ${f.slug}, ${f.description}, ${f.code}, ${f.function_type},
            ${f.status}, ${f.version}, ${f.last_deployed_at}, ${f.last_deploy_error}, ${jsonb(f.runtime_config)},
            ${f.created_by_id}, ${f.public_endpoint}, ${f.invoke_response_mode}, ${f.lock_version},
            ${f.deployed_deployment_id}, ${f.created_at}, ${f.updated_at})`
      }, Effect.catchTag("SqlError", duplicates)),

      findById: Effect.fnUntraced(function*(projectId: string, id: string) {
        const rows = yield* sql<FunctionRow>`SELECT * FROM functions WHERE project_id = ${projectId} AND id = ${id}`
        return Option.map(Option.fromNullishOr(rows[0]), toFunction)
      }, Effect.orDie),

      // One round trip for the hot path of every invoke.
      findInvocationTarget: Effect.fnUntraced(function*(id: string) {
        const rows = yield* sql<FunctionRow & { readonly project_disabled: boolean; readonly secrets: ReadonlyArray<any> }>`
          SELECT f.*, p.disabled AS project_disabled,
            COALESCE((
              SELECT json_agg(json_build_object(
                'function_id', s.function_id, 'name', s.name, 'type', s.type, 'ciphertext', s.ciphertext,
                'created_at', s.created_at, 'updated_at', s.updated_at) ORDER BY s.name)
              FROM function_secrets s WHERE s.function_id = f.id
            ), '[]'::json) AS secrets
          FROM functions f JOIN projects p ON p.id = f.project_id
          WHERE f.id = ${id}`
        const row = rows[0]
        if (row === undefined) return Option.none()
        return Option.some({
          function: toFunction(row),
          projectDisabled: row.project_disabled,
          secrets: row.secrets.map((s): FunctionSecretRecord => ({
            function_id: s.function_id,
            name: s.name,
            type: s.type,
            ciphertext: s.ciphertext,
            created_at: new Date(s.created_at).toISOString(),
            updated_at: new Date(s.updated_at).toISOString()
          }))
        })
      }, Effect.orDie),

      list: Effect.fnUntraced(function*(projectId: string, window: ListWindow) {
        const page = yield* listWindow<FunctionRow>(
          { table: "functions", where: sql.and([sql`project_id = ${projectId}`]), key: "created_at" },
          window
        )
        return { items: page.rows.map(toFunction), hasMore: page.hasMore, total: page.total }
      }, Effect.orDie),

      update: Effect.fnUntraced(function*(f: FunctionRecord, expectedLockVersion: number) {
        const rows = yield* sql<FunctionRow>`
          UPDATE functions SET
            name = ${f.name}, slug = ${f.slug}, description = ${f.description}, code = ${f.code},
            runtime_config = ${jsonb(f.runtime_config)}, public_endpoint = ${f.public_endpoint},
            invoke_response_mode = ${f.invoke_response_mode}, lock_version = ${f.lock_version}, updated_at = ${f.updated_at}
          WHERE project_id = ${f.project_id} AND id = ${f.id} AND lock_version = ${expectedLockVersion}
          RETURNING *`
        return Option.map(Option.fromNullishOr(rows[0]), toFunction)
      }, Effect.catchTag("SqlError", duplicates)),

      delete: Effect.fnUntraced(function*(projectId: string, id: string) {
        // Deployments and secrets go with it (ON DELETE CASCADE); invocations stay.
        const rows = yield* sql`DELETE FROM functions WHERE project_id = ${projectId} AND id = ${id} RETURNING id`
        return rows.length > 0
      }, Effect.orDie),

      slugTaken: Effect.fnUntraced(function*(projectId: string, slug: string) {
        const rows = yield* sql`SELECT 1 FROM functions WHERE project_id = ${projectId} AND slug = ${slug}`
        return rows.length > 0
      }, Effect.orDie),

      startDeploy: Effect.fnUntraced(function*(projectId: string, d: FunctionDeploymentRecord) {
        return yield* inTransaction(Effect.gen(function*() {
          const rows = yield* sql<FunctionRow>`
            UPDATE functions SET status = 'deploying', lock_version = lock_version + 1, updated_at = ${d.started_at}
            WHERE project_id = ${projectId} AND id = ${d.function_id} AND status <> 'deploying'
            RETURNING *`
          const row = rows[0]
          if (row === undefined) return Option.none<FunctionRecord>()
          yield* sql`
            INSERT INTO function_deployments (id, function_id, project_id, version, status, code_sha256, code,
              runtime_config, started_at, finished_at, error)
            VALUES (${d.id}, ${d.function_id}, ${row.project_id}, ${d.version}, ${d.status}, ${d.code_sha256}, ${d.code},
              ${jsonb(d.runtime_config)}, ${d.started_at}, ${d.finished_at}, ${d.error})`
          return Option.some(toFunction(row))
        }))
      }, Effect.orDie),

      finishDeploy: Effect.fnUntraced(
        function*(functionId: string, deploymentId: string, outcome: FunctionDeployOutcome) {
          return yield* inTransaction(Effect.gen(function*() {
            if (outcome._tag === "Deployed") {
              const ended = yield* sql<{ readonly version: number }>`
                UPDATE function_deployments SET status = 'deployed', finished_at = ${outcome.at}
                WHERE id = ${deploymentId} AND function_id = ${functionId} AND status = 'deploying'
                RETURNING version`
              const version = ended[0]?.version
              if (version === undefined) return false
              yield* sql`
                UPDATE function_deployments SET code = NULL
                WHERE function_id = ${functionId} AND id <> ${deploymentId} AND status <> 'deploying' AND code IS NOT NULL`
              yield* sql`
                UPDATE functions SET status = 'deployed', version = ${version}, last_deployed_at = ${outcome.at},
                  last_deploy_error = NULL, deployed_deployment_id = ${deploymentId}, lock_version = lock_version + 1,
                  updated_at = ${outcome.at}
                WHERE id = ${functionId}`
              return true
            }
            const ended = yield* sql`
              UPDATE function_deployments SET status = 'failed', finished_at = ${outcome.at}, error = ${outcome.error},
                code = NULL
              WHERE id = ${deploymentId} AND function_id = ${functionId} AND status = 'deploying'
              RETURNING id`
            if (ended.length === 0) return false
            yield* sql`
              UPDATE functions SET status = 'error', last_deploy_error = ${outcome.error},
                lock_version = lock_version + 1, updated_at = ${outcome.at}
              WHERE id = ${functionId}`
            return true
          }))
        },
        Effect.orDie
      ),

      findDeployment: Effect.fnUntraced(function*(functionId: string, deploymentId: string) {
        const rows = yield* sql<DeploymentRow>`
          SELECT * FROM function_deployments WHERE id = ${deploymentId} AND function_id = ${functionId}`
        return Option.map(Option.fromNullishOr(rows[0]), toFunctionDeployment)
      }, Effect.orDie),

      listDeployments: Effect.fnUntraced(
        function*(projectId: string, functionId: string, window: ListWindow) {
          const page = yield* listWindow<DeploymentRow>({
            table: "function_deployments",
            where: sql.and([sql`project_id = ${projectId}`, sql`function_id = ${functionId}`]),
            key: "started_at"
          }, window)
          return { items: page.rows.map(toFunctionDeployment), hasMore: page.hasMore, total: page.total }
        },
        Effect.orDie
      ),

      listDeploying: sql<DeploymentRow>`
        SELECT * FROM function_deployments WHERE status = 'deploying' ORDER BY started_at, id`.pipe(
        Effect.map((rows) => rows.map(toFunctionDeployment)),
        Effect.orDie,
        Effect.withSpan("FunctionsRepo.listDeploying")
      ),

      listSecrets: Effect.fnUntraced(function*(functionId: string) {
        const rows = yield* sql<SecretRow>`SELECT * FROM function_secrets WHERE function_id = ${functionId} ORDER BY name`
        return rows.map(toSecret)
      }, Effect.orDie),

      putSecret: Effect.fnUntraced(function*(s: FunctionSecretRecord) {
        yield* sql`
          INSERT INTO function_secrets (function_id, name, type, ciphertext, created_at, updated_at)
          VALUES (${s.function_id}, ${s.name}, ${s.type}, ${s.ciphertext}, ${s.created_at}, ${s.updated_at})
          ON CONFLICT (function_id, name) DO UPDATE SET
            type = EXCLUDED.type, ciphertext = EXCLUDED.ciphertext, updated_at = EXCLUDED.updated_at`
      }, Effect.orDie),

      deleteSecret: Effect.fnUntraced(function*(functionId: string, name: string) {
        const rows = yield* sql`
          DELETE FROM function_secrets WHERE function_id = ${functionId} AND name = ${name} RETURNING name`
        return rows.length > 0
      }, Effect.orDie),

      secretKey: Effect.fnUntraced(function*(candidate: string) {
        // The first offer wins, also against a concurrent one from another host.
        yield* sql`INSERT INTO host_keys (name, key) VALUES ('function_secrets', ${candidate}) ON CONFLICT (name) DO NOTHING`
        const rows = yield* sql<{ readonly key: string }>`SELECT key FROM host_keys WHERE name = 'function_secrets'`
        return rows[0]!.key
      }, Effect.orDie)
    })
  })
)

export const layerFunctionInvocationsRepo = Layer.effect(
  FunctionInvocationsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const outcomeFilter = (outcome: FunctionInvocationOutcome | undefined) =>
      outcome === undefined ? [] : outcome === "failed" ? [sql`status_code >= 400`] : [sql`status_code < 400`]

    return FunctionInvocationsRepo.of({
      insert: Effect.fnUntraced(function*(i: FunctionInvocationRecord) {
        yield* sql`
          INSERT INTO function_invocations (id, project_id, function_id, status_code, duration_ms, request_body,
            response_body, error_message, source, console_logs, created_at)
          VALUES (${i.id}, ${i.project_id}, ${i.function_id}, ${i.status_code}, ${i.duration_ms}, ${i.request_body},
            ${i.response_body}, ${i.error_message}, ${i.source}, ${jsonb(i.console_logs)}, ${i.created_at})`
      }, Effect.orDie),

      insertMany: Effect.fnUntraced(function*(rows: ReadonlyArray<FunctionInvocationRecord>) {
        if (rows.length === 0) return
        // One statement and one parameter for the batch: the records as a JSON array, read back as rows.
        yield* sql`
          INSERT INTO function_invocations (id, project_id, function_id, status_code, duration_ms, request_body,
            response_body, error_message, source, console_logs, created_at)
          SELECT id, project_id, function_id, status_code, duration_ms, request_body, response_body, error_message,
            source, console_logs, created_at
          FROM jsonb_to_recordset(${jsonb(rows)}::jsonb) AS r(id text, project_id text, function_id text,
            status_code integer, duration_ms integer, request_body text, response_body text, error_message text,
            source text, console_logs jsonb, created_at timestamptz)`
      }, Effect.orDie),

      list: Effect.fnUntraced(function*(
        projectId: string,
        functionId: string,
        options: { readonly outcome?: FunctionInvocationOutcome | undefined; readonly limit: number }
      ) {
        const where = sql.and([
          sql`project_id = ${projectId}`,
          sql`function_id = ${functionId}`,
          ...outcomeFilter(options.outcome)
        ])
        const [{ total }] = yield* sql<{ readonly total: number }>`
          SELECT count(*)::int AS total FROM function_invocations WHERE ${where}`
        const rows = yield* sql<InvocationRow>`
          SELECT * FROM function_invocations WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ${options.limit}`
        return { items: rows.map(toFunctionInvocation), total }
      }, Effect.orDie),

      deleteCreatedBefore: Effect.fnUntraced(function*(before: string, limit: number) {
        const rows = yield* sql`
          DELETE FROM function_invocations WHERE id IN (
            SELECT id FROM function_invocations WHERE created_at < ${before}::timestamptz LIMIT ${limit}
          ) RETURNING id`
        return rows.length
      }, Effect.orDie)
    })
  })
)

/** Every functions port on PostgreSQL, `FunctionKv` included. */
export const layerFunctionsStorage = Layer.mergeAll(layerFunctionsRepo, layerFunctionInvocationsRepo, layerFunctionKv)
