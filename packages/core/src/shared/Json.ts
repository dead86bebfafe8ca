/**
 * JSON text read without `Schema`: a `Schema.decodeUnknownOption` runs a
 * fiber per call, and the network's bodies are read on every send and every
 * webhook. `None` when the text is not JSON.
 */
import { Option } from "effect"

export const parseJson = (text: string): Option.Option<unknown> => {
  try {
    return Option.some(JSON.parse(text))
  } catch {
    return Option.none()
  }
}
