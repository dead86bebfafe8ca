/**
 * What every agent tool call hands back (decisions 10.5.5, 10.6): an outcome the engine journals and the model
 * reads, tool errors included (they do not fail the execution), and the one rule on its size.
 */
import type { Effect } from "effect"

/**
 * Renders a template of the node (strings with `{{...}}`, objects of them) against the execution: the engine's
 * interpolation, passed in by the caller, which keeps its own errors (a missing secret, say).
 */
export type Interpolate<E, R> = (template: unknown) => Effect.Effect<unknown, E, R>

/** The outcome of one tool call. */
export interface ToolOutcome {
  /** False when the model is told the call failed (bad arguments, refused address, non-2xx, timeout). */
  readonly ok: boolean
  /** What the model sees, already cut by `cutToolResult`. */
  readonly result: unknown
  /** The HTTP status of the answer, when there was one. */
  readonly status?: number | undefined
}

/** Every network tool (webhooks, MCP servers) gives up after this long (decisions 10.6). */
export const TOOL_TIMEOUT_MS = 30_000

/** A tool result larger than this, as JSON text, reaches the model cut (decisions 10.5.5: "cut to 16 KB"). */
export const TOOL_RESULT_BYTES = 16 * 1024

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/**
 * The value itself when its text (a string as it is, anything else as JSON) fits in 16 KB; else that text cut on a
 * character boundary, ending with a note that says how long the whole answer was, 16 KB in all.
 */
export function cutToolResult(value: string): string
export function cutToolResult(value: unknown): unknown
export function cutToolResult(value: unknown): unknown {
  const text = typeof value === "string" ? value : (JSON.stringify(value) ?? "null")
  const bytes = encoder.encode(text)
  if (bytes.byteLength <= TOOL_RESULT_BYTES) return value
  const note = ` …[cut: the answer is ${bytes.byteLength} bytes; only the first ones are shown]`
  let end = TOOL_RESULT_BYTES - encoder.encode(note).byteLength
  // Never split a UTF-8 sequence: back up to the first byte of a character.
  while ((bytes[end]! & 0xc0) === 0x80) end--
  return decoder.decode(bytes.subarray(0, end)) + note
}
