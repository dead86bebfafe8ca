/**
 * The storage contract every embed kind's repository fulfils (`InboxEmbedsRepo`, `WorkflowEmbedsRepo`): records
 * scoped by project, found by token hash to open a page, listed newest first with equality filters, updated in
 * their editable fields only. One conformance suite (`testing/conformance/EmbedsRepoConformance.ts`) holds every
 * adapter of every kind to it.
 */
import type { Effect, Option } from "effect"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import type { EmbedRecordOf } from "./Embed.ts"

export interface EmbedsRepo<R extends EmbedRecordOf<string>, F> {
  readonly insert: (embed: R) => Effect.Effect<void>
  readonly findById: (projectId: string, id: string) => Effect.Effect<Option.Option<R>>
  readonly findByTokenHash: (tokenHash: string) => Effect.Effect<Option.Option<R>>
  /** Newest first by (created_at, id); each defined key of the filter is a column equal to its value. */
  readonly list: (projectId: string, filter: F, window: ListWindow) => Effect.Effect<ListSlice<R>>
  /** Replaces the editable fields, `status` and `updated_at`; None when gone. Scope and token never change. */
  readonly update: (embed: R) => Effect.Effect<Option.Option<R>>
  /** Sets `last_used_at` when it is older than `at` (never moves it back). */
  readonly touch: (id: string, at: string) => Effect.Effect<void>
}

/** A kind's storage: its table and the columns it adds to the shared record (each one an update may change). */
export interface EmbedTable<R extends EmbedRecordOf<string>> {
  readonly table: string
  readonly ownColumns: ReadonlyArray<Exclude<keyof R, keyof EmbedRecordOf<string>> & string>
}

/** The columns of a kind's row, in the table's order. */
export const embedColumns = <R extends EmbedRecordOf<string>>(kind: EmbedTable<R>): ReadonlyArray<keyof R & string> => [
  "id", "project_id", "name", "scope_type", "scope_id", "scope_name", ...kind.ownColumns, "status", "allowed_origins",
  "default_mode", "language", "expires_at", "last_used_at", "token_hash", "created_at", "updated_at"
]

/** The columns an update writes: the shared editable ones and the kind's own. */
export const updatedColumns = <R extends EmbedRecordOf<string>>(kind: EmbedTable<R>): ReadonlyArray<keyof R & string> => [
  "name", "status", "allowed_origins", "default_mode", "language", "expires_at", "updated_at", ...kind.ownColumns
]

/** The filter's defined keys, each a column and the value it must equal. */
export const filterEntries = (filter: object): ReadonlyArray<readonly [string, unknown]> =>
  Object.entries(filter).filter(([, value]) => value !== undefined)
