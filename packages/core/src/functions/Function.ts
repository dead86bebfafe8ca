/**
 * The function resource (spec "Function", decisions 2.7) in its stored form
 * and its wire forms, with its deployments, secrets and invocations, and the
 * write bodies of the Functions endpoints (decisions 4.4).
 */
import { Schema } from "effect"
import { documentedEnum } from "../shared/DocumentedEnum.ts"
import { ConsoleLevel } from "./FunctionRuntime.ts"
import { described } from "../shared/Described.ts"

export const FunctionStatus = Schema.Literals(["draft", "deploying", "deployed", "error"])
export type FunctionStatus = typeof FunctionStatus.Type

export const FunctionInvokeResponseMode = Schema.Literals(["passthrough", "wrapped"])
export type FunctionInvokeResponseMode = typeof FunctionInvokeResponseMode.Type

export const FUNCTION_TYPE = "edge_worker"

/** Decisions 2.7, 8.4: what a function may be given. */
export const FunctionBounds = {
  /** UTF-8 bytes of `code`. */
  codeBytes: 1024 * 1024,
  timeoutMinSeconds: 1,
  timeoutMaxSeconds: 30,
  timeoutDefaultSeconds: 30,
  /** The only memory size: workerd caps every isolate's heap at this. */
  memoryMb: 128,
  nameMax: 200,
  descriptionMax: 2000,
  slugMax: 100,
  secretNameMax: 64,
  /** UTF-8 bytes of a secret's value (its JSON for an object). */
  secretValueBytes: 32 * 1024,
  /** UTF-8 bytes kept of an invocation's request and response bodies. */
  invocationBodyBytes: 16 * 1024,
  /** Days an invocation record is kept. */
  invocationRetentionDays: 30,
  invocationListDefault: 10,
  invocationListMax: 20,
  /** Public invokes per function and minute (decisions 8.1). */
  publicInvokesPerMinute: 600,
  /** Characters of `detail` in the 500 of a failed invocation (decisions 7.2). */
  failureDetailMax: 512
} as const

/** Decisions 2.7: a given slug matches this (generated slugs always do). */
export const FUNCTION_SLUG_PATTERN = /^[a-z0-9-]+$/

export const FunctionRuntimeConfig = Schema.Struct({ timeout: Schema.Int, memory: Schema.Int })
export type FunctionRuntimeConfig = typeof FunctionRuntimeConfig.Type

export const defaultFunctionRuntimeConfig: FunctionRuntimeConfig = {
  timeout: FunctionBounds.timeoutDefaultSeconds,
  memory: FunctionBounds.memoryMb
}

/** The stored record. */
export interface FunctionRecord {
  readonly id: string
  readonly project_id: string
  readonly name: string
  readonly slug: string
  readonly description: string | null
  readonly code: string
  readonly function_type: typeof FUNCTION_TYPE
  readonly status: FunctionStatus
  /** 0 until the first successful deploy; +1 per successful deploy. */
  readonly version: number
  readonly last_deployed_at: string | null
  readonly last_deploy_error: string | null
  readonly runtime_config: FunctionRuntimeConfig
  /** The API key that created it. */
  readonly created_by_id: string
  readonly public_endpoint: boolean
  readonly invoke_response_mode: FunctionInvokeResponseMode
  readonly lock_version: number
  /** The deployment whose code snapshot serves (`version`); null until the first successful deploy. */
  readonly deployed_deployment_id: string | null
  readonly created_at: string
  readonly updated_at: string
}

/** The spec's words for a function's fields ("Function"). */
const FUNCTION_FIELDS = {
  id: "The function's id",
  name: "Its name",
  slug: "Unique within the project",
  description: "Optional",
  code: "The function's source: `export default { async fetch(request, env) { ... } }` or `async function handler(request, env)`",
  function_type: "The worker kind: `edge_worker`",
  version: "Incremented by each deploy",
  status: "Its deployment state (`deployed` once a deploy succeeded)",
  last_deployed_at: "When it was last deployed; null before the first deploy",
  last_deploy_error: "Why the last deploy failed; null when it did not",
  runtime_config: "`timeout` (seconds) and `memory` (MB) of an invocation",
  project_id: "The owning project",
  created_by_id: "The key or user that created it",
  endpoint_url: "The Platform API invoke address, `{platform_url}/functions/<function_id>/invoke`",
  edge_worker_url: "The underlying deployment's address",
  alt_function_url: "Another address of the deployment",
  lock_version: "Optimistic locking version: pass it on update",
  public_endpoint: "For deployed functions: `false` keeps invoke private (needs `X-API-Key`), `true` allows invoke without a key",
  invoke_response_mode: "`passthrough` (default for new functions): the function's answer as is; `wrapped`: a successful " +
    "JSON answer under `data`",
  created_at: "When it was created (ISO 8601)",
  updated_at: "When it last changed (ISO 8601)"
} as const

