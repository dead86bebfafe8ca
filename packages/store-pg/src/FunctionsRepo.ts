/** `FunctionsRepo` and `FunctionInvocationsRepo` on PostgreSQL (migration 0006). */
import {
  FUNCTION_TYPE,
  type FunctionDeploymentRecord,
  FunctionDeploymentStatus,
  type FunctionDeployOutcome,
  FunctionInvocationConsoleLog,
  type FunctionInvocationOutcome,
  type FunctionInvocationRecord,
  FunctionInvocationSource,
  FunctionInvocationsRepo,
  FunctionInvokeResponseMode,
  type FunctionRecord,
  FunctionRuntimeConfig,
  type FunctionSecretRecord,
  FunctionsRepo,
  FunctionStatus,
  type ListWindow
} from "@parley/core"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { layerFunctionKv } from "./FunctionKv.ts"
import {
  changeSignals,
  decodeCount,
  decodeFirst,
  decodeRows,
  IsoFromDate,
  IsoFromText,
  jsonb,
  listNewestFirst,
  mapUnique,
  Nullable
} from "./Rows.ts"
import { PgTransactions } from "./Transactor.ts"

/** A row of `functions`, times as ISO text. */
const FunctionRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  name: Schema.String,
  slug: Schema.String,
  description: Schema.NullOr(Schema.String),
  code: Schema.String,
  function_type: Schema.Literal(FUNCTION_TYPE),
  status: FunctionStatus,
  version: Schema.Number,
  last_deployed_at: Nullable(IsoFromDate),
  last_deploy_error: Schema.NullOr(Schema.String),
  runtime_config: FunctionRuntimeConfig,
  created_by_id: Schema.String,
  public_endpoint: Schema.Boolean,
  invoke_response_mode: FunctionInvokeResponseMode,
  lock_version: Schema.Number,
  deployed_deployment_id: Schema.NullOr(Schema.String),
  created_at: IsoFromDate,
  updated_at: IsoFromDate
})
const toFunctions: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<FunctionRecord>> = decodeRows(
  "functions",
  FunctionRow
)
const firstFunction = decodeFirst("functions", FunctionRow)

/** A secret as `findInvocationTarget` aggregates it into JSON: its times as the server wrote them. */
const SecretFields = {
  function_id: Schema.String,
  name: Schema.String,
  type: Schema.Literals(["text", "json"]),
  ciphertext: Schema.String
}

/** A function with its project's state and its secrets, in one row: read on every invoke. */
const InvocationTargetRow = Schema.Struct({
  ...FunctionRow.fields,
  project_disabled: Schema.Boolean,
  secrets: Schema.Array(Schema.Struct({ ...SecretFields, created_at: IsoFromText, updated_at: IsoFromText }))
})
const firstInvocationTarget = decodeFirst("functions join projects", InvocationTargetRow)

/** A row of `function_deployments`, times as ISO text. */
const DeploymentRow = Schema.Struct({
  id: Schema.String,
  function_id: Schema.String,
  project_id: Schema.String,
  version: Schema.Number,
  status: FunctionDeploymentStatus,
  code_sha256: Schema.String,
  code: Schema.NullOr(Schema.String),
  runtime_config: FunctionRuntimeConfig,
  started_at: IsoFromDate,
  finished_at: Nullable(IsoFromDate),
  error: Schema.NullOr(Schema.String)
})
const toDeployments: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<FunctionDeploymentRecord>> =
  decodeRows("function_deployments", DeploymentRow)
const firstDeployment = decodeFirst("function_deployments", DeploymentRow)

/** A row of `function_secrets`, times as ISO text. */
const SecretRow = Schema.Struct({ ...SecretFields, created_at: IsoFromDate, updated_at: IsoFromDate })
const toSecrets: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<FunctionSecretRecord>> = decodeRows(
  "function_secrets",
  SecretRow
)

/** A row of `function_invocations`, times as ISO text. */
const InvocationRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  function_id: Schema.String,
  status_code: Schema.Number,
  duration_ms: Schema.Number,
  request_body: Schema.NullOr(Schema.String),
  response_body: Schema.NullOr(Schema.String),
  error_message: Schema.NullOr(Schema.String),
  source: FunctionInvocationSource,
  console_logs: Schema.Array(FunctionInvocationConsoleLog),
  created_at: IsoFromDate
})
const toInvocations: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<FunctionInvocationRecord>> =
  decodeRows("function_invocations", InvocationRow)

