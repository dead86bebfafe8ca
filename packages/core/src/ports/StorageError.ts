/** The one storage failure a domain service can act on: a uniqueness rule the store enforces. */
import { Schema } from "effect"

export class Duplicate extends Schema.TaggedError<Duplicate>()("Duplicate", {
  /** Which unique field collided, e.g. `name` or `slug`. */
  field: Schema.String
}) {}