export const FunctionResource = Schema.Struct(described({
  id: Schema.String,
  name: Schema.String,
  slug: Schema.String,
  description: Schema.NullOr(Schema.String),
  code: Schema.String,
  function_type: Schema.String,
  version: Schema.Int,
  status: FunctionStatus,
  last_deployed_at: Schema.NullOr(Schema.String),
  last_deploy_error: Schema.NullOr(Schema.String),
  runtime_config: FunctionRuntimeConfig,
  project_id: Schema.String,
  created_by_id: Schema.String,
  endpoint_url: Schema.String,
  edge_worker_url: Schema.NullOr(Schema.String),
  alt_function_url: Schema.NullOr(Schema.String),
  lock_version: Schema.Int,
  public_endpoint: Schema.Boolean,
  invoke_response_mode: FunctionInvokeResponseMode,
  created_at: Schema.String,
  updated_at: Schema.String
}, FUNCTION_FIELDS))
export type FunctionResource = typeof FunctionResource.Type

/** The Platform invoke address of a function (spec "Function": `endpoint_url`). */
export const functionEndpointUrlOf = (publicUrl: string, id: string) =>
  `${publicUrl.replace(/\/+$/, "")}/platform/v1/functions/${id}/invoke`

/**
 * Where a deployed version lives inside the host (decisions 2.7: internal,
 * not callable by clients): the runtime's name for it, not an HTTP address.
 */
export const functionEdgeWorkerUrlOf = (f: Pick<FunctionRecord, "id" | "version">) =>
  f.version === 0 ? null : `workerd://functions/${f.id}/v${f.version}`

export const toFunctionResource = (publicUrl: string) => (f: FunctionRecord): FunctionResource => ({
  id: f.id,
  name: f.name,
  slug: f.slug,
  description: f.description,
  code: f.code,
  function_type: f.function_type,
  version: f.version,
  status: f.status,
  last_deployed_at: f.last_deployed_at,
  last_deploy_error: f.last_deploy_error,
  runtime_config: f.runtime_config,
  project_id: f.project_id,
  created_by_id: f.created_by_id,
  endpoint_url: functionEndpointUrlOf(publicUrl, f.id),
  edge_worker_url: functionEdgeWorkerUrlOf(f),
  alt_function_url: null,
  lock_version: f.lock_version,
  public_endpoint: f.public_endpoint,
  invoke_response_mode: f.invoke_response_mode,
  created_at: f.created_at,
  updated_at: f.updated_at
})

/** A function's position in lists ordered newest first. */
export const functionCursorKeyOf = (f: { readonly created_at: string; readonly id: string }) => ({
  sortKey: f.created_at,
  id: f.id
})

// ---- deployments ----

export const FunctionDeploymentStatus = Schema.Literals(["deploying", "deployed", "failed"])
export type FunctionDeploymentStatus = typeof FunctionDeploymentStatus.Type

/** One deploy request and its outcome, with the code it deployed. */
export interface FunctionDeploymentRecord {
  readonly id: string
  readonly function_id: string
  readonly project_id: string
  /** The version the function gets when this deployment succeeds. */
  readonly version: number
  readonly status: FunctionDeploymentStatus
  readonly code_sha256: string
  /**
   * The code as it was when the deploy was asked for: what loads on any host
   * that has not loaded this version yet. Kept while the deployment serves or
   * is in progress; dropped (null) once superseded or failed.
   */
  readonly code: string | null
  readonly runtime_config: FunctionRuntimeConfig
  readonly started_at: string
  readonly finished_at: string | null
  readonly error: string | null
}

export const FunctionDeployment = Schema.Struct({
  id: Schema.String,
  version: Schema.Int,
  status: FunctionDeploymentStatus,
  code_sha256: Schema.String,
  started_at: Schema.String,
  finished_at: Schema.NullOr(Schema.String),
  error: Schema.NullOr(Schema.String)
})
export type FunctionDeployment = typeof FunctionDeployment.Type

export const toFunctionDeployment = (d: FunctionDeploymentRecord): FunctionDeployment => ({
  id: d.id,
  version: d.version,
  status: d.status,
  code_sha256: d.code_sha256,
  started_at: d.started_at,
  finished_at: d.finished_at,
  error: d.error
})

export const functionDeploymentCursorKeyOf = (d: { readonly started_at: string; readonly id: string }) => ({
  sortKey: d.started_at,
  id: d.id
})

export const FunctionDeployAccepted = Schema.Struct({
  message: Schema.String,
  function_id: Schema.String,
  status: Schema.Literal("deploying")
})

// ---- secrets ----

export const FunctionSecretType = Schema.Literals(["text", "json", "inherited"])
export type FunctionSecretType = typeof FunctionSecretType.Type

