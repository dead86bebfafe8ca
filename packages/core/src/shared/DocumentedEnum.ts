/**
 * A string the document lists the accepted values of, while decoding takes any string: the service checks it and
 * refuses an unknown one with its own message, naming the field and the values (a schema literal would answer the
 * decoder's generic one). So `/openapi.json` says what the server enforces (issue 29 §4: enums the document left
 * open) without changing a refusal's words.
 */
import { Schema } from "effect"

export const documentedEnum = (values: ReadonlyArray<string>) =>
  Schema.String.check(Schema.makeFilter(() => true, { toJsonSchema: () => ({ enum: [...values] }) }))
