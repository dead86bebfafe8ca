/**
 * Request text PostgreSQL cannot store or Parley cannot walk safely
 * (docs/decisions.md "Text a request may carry"): a NUL character, an unpaired
 * UTF-16 surrogate, or JSON nested deeper than `MAX_JSON_DEPTH`. One linear
 * scan of the raw JSON text, without recursion (a body nested 100,000 levels
 * deep must not overflow the stack), names the first offending field.
 */

/** Containers a JSON body may nest; deeper bodies are refused before they are parsed. */
export const MAX_JSON_DEPTH = 64

export type TextProblem =
  | { readonly _tag: "TooDeep" }
  | { readonly _tag: "Nul"; readonly path: string }
  | { readonly _tag: "Surrogate"; readonly path: string }

export const describeTextProblem = (problem: TextProblem): { readonly path: string; readonly message: string } =>
  problem._tag === "TooDeep"
    ? { path: "body", message: `JSON nests deeper than ${MAX_JSON_DEPTH} levels` }
    : problem._tag === "Nul"
    ? { path: problem.path, message: `${problem.path} contains a NUL character` }
    : { path: problem.path, message: `${problem.path} contains an unpaired surrogate` }

const UNPAIRED = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** A decoded string (query value, path segment) with a NUL character or an unpaired surrogate. */
export const stringProblem = (value: string, path: string): TextProblem | undefined =>
  value.includes("\u0000")
    ? { _tag: "Nul", path }
    : UNPAIRED.test(value)
    ? { _tag: "Surrogate", path }
    : undefined

interface Frame {
  readonly array: boolean
  /** The current key (objects) or index (arrays). */
  key: string | number
  /** Objects: the next string is a key. */
  expectKey: boolean
}

const HIGH = /^[dD][89abAB]/
const LOW = /^[dD][c-fC-F]/

/**
 * The first problem of a JSON text, scanning it once. Malformed JSON is not
 * this scan's concern (the parser refuses it); the scan only has to stay
 * linear and never throw on it.
 */
export const jsonTextProblem = (text: string): TextProblem | undefined => {
  const stack: Array<Frame> = []
  const pathOf = (frames: ReadonlyArray<Frame> = stack) =>
    frames.length === 0 ? "body" : frames.map((f) => String(f.key)).join(".")
  let i = 0
  const n = text.length
  while (i < n) {
    const c = text.charCodeAt(i)
    if (c === 0x22 /* " */) {
      // A string: a key when its object expects one, else a value at the current path.
      const top = stack[stack.length - 1]
      const isKey = top !== undefined && !top.array && top.expectKey
      let j = i + 1
      let key = ""
      let start = j
      let pendingHigh = false
      // A bad key is reported at the object that holds it.
      const here = () => (isKey ? pathOf(stack.slice(0, -1)) : pathOf())
      while (j < n) {
        const d = text.charCodeAt(j)
        if (d === 0x22) break
        if (d === 0x5c /* \ */) {
          const e = text[j + 1]
          if (e === "u") {
            const hex = text.slice(j + 2, j + 6)
            const path = here()
            if (/^0{4}$/.test(hex)) return { _tag: "Nul", path }
            if (HIGH.test(hex)) {
              if (pendingHigh) return { _tag: "Surrogate", path }
              pendingHigh = true
            } else if (LOW.test(hex)) {
              if (!pendingHigh) return { _tag: "Surrogate", path }
              pendingHigh = false
            } else if (pendingHigh) return { _tag: "Surrogate", path }
            if (isKey) key += text.slice(start, j) + String.fromCharCode(parseInt(hex, 16) || 0x3f)
            j += 6
            start = j
            continue
          }
          if (pendingHigh) return { _tag: "Surrogate", path: here() }
          if (isKey) key += text.slice(start, j) + (e ?? "")
          j += 2
          start = j
          continue
        }
        if (pendingHigh) return { _tag: "Surrogate", path: here() }
        if (d === 0) return { _tag: "Nul", path: here() }
        j++
      }
      if (pendingHigh) return { _tag: "Surrogate", path: here() }
      if (isKey) {
        top.key = key + text.slice(start, j)
        top.expectKey = false
      }
      i = j + 1
      continue
    }
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (stack.length >= MAX_JSON_DEPTH) return { _tag: "TooDeep" }
      stack.push({ array: c === 0x5b, key: c === 0x5b ? 0 : "", expectKey: c === 0x7b })
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop()
    } else if (c === 0x2c /* , */) {
      const top = stack[stack.length - 1]
      if (top !== undefined) {
        if (top.array) top.key = (top.key as number) + 1
        else top.expectKey = true
      }
    } else if (c === 0) {
      return { _tag: "Nul", path: pathOf() }
    }
    i++
  }
  return undefined
}
