/**
 * A project's secrets (decisions 10.5.4): the values `${ENV:NAME}` reads in
 * workflow nodes (and `inherited` function secrets name), managed by the
 * operator (`parley secrets`). Values rest encrypted under the host key
 * (`functions/SecretCipher.ts`), bound to their project and name; no answer
 * and no log ever holds one.
 */
export interface ProjectSecretRecord {
  readonly project_id: string
  readonly name: string
  readonly ciphertext: string
  readonly created_at: string
  readonly updated_at: string
}

/** What a listing shows: never the value. */
export interface ProjectSecretInfo {
  readonly name: string
  readonly created_at: string
  readonly updated_at: string
}

export const PROJECT_SECRET_NAME = /^[A-Z0-9_]+$/
export const PROJECT_SECRET_NAME_MAX_LENGTH = 128
/** Bytes of one value at most. */
export const PROJECT_SECRET_VALUE_MAX_BYTES = 32 * 1024

/** The GCM additional data's first part: a project's secrets never decrypt as a function's, nor another project's. */
export const projectSecretScope = (projectId: string) => `project:${projectId}`

export const toProjectSecretInfo = (r: ProjectSecretRecord): ProjectSecretInfo => ({
  name: r.name,
  created_at: r.created_at,
  updated_at: r.updated_at
})
