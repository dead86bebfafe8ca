/**
 * The passages a knowledge base (decisions 2.3.9 `flow_agent_knowledge_bases`) is searched by: paragraphs, small
 * ones merged with their neighbours and long ones cut on sentence boundaries, so each passage is roughly
 * `PASSAGE_MIN_CHARS`–`PASSAGE_MAX_CHARS` characters and says one thing. Deterministic, so every adapter ranks the same passages.
 */

/** A paragraph shorter than this is merged with the next one (a heading with its section). */
export const PASSAGE_MIN_CHARS = 300
/** No passage is longer than this. */
export const PASSAGE_MAX_CHARS = 1000

const sentences = (paragraph: string): Array<string> => paragraph.split(/(?<=[.!?])\s+/).filter((s) => s !== "")

/** A run of text with no sentence boundary, cut at the last space before `PASSAGE_MAX_CHARS` (or at `PASSAGE_MAX_CHARS`). */
const hardCut = (sentence: string): Array<string> => {
  const pieces: Array<string> = []
  let rest = sentence
  while (rest.length > PASSAGE_MAX_CHARS) {
    const space = rest.lastIndexOf(" ", PASSAGE_MAX_CHARS)
    const at = space > PASSAGE_MAX_CHARS / 2 ? space : PASSAGE_MAX_CHARS
    pieces.push(rest.slice(0, at).trim())
    rest = rest.slice(at).trim()
  }
  if (rest !== "") pieces.push(rest)
  return pieces
}

/** Packs pieces in order into runs of at most `PASSAGE_MAX_CHARS`, joined by `separator`. */
const pack = (pieces: ReadonlyArray<string>, separator: string, mergeBelow: number): Array<string> => {
  const out: Array<string> = []
  for (const piece of pieces) {
    const last = out.at(-1)
    if (last !== undefined && last.length < mergeBelow && last.length + separator.length + piece.length <= PASSAGE_MAX_CHARS) {
      out[out.length - 1] = last + separator + piece
    } else {
      out.push(piece)
    }
  }
  return out
}

/** The text's passages, in order; an empty or blank text has none. */
export const splitPassages = (text: string): Array<string> => {
  const paragraphs = text.split(/\n\s*\n/).map((p) => p.replace(/\s+/g, " ").trim()).filter((p) => p !== "")
  const bounded = paragraphs.flatMap((p) =>
    p.length <= PASSAGE_MAX_CHARS ? [p] : pack(sentences(p).flatMap(hardCut), " ", Number.POSITIVE_INFINITY)
  )
  return pack(bounded, "\n\n", PASSAGE_MIN_CHARS)
}
