/**
 * A local OTLP/HTTP trace receiver for tests: it takes `POST /v1/traces` as a collector does and decodes each body
 * as an `ExportTraceServiceRequest`, in protobuf (`application/x-protobuf`, the default protocol) or in OTLP/JSON (the protobuf JSON mapping of opentelemetry-proto's
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

/**
 * Protobuf wire format (varint, fixed64, length-delimited, fixed32): the fields of one message, by number, in order.
 * Field numbers below are those of opentelemetry-proto's `collector/trace/v1/trace_service.proto`,
 * `trace/v1/trace.proto`, `common/v1/common.proto` and `resource/v1/resource.proto`.
 */
const fields = (bytes: Uint8Array): Array<{ readonly field: number; readonly wire: number; readonly value: bigint | Uint8Array }> => {
  const out: Array<{ field: number; wire: number; value: bigint | Uint8Array }> = []
  let at = 0
  const varint = () => {
    let result = 0n
    for (let shift = 0n;; shift += 7n) {
      if (at >= bytes.length) throw new Error("truncated varint")
      const byte = bytes[at++]!
      result |= BigInt(byte & 0x7f) << shift
      if ((byte & 0x80) === 0) return result
    }
  }
  while (at < bytes.length) {
    const key = Number(varint())
    const field = key >> 3
    const wire = key & 7
    if (wire === 0) out.push({ field, wire, value: varint() })
    else if (wire === 1) {
      if (at + 8 > bytes.length) throw new Error("truncated fixed64")
      out.push({ field, wire, value: new DataView(bytes.buffer, bytes.byteOffset + at, 8).getBigUint64(0, true) })
      at += 8
    } else if (wire === 2) {
      const length = Number(varint())
      if (at + length > bytes.length) throw new Error("truncated length-delimited field")
      out.push({ field, wire, value: bytes.subarray(at, at + length) })
      at += length
    } else if (wire === 5) {
      at += 4
    } else throw new Error(`wire type ${wire}`)
  }
  return out
}
const bytesOf = (f: { readonly value: bigint | Uint8Array }) => {
  if (!(f.value instanceof Uint8Array)) throw new Error("expected a length-delimited field")
  return f.value
}
const text = (f: { readonly value: bigint | Uint8Array }) => new TextDecoder("utf-8", { fatal: true }).decode(bytesOf(f))
const hex = (f: { readonly value: bigint | Uint8Array }) => Buffer.from(bytesOf(f)).toString("hex")

/** `AnyValue`: string_value 1, bool_value 2, int_value 3, double_value 4, array_value 5, kvlist_value 6, bytes_value 7. */
const anyValue = (bytes: Uint8Array): unknown => {
  const [f] = fields(bytes)
  if (f === undefined) return undefined
  switch (f.field) {
    case 1: return text(f)
    case 2: return f.value === 1n
    case 3: return Number(BigInt.asIntN(64, f.value as bigint))
    case 4: return new DataView(new BigUint64Array([f.value as bigint]).buffer).getFloat64(0, true)
    case 5: return fields(bytesOf(f)).map((v) => anyValue(bytesOf(v)))
    case 6: return keyValues(fields(bytesOf(f)).filter((v) => v.field === 1))
    case 7: return Buffer.from(bytesOf(f)).toString("base64")
    default: throw new Error(`AnyValue field ${f.field}`)
  }
}
/** `KeyValue`: key 1, value 2. */
const keyValues = (list: ReadonlyArray<{ readonly value: bigint | Uint8Array }>) =>
  Object.fromEntries(list.map((kv) => {
    const parts = fields(bytesOf(kv))
    const key = parts.find((p) => p.field === 1)
    const value = parts.find((p) => p.field === 2)
    if (key === undefined) throw new Error("KeyValue without a key")
    return [text(key), value === undefined ? undefined : anyValue(bytesOf(value))]
  }))

/**
 * `ExportTraceServiceRequest` (resource_spans 1) → `ResourceSpans` (resource 1, scope_spans 2) → `ScopeSpans` (scope 1,
 * spans 2) → `Span` (trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6, start 7, end 8, attributes 9, links 13,
 * status 15 with code 3); `Resource` attributes 1; `Span.Link` trace_id 1, span_id 2, attributes 4.
 */
export const decodeProtobufRequest = (body: Uint8Array): Array<ReceivedSpan> => {
  const spans: Array<ReceivedSpan> = []
  for (const rs of fields(body).filter((f) => f.field === 1)) {
    const parts = fields(bytesOf(rs))
    const resourceField = parts.find((p) => p.field === 1)
    const resource = resourceField === undefined ? {} : keyValues(fields(bytesOf(resourceField)).filter((p) => p.field === 1))
    for (const ss of parts.filter((p) => p.field === 2)) {
      for (const sp of fields(bytesOf(ss)).filter((p) => p.field === 2)) {
        const s = fields(bytesOf(sp))
        const one = (n: number) => s.find((p) => p.field === n)
        const traceId = hex(one(1)!)
        const spanId = hex(one(2)!)
        if (traceId.length !== 32 || spanId.length !== 16) throw new Error(`ids of ${traceId.length / 2} and ${spanId.length / 2} bytes`)
        const parent = one(4)
        const status = one(15)
        const code = status === undefined ? undefined : fields(bytesOf(status)).find((p) => p.field === 3)
        spans.push({
          traceId,
          spanId,
          parentSpanId: parent === undefined || bytesOf(parent).length === 0 ? undefined : hex(parent),
          name: text(one(5)!),
          kind: Number(one(6)?.value ?? 0n),
          status: Number(code?.value ?? 0n),
          attributes: keyValues(s.filter((p) => p.field === 9)),
          resource,
          links: s.filter((p) => p.field === 13).map((l) => {
            const lf = fields(bytesOf(l))
            return {
              traceId: hex(lf.find((p) => p.field === 1)!),
              spanId: hex(lf.find((p) => p.field === 2)!),
              attributes: keyValues(lf.filter((p) => p.field === 4))
            }
          })
        })
      }
    }
  }
  return spans
}

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
      const raw = Buffer.concat(chunks)
      const text = raw.toString("utf8")
      bodies.push(text)
      try {
        if (req.method !== "POST" || req.url !== "/v1/traces") throw new Error(`unexpected ${req.method} ${req.url}`)
        if (req.headers["content-type"] === "application/x-protobuf") {
          spans.push(...decodeProtobufRequest(new Uint8Array(raw)))
          res.writeHead(200, { "content-type": "application/x-protobuf" }).end()
          return
        }
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
