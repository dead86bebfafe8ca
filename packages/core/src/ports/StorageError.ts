/** Storage failures: the uniqueness rule a domain service can act on, and a stored row the code cannot read. */
import { Schema } from "effect"

export class Duplicate extends Schema.TaggedError<Duplicate>()("Duplicate", {
  /** Which unique field collided, e.g. `name` or `slug`. */
  field: Schema.String
}) {}

/**
 * A row a store read back does not decode into its record: the table and the code disagree (a migration not
 * run, a column changed by hand). Nothing a caller can do about it, so adapters raise it as a defect, with the
 * facts: which query, which field, why (never the value, which may be private).
 */
export class StorageError extends Schema.TaggedError<StorageError>()("StorageError", {
  /** The table or named query the row came from. */
  query: Schema.String,
  /** The field that did not decode, as a dotted path (`wait.due_at`); empty for the row as a whole. */
  field: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `a row of ${this.query} does not decode: ${this.field === "" ? "the row" : this.field}: ${this.reason}`
  }
}
