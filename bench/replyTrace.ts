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
        spans.push({ name: options.name, ms: Number(endTime - options.startTime) / 1e6 })
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
export const spanBreakdown = (requests: ReadonlyArray<ReadonlyArray<SpanTime>>) => {
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
