/** Projects are the tenants; API keys belong to one project and are stored hashed. */
import { Schema } from "effect"

export const Project = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  disabled: Schema.Boolean,
  created_at: Schema.String,
  updated_at: Schema.String
})
export type Project = typeof Project.Type

export interface ApiKey {
  readonly id: string
  readonly project_id: string
  readonly name: string
  /** sha256 hex of the key; the key itself is never stored. */
  readonly key_hash: string
  /** First characters of the key, so an operator can tell keys apart. */
  readonly prefix: string
  readonly created_at: string
  readonly revoked_at: string | null
}
