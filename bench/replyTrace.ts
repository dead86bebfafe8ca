/**
 * Where a timed request's milliseconds go inside the host (`BENCH_BROADCAST_REPLY_TRACE=1`): the bench sends the
 * request with a `traceparent` of a trace id of its own, and this tracer keeps the spans of those traces only (the
 * server span, `Outbound.send`, each SQL statement with its wait for a connection, ...). Opt-in: a tracer other than
 * Effect's in-process one makes every span of the host record its attributes, which costs the broadcast measured.
 */
import { Tracer } from "effect"

const MARK = "b0b0"

export interface SpanTime {
  readonly name: string
  readonly ms: number
  /** When it started, ms since the clock's origin (a request's spans share the clock). */
  readonly startMs: number
}

export const replyTracer = () => {
  const kept = new Map<string, Array<SpanTime>>()
  let next = 0
  const tracer = Tracer.make({
    span(options) {
      const span = new Tracer.NativeSpan(options)
      const parent = options.parent
      if (parent._tag === "None" || !parent.value.traceId.startsWith(MARK)) return span
      const spans = kept.get(parent.value.traceId)
      if (spans === undefined) return span
      const end = span.end.bind(span)
      span.end = (endTime, exit) => {
        end(endTime, exit)
        // A statement's span is named after the database: its text names it better.
        const text = span.attributes.get("db.query.text")
        const name = typeof text === "string" ? `sql: ${text.replace(/\s+/g, " ").trim().slice(0, 60)}` : options.name
        spans.push({ name, ms: Number(endTime - options.startTime) / 1e6, startMs: Number(options.startTime) / 1e6 })
      }
      return span
    }
  })
  return {
    tracer,
    /** A `traceparent` header whose trace's spans are kept, and the spans once the request answered. */
    start: () => {
      const traceId = `${MARK}${String(next++).padStart(28, "0")}`
      kept.set(traceId, [])
      return {
        header: `00-${traceId}-${"1".padStart(16, "0")}-01`,
        take: () => {
          const spans = kept.get(traceId) ?? []
          kept.delete(traceId)
          return spans
        }
      }
    }
  }
}

/** Per span name, the mean ms per request and the mean count, over requests' spans. */
export const spanBreakdown = (requests: ReadonlyArray<ReadonlyArray<Pick<SpanTime, "name" | "ms">>>) => {
  const sums = new Map<string, { ms: number; count: number }>()
  for (const spans of requests) {
    for (const s of spans) {
      const sum = sums.get(s.name) ?? { ms: 0, count: 0 }
      sum.ms += s.ms
      sum.count++
      sums.set(s.name, sum)
    }
  }
  const n = Math.max(1, requests.length)
  return [...sums].map(([name, s]) => ({ name, ms: s.ms / n, count: s.count / n })).sort((a, b) => b.ms - a.ms)
}

/**
 * One request's time line over requests: per span name (a name's second occurrence in a request is `name #2`), the
 * median ms from the request's first span's start to the span's start and to its end, in order of start (medians:
 * a loaded machine's outliers would drag means). The gaps between one span's end and the next one's start are time
 * no span names (the event loop's delay, untraced steps).
 */
export const spanTimeline = (requests: ReadonlyArray<ReadonlyArray<SpanTime>>) => {
  const times = new Map<string, { starts: Array<number>; ends: Array<number> }>()
  for (const spans of requests) {
    if (spans.length === 0) continue
    const origin = Math.min(...spans.map((s) => s.startMs))
    const seen = new Map<string, number>()
    for (const s of [...spans].sort((a, b) => a.startMs - b.startMs)) {
      const n = (seen.get(s.name) ?? 0) + 1
      seen.set(s.name, n)
      const name = n === 1 ? s.name : `${s.name} #${n}`
      const t = times.get(name) ?? { starts: [], ends: [] }
      t.starts.push(s.startMs - origin)
      t.ends.push(s.startMs - origin + s.ms)
      times.set(name, t)
    }
  }
  const median = (xs: Array<number>) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  return [...times].map(([name, t]) => ({ name, startMs: median(t.starts), endMs: median(t.ends), count: t.starts.length }))
    .sort((a, b) => a.startMs - b.startMs)
}
