/**
 * JSON text read without `Schema`: a `Schema.decodeUnknownOption` runs a
 * fiber per call, and the network's bodies are read on every send and every
 * webhook. `None` when the text is not JSON.
 */
import { Effect, Option, Schema } from "effect"

export const parseJson = (text: string): Option.Option<unknown> => {
  try {
    return Option.some(JSON.parse(text))
  } catch {
    return Option.none()
  }
}

/**
 * A field of free-form JSON (the network's objects, node configs) that reads as absent unless it decodes with
 * `schema`: a `Schema.Struct` of such fields says what the code reads, and decoding it never fails on the rest
 * (about 1.5 µs for a small struct, so fine off the hottest loops).
 */
export const lenient = <S extends Schema.Top>(schema: S) =>
  Schema.optionalKey(schema.pipe(Schema.catchDecoding(() => Effect.succeedNone)))

/** A non-empty string, or absent (an empty string, another type or no field). */
export const OptionalText = lenient(Schema.NonEmptyString)
/** A string (empty included), or absent. */
export const OptionalString = lenient(Schema.String)
/** A finite number, or absent. */
export const OptionalFinite = lenient(Schema.Finite)
/** A JSON object (not an array), or absent. */
export const OptionalObject = lenient(Schema.Record(Schema.String, Schema.Unknown))
