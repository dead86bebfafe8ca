/**
 * Whether stored bytes or JSON hold one of a contact's identifiers (`erasureTerms`), as text: what the erasure
 * deletions of webhooks, the outbox and messaging match on.
 */
import type { SqlClient } from "effect/sql"

/** True when the bytea `column` holds one of `terms` (UTF-8). */
export const bytesMention = (sql: SqlClient.SqlClient, column: string, terms: ReadonlyArray<string>) =>
  sql`EXISTS (SELECT 1 FROM unnest(${terms}::text[]) AS t WHERE position(convert_to(t, 'UTF8') IN ${sql(column)}) > 0)`

/** True when the text of the jsonb `column` holds one of `terms`. */
export const jsonMentions = (sql: SqlClient.SqlClient, column: string, terms: ReadonlyArray<string>) =>
  sql`EXISTS (SELECT 1 FROM unnest(${terms}::text[]) AS t WHERE strpos(${sql(column)}::text, t) > 0)`