/** A stored secret: its value only as ciphertext (see `SecretCipher`). */
export interface FunctionSecretRecord {
  readonly function_id: string
  readonly name: string
  readonly type: "text" | "json"
  readonly ciphertext: string
  readonly created_at: string
  readonly updated_at: string
}

export const FunctionSecret = Schema.Struct({ name: Schema.String, type: FunctionSecretType })
export type FunctionSecret = typeof FunctionSecret.Type

export const FUNCTION_SECRET_NAME_PATTERN = /^[A-Z0-9_]+$/

export const FunctionSecretInput = Schema.Struct({ name: Schema.String, value: Schema.Unknown })
export type FunctionSecretInput = typeof FunctionSecretInput.Type

export const FunctionSecretSaved = Schema.Struct({ message: Schema.String })

// ---- invocations ----

export const FunctionInvocationSource = Schema.Literals([
  "api",
  "public",
  "workflow_node",
  "decide_node",
  "agent_tool",
  "form_endpoint"
])
export type FunctionInvocationSource = typeof FunctionInvocationSource.Type

export const FunctionInvocationConsoleLog = Schema.Struct({
  level: ConsoleLevel,
  message: Schema.String,
  logged_at: Schema.String,
  stack: Schema.NullOr(Schema.String)
})
export type FunctionInvocationConsoleLog = typeof FunctionInvocationConsoleLog.Type

export interface FunctionInvocationRecord {
  readonly id: string
  readonly project_id: string
  /** Not a reference: the record outlives its function. */
  readonly function_id: string
  /** What the caller got: the function's status, or 500 for a failure. */
  readonly status_code: number
  readonly duration_ms: number
  /** At most 16 KB (UTF-8) of the request body as text; null when empty. */
  readonly request_body: string | null
  readonly response_body: string | null
  readonly error_message: string | null
  readonly source: FunctionInvocationSource
  readonly console_logs: ReadonlyArray<FunctionInvocationConsoleLog>
  readonly created_at: string
}

export const FunctionInvocation = Schema.Struct({
  id: Schema.String,
  status_code: Schema.Int,
  duration_ms: Schema.Int,
  request_body: Schema.NullOr(Schema.String),
  response_body: Schema.NullOr(Schema.String),
  error_message: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  source: FunctionInvocationSource,
  console_logs: Schema.Array(FunctionInvocationConsoleLog)
})
export type FunctionInvocation = typeof FunctionInvocation.Type

export const toFunctionInvocation = (i: FunctionInvocationRecord): FunctionInvocation => ({
  id: i.id,
  status_code: i.status_code,
  duration_ms: i.duration_ms,
  request_body: i.request_body,
  response_body: i.response_body,
  error_message: i.error_message,
  created_at: i.created_at,
  source: i.source,
  console_logs: i.console_logs
})

/** `status` of `GET /functions/<id>/invocations`: failed means the caller got a status of 400 or more. */
export const FunctionInvocationOutcome = Schema.Literals(["success", "failed"])
export type FunctionInvocationOutcome = typeof FunctionInvocationOutcome.Type

export const FunctionInvocationList = Schema.Struct({
  function_id: Schema.String,
  function_name: Schema.String,
  invocations: Schema.Array(FunctionInvocation),
  total: Schema.Int
})

// ---- write bodies ----

const FunctionRuntimeConfigInput = Schema.Struct({
  timeout: Schema.optionalKey(Schema.Finite),
  memory: Schema.optionalKey(Schema.Finite)
})
export type FunctionRuntimeConfigInput = typeof FunctionRuntimeConfigInput.Type

const writableFields = {
  slug: Schema.optionalKey(Schema.String),
  description: Schema.optionalKey(Schema.NullOr(Schema.String)),
  function_type: Schema.optionalKey(documentedEnum([FUNCTION_TYPE])),
  public_endpoint: Schema.optionalKey(Schema.Boolean),
  runtime_config: Schema.optionalKey(FunctionRuntimeConfigInput),
  invoke_response_mode: Schema.optionalKey(FunctionInvokeResponseMode)
}

/** Body of `POST /functions` inside the `function` envelope. */
export const FunctionCreateInput = Schema.Struct({ name: Schema.String, code: Schema.String, ...writableFields })
export type FunctionCreateInput = typeof FunctionCreateInput.Type

/** Body of `PATCH /functions/<id>`: every field optional. */
export const FunctionUpdateInput = Schema.Struct({
  name: Schema.optionalKey(Schema.String),
  code: Schema.optionalKey(Schema.String),
  ...writableFields,
  lock_version: Schema.optionalKey(Schema.NullOr(Schema.Int))
})
export type FunctionUpdateInput = typeof FunctionUpdateInput.Type

/** What the runtime enforces for a deployed version. */
export const functionRuntimeLimitsOf = (config: FunctionRuntimeConfig) => ({ timeoutMs: config.timeout * 1000, memoryMb: config.memory })
