/**
 * A local OTLP/HTTP trace receiver for tests: it takes `POST /v1/traces` as a collector does and decodes each body
 * as an `ExportTraceServiceRequest` in OTLP/JSON (the protobuf JSON mapping of opentelemetry-proto's
 * `trace/v1/trace.proto`, `common/v1/common.proto`, `resource/v1/resource.proto`): ids in hex of their exact length,
 * 64-bit times as decimal strings, enums as numbers, attribute values as one `AnyValue` field each. A body that does
 * not decode fails the test (500 to the exporter and kept in `errors`).
 */
import { Schema } from "effect"
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"

const Hex = (length: number) => Schema.String.check(Schema.isPattern(new RegExp(`^[0-9a-f]{${length}}$`)))
const Uint64 = Schema.String.check(Schema.isPattern(/^\d+$/))

interface AnyValue {
  readonly stringValue?: string
  readonly boolValue?: boolean
  readonly intValue?: string | number
  readonly doubleValue?: number
  readonly arrayValue?: { readonly values: ReadonlyArray<AnyValue> }
  readonly kvlistValue?: { readonly values: ReadonlyArray<KeyValue> }
  readonly bytesValue?: string
}
interface KeyValue {
  readonly key: string
  readonly value: AnyValue
}

const AnyValue: Schema.Codec<AnyValue> = Schema.Struct({
  stringValue: Schema.optionalKey(Schema.String),
  boolValue: Schema.optionalKey(Schema.Boolean),
  intValue: Schema.optionalKey(Schema.Union([Schema.String.check(Schema.isPattern(/^-?\d+$/)), Schema.Int])),
  doubleValue: Schema.optionalKey(Schema.Number),
  arrayValue: Schema.optionalKey(Schema.Struct({ values: Schema.Array(Schema.suspend((): Schema.Codec<AnyValue> => AnyValue)) })),
  kvlistValue: Schema.optionalKey(Schema.Struct({ values: Schema.Array(Schema.suspend((): Schema.Codec<KeyValue> => KeyValue)) })),
  bytesValue: Schema.optionalKey(Schema.String)
}).check(Schema.makeFilter((v) => Object.keys(v).length === 1 || "an AnyValue holds exactly one of its fields"))

const KeyValue: Schema.Codec<KeyValue> = Schema.Struct({ key: Schema.String, value: AnyValue })

const Attributes = Schema.Array(KeyValue)

const Span = Schema.Struct({
  traceId: Hex(32),
  spanId: Hex(16),
  traceState: Schema.optionalKey(Schema.String),
  parentSpanId: Schema.optionalKey(Schema.Union([Hex(16), Schema.Literal("")])),
  flags: Schema.optionalKey(Schema.Int),
  name: Schema.String,
  // SPAN_KIND_UNSPECIFIED .. SPAN_KIND_CONSUMER
  kind: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 5 })),
  startTimeUnixNano: Uint64,
  endTimeUnixNano: Uint64,
  attributes: Attributes,
  droppedAttributesCount: Schema.optionalKey(Schema.Int),
  events: Schema.Array(Schema.Struct({
    timeUnixNano: Uint64,
    name: Schema.String,
    attributes: Attributes,
    droppedAttributesCount: Schema.optionalKey(Schema.Int)
  })),
  droppedEventsCount: Schema.optionalKey(Schema.Int),
  links: Schema.Array(Schema.Struct({
    traceId: Hex(32),
    spanId: Hex(16),
    traceState: Schema.optionalKey(Schema.String),
    attributes: Attributes,
    droppedAttributesCount: Schema.optionalKey(Schema.Int),
    flags: Schema.optionalKey(Schema.Int)
  })),
  droppedLinksCount: Schema.optionalKey(Schema.Int),
  // STATUS_CODE_UNSET, _OK, _ERROR
  status: Schema.Struct({ code: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 2 })), message: Schema.optionalKey(Schema.String) })
})

export const ExportTraceServiceRequest = Schema.Struct({
  resourceSpans: Schema.Array(Schema.Struct({
    resource: Schema.Struct({ attributes: Attributes, droppedAttributesCount: Schema.optionalKey(Schema.Int) }),
    scopeSpans: Schema.Array(Schema.Struct({
      scope: Schema.Struct({ name: Schema.String, version: Schema.optionalKey(Schema.String), attributes: Schema.optionalKey(Attributes) }),
      spans: Schema.Array(Span),
      schemaUrl: Schema.optionalKey(Schema.String)
    })),
    schemaUrl: Schema.optionalKey(Schema.String)
  }))
})

const decodeRequest = Schema.decodeUnknownSync(ExportTraceServiceRequest, { onExcessProperty: "error" })

/** A span as received, with its resource's attributes and its own as plain values. */
export interface ReceivedSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly name: string
  readonly kind: number
  readonly status: number
  readonly attributes: Readonly<Record<string, unknown>>
  readonly resource: Readonly<Record<string, unknown>>
  readonly links: ReadonlyArray<{ readonly traceId: string; readonly spanId: string; readonly attributes: Readonly<Record<string, unknown>> }>
}

const plain = (value: AnyValue): unknown =>
  value.stringValue ?? value.boolValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined) ?? value.doubleValue ??
    value.arrayValue?.values.map(plain) ?? value.bytesValue ??
    (value.kvlistValue === undefined ? undefined : record(value.kvlistValue.values))

const record = (attributes: ReadonlyArray<KeyValue>) => Object.fromEntries(attributes.map((kv) => [kv.key, plain(kv.value)]))

export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>`, the value of `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  readonly endpoint: string
  readonly spans: Array<ReceivedSpan>
  /** Every request's raw body, as text (to look for what must never leave). */
  readonly bodies: Array<string>
  readonly requests: Array<{ readonly path: string; readonly headers: IncomingHttpHeaders }>
  readonly errors: Array<string>
  readonly close: () => Promise<void>
}

export const startOtlpReceiver = async (): Promise<OtlpReceiver> => {
  const spans: Array<ReceivedSpan> = []
  const bodies: Array<string> = []
  const requests: Array<{ path: string; headers: IncomingHttpHeaders }> = []
  const errors: Array<string> = []
  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      requests.push({ path: req.url ?? "", headers: req.headers })
      const text = Buffer.concat(chunks).toString("utf8")
      bodies.push(text)
      try {
        if (req.method !== "POST" || req.url !== "/v1/traces") throw new Error(`unexpected ${req.method} ${req.url}`)
        if (req.headers["content-type"] !== "application/json") throw new Error(`content-type ${req.headers["content-type"]}`)
        const decoded = decodeRequest(JSON.parse(text))
        for (const rs of decoded.resourceSpans) {
          const resource = record(rs.resource.attributes)
          for (const ss of rs.scopeSpans) {
            for (const s of ss.spans) {
              spans.push({
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId === "" ? undefined : s.parentSpanId,
                name: s.name,
                kind: s.kind,
                status: s.status.code,
                attributes: record(s.attributes),
                resource,
                links: s.links.map((l) => ({ traceId: l.traceId, spanId: l.spanId, attributes: record(l.attributes) }))
              })
            }
          }
        }
        res.writeHead(200, { "content-type": "application/json" }).end("{}")
      } catch (error) {
        errors.push(String(error))
        res.writeHead(500).end()
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    bodies,
    requests,
    errors,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