const decodeVersion = decodeRows("function_deployments deployed", Schema.Struct({ version: Schema.Number }))
const decodeHostKey = decodeRows("host_keys", Schema.Struct({ key: Schema.String }))

/** The unique index of 0006_functions the domain can act on. */
const duplicates = mapUnique({ functions_project_slug_key: "slug" })

/** Writes that change an invocation target, NOTIFY'd to every host's cache of them. */
const CHANGES_CHANNEL = "parley_functions"

export const layerFunctionsRepo = Layer.effect(
  FunctionsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    const { transaction: inTransaction } = yield* PgTransactions
    // After the write: inside a transaction the NOTIFY is delivered at its commit, outside it after the write's.
    const signal = <A>(result: A) => Effect.as(sql`SELECT pg_notify(${CHANGES_CHANNEL}, '')`, result)

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
        return yield* firstFunction(yield* sql`SELECT * FROM functions WHERE project_id = ${projectId} AND id = ${id}`)
      }, Effect.orDie),

      // One round trip for the hot path of every invoke.
      findInvocationTarget: Effect.fnUntraced(function*(id: string) {
        const rows = yield* sql`
          SELECT f.*, p.disabled AS project_disabled,
            COALESCE((
              SELECT json_agg(json_build_object(
                'function_id', s.function_id, 'name', s.name, 'type', s.type, 'ciphertext', s.ciphertext,
                'created_at', s.created_at, 'updated_at', s.updated_at) ORDER BY s.name)
              FROM function_secrets s WHERE s.function_id = f.id
            ), '[]'::json) AS secrets
          FROM functions f JOIN projects p ON p.id = f.project_id
          WHERE f.id = ${id}`
        return Option.map(yield* firstInvocationTarget(rows), ({ project_disabled, secrets, ...f }) => ({
          function: f,
          projectDisabled: project_disabled,
          secrets
        }))
      }, Effect.orDie),

      list: Effect.fnUntraced(function*(projectId: string, window: ListWindow) {
        return yield* listNewestFirst(sql, "functions", sql`project_id = ${projectId}`, window, toFunctions)
      }, Effect.orDie),

      update: Effect.fnUntraced(function*(f: FunctionRecord, expectedLockVersion: number) {
        const rows = yield* sql`
          UPDATE functions SET
            name = ${f.name}, slug = ${f.slug}, description = ${f.description}, code = ${f.code},
            runtime_config = ${jsonb(f.runtime_config)}, public_endpoint = ${f.public_endpoint},
            invoke_response_mode = ${f.invoke_response_mode}, lock_version = ${f.lock_version}, updated_at = ${f.updated_at}
          WHERE project_id = ${f.project_id} AND id = ${f.id} AND lock_version = ${expectedLockVersion}
          RETURNING *`
        return yield* signal(yield* firstFunction(rows))
      }, Effect.catchTag("SqlError", duplicates)),

      delete: Effect.fnUntraced(function*(projectId: string, id: string) {
        // Deployments and secrets go with it (ON DELETE CASCADE); invocations stay.
        const rows = yield* sql`DELETE FROM functions WHERE project_id = ${projectId} AND id = ${id} RETURNING id`
        return rows.length > 0 ? yield* signal(true) : false
      }, Effect.orDie),

      slugTaken: Effect.fnUntraced(function*(projectId: string, slug: string) {
        const rows = yield* sql`SELECT 1 FROM functions WHERE project_id = ${projectId} AND slug = ${slug}`
        return rows.length > 0
      }, Effect.orDie),

      startDeploy: Effect.fnUntraced(function*(projectId: string, d: FunctionDeploymentRecord) {
        return yield* inTransaction(Effect.gen(function*() {
          const started = yield* firstFunction(
            yield* sql`
            UPDATE functions SET status = 'deploying', lock_version = lock_version + 1, updated_at = ${d.started_at}
            WHERE project_id = ${projectId} AND id = ${d.function_id} AND status <> 'deploying'
            RETURNING *`
          )
          if (Option.isNone(started)) return started
          const row = started.value
          yield* sql`
            INSERT INTO function_deployments (id, function_id, project_id, version, status, code_sha256, code,
              runtime_config, started_at, finished_at, error)
            VALUES (${d.id}, ${d.function_id}, ${row.project_id}, ${d.version}, ${d.status}, ${d.code_sha256}, ${d.code},
              ${jsonb(d.runtime_config)}, ${d.started_at}, ${d.finished_at}, ${d.error})`
          return yield* signal(started)
        }))
      }, Effect.orDie),

      finishDeploy: Effect.fnUntraced(
        function*(functionId: string, deploymentId: string, outcome: FunctionDeployOutcome) {
          return yield* inTransaction(Effect.gen(function*() {
            if (outcome._tag === "Deployed") {
              const ended = yield* decodeVersion(
                yield* sql`
                UPDATE function_deployments SET status = 'deployed', finished_at = ${outcome.at}
                WHERE id = ${deploymentId} AND function_id = ${functionId} AND status = 'deploying'
                RETURNING version`
              )
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
              return yield* signal(true)
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
            return yield* signal(true)
          }))
        },
        Effect.orDie
      ),

      findDeployment: Effect.fnUntraced(function*(functionId: string, deploymentId: string) {
        return yield* firstDeployment(
          yield* sql`SELECT * FROM function_deployments WHERE id = ${deploymentId} AND function_id = ${functionId}`
        )
      }, Effect.orDie),

      listDeployments: Effect.fnUntraced(
        function*(projectId: string, functionId: string, window: ListWindow) {
          return yield* listNewestFirst(
            sql,
            "function_deployments",
            sql.and([sql`project_id = ${projectId}`, sql`function_id = ${functionId}`]),
            window,
            toDeployments,
            "started_at"
          )
        },
        Effect.orDie
      ),

      listDeploying: sql`
        SELECT * FROM function_deployments WHERE status = 'deploying' ORDER BY started_at, id`.pipe(
        Effect.flatMap(toDeployments),
        Effect.orDie,
        Effect.withSpan("FunctionsRepo.listDeploying")
      ),

      listSecrets: Effect.fnUntraced(function*(functionId: string) {
        return yield* toSecrets(yield* sql`SELECT * FROM function_secrets WHERE function_id = ${functionId} ORDER BY name`)
      }, Effect.orDie),

      putSecret: Effect.fnUntraced(function*(s: FunctionSecretRecord) {
        yield* sql`
          INSERT INTO function_secrets (function_id, name, type, ciphertext, created_at, updated_at)
          VALUES (${s.function_id}, ${s.name}, ${s.type}, ${s.ciphertext}, ${s.created_at}, ${s.updated_at})
          ON CONFLICT (function_id, name) DO UPDATE SET
            type = EXCLUDED.type, ciphertext = EXCLUDED.ciphertext, updated_at = EXCLUDED.updated_at`
        yield* signal(undefined)
      }, Effect.orDie),

      deleteSecret: Effect.fnUntraced(function*(functionId: string, name: string) {
        const rows = yield* sql`
          DELETE FROM function_secrets WHERE function_id = ${functionId} AND name = ${name} RETURNING name`
        return rows.length > 0 ? yield* signal(true) : false
      }, Effect.orDie),

      changes: changeSignals(pg, CHANGES_CHANNEL),

      secretKey: Effect.fnUntraced(function*(candidate: string) {
        // The first offer wins, also against a concurrent one from another host.
        yield* sql`INSERT INTO host_keys (name, key) VALUES ('function_secrets', ${candidate}) ON CONFLICT (name) DO NOTHING`
        const rows = yield* decodeHostKey(yield* sql`SELECT key FROM host_keys WHERE name = 'function_secrets'`)
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
        const [{ total }] = yield* decodeCount(
          yield* sql`SELECT count(*)::int AS total FROM function_invocations WHERE ${where}`
        )
        const items = yield* toInvocations(
          yield* sql`
          SELECT * FROM function_invocations WHERE ${where} ORDER BY created_at DESC, id DESC LIMIT ${options.limit}`
        )
        return { items, total }
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
