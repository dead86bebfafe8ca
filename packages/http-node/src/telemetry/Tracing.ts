/**
 * Where the host's spans go. With the standard OpenTelemetry environment (`OTEL_EXPORTER_OTLP_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `..._HEADERS`, `..._PROTOCOL`, `OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER`) they
 * are exported over OTLP/HTTP by effect's own exporter; without an endpoint no tracer is installed at all (no
 * exporter, no timer, Effect's spans stay in-process and cost what they cost today). An embedder may pass a tracer of
 * its own (`@effect/opentelemetry` over its tracer provider) instead.
 *
 * Every tracer the host uses is wrapped by `scrubbed`: URL attributes lose their query and long digit runs (a phone
 * number in a path), so no secret or phone number leaves in a span whatever code recorded it.
 */
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Config, Effect, Layer, Option, Schema, Tracer } from "effect"
import { OtlpExporter, OtlpSerialization, OtlpTracer } from "effect/observability"

/** `OTEL_TRACES_SAMPLER` as the OpenTelemetry specification names its values (default `parentbased_always_on`). */
const Sampler = Config.Literals(
  ["always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"],
  "OTEL_TRACES_SAMPLER"
).pipe(Config.withDefault("parentbased_always_on" as const))

type Sampler = Config.Success<typeof Sampler>

/** The settings of the OTLP exporter, or none when the environment configures no export. */
export interface OtlpSettings {
  readonly url: string
  readonly protocol: "http/protobuf" | "http/json"
  readonly headers: Record<string, string> | undefined
  readonly serviceName: string | undefined
  readonly sampler: Sampler
  readonly ratio: number
  /** `OTEL_BSP_SCHEDULE_DELAY`: milliseconds between exports (default 5000). */
  readonly exportIntervalMs: number
  /** `OTEL_BSP_MAX_EXPORT_BATCH_SIZE`: spans that make an export go at once (default 512). */
  readonly maxBatchSize: number
}

/** `key=value,key=value` with URI-encoded values, as the specification writes headers. */
const headerList = (name: string) => Config.Record(Schema.String, Schema.StringFromUriComponent, name, { trim: true })

/** Reads the standard environment; `None` when traces are not to be exported (no endpoint, disabled, exporter `none`). */
export const otlpSettings = Effect.gen(function*() {
  const disabled = yield* Config.Boolean("OTEL_SDK_DISABLED").pipe(Config.withDefault(false))
  const exporters = yield* Config.String("OTEL_TRACES_EXPORTER").pipe(Config.withDefault("otlp"))
  const signal = yield* Config.option(Config.String("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
  const base = yield* Config.option(Config.String("OTEL_EXPORTER_OTLP_ENDPOINT"))
  const url = Option.isSome(signal) && signal.value.trim() !== ""
    ? signal.value.trim()
    : Option.isSome(base) && base.value.trim() !== ""
    ? `${base.value.trim().replace(/\/+$/, "")}/v1/traces`
    : undefined
  if (disabled || url === undefined || !exporters.split(",").map((e) => e.trim().toLowerCase()).includes("otlp")) {
    return Option.none<OtlpSettings>()
  }
  const protocol = yield* Config.Literals(["http/protobuf", "http/json"], "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL").pipe(
    Config.orElse(() => Config.Literals(["http/protobuf", "http/json"], "OTEL_EXPORTER_OTLP_PROTOCOL")),
    Config.withDefault("http/protobuf" as const)
  )
  const headers = yield* headerList("OTEL_EXPORTER_OTLP_TRACES_HEADERS").pipe(
    Config.orElse(() => headerList("OTEL_EXPORTER_OTLP_HEADERS")),
    Config.withDefault(undefined)
  )
  const named = yield* Config.option(Config.String("OTEL_SERVICE_NAME"))
  const resource = yield* Config.option(Config.String("OTEL_RESOURCE_ATTRIBUTES"))
  const sampler = yield* Sampler
  const ratio = yield* Config.Number("OTEL_TRACES_SAMPLER_ARG").pipe(Config.withDefault(1))
  const exportIntervalMs = yield* Config.Int("OTEL_BSP_SCHEDULE_DELAY").pipe(Config.withDefault(5000))
  const maxBatchSize = yield* Config.Int("OTEL_BSP_MAX_EXPORT_BATCH_SIZE").pipe(Config.withDefault(512))
  return Option.some<OtlpSettings>({
    url,
    protocol,
    headers,
    // The specification's `unknown_service` would hide the host among others: `parley` unless the operator names it.
    serviceName: Option.getOrUndefined(named) ??
      (Option.isSome(resource) && /(^|,)\s*service\.name\s*=/.test(resource.value) ? undefined : "parley"),
    sampler,
    ratio: Math.min(1, Math.max(0, ratio)),
    exportIntervalMs: Math.max(1, exportIntervalMs),
    maxBatchSize: Math.max(1, maxBatchSize)
  })
}).pipe(Effect.orDie)

/** The sampling decision for a span the host starts; `sampled` is Effect's (the parent's decision, or true). */
const decide = (sampler: Sampler, ratio: number, hasParent: boolean, sampled: boolean): boolean => {
  switch (sampler) {
    case "always_on":
      return true
    case "always_off":
      return false
    case "traceidratio":
      return Math.random() < ratio
    case "parentbased_always_on":
      return hasParent ? sampled : true
    case "parentbased_always_off":
      return hasParent ? sampled : false
    case "parentbased_traceidratio":
      return hasParent ? sampled : Math.random() < ratio
  }
}

const URL_KEYS = new Set(["url.full", "url.path", "url.query", "http.url", "http.target"])

/**
 * A URL attribute without its query and with phone-number-like segments (6 to 15 digits, a `+` allowed, standing
 * alone between separators) replaced; ids that merely contain digits (UUIDs) stay readable.
 */
export const scrubUrl = (value: string): string =>
  value.replace(/[?#].*$/s, "").replace(/(?<![0-9A-Za-z-])(?:\+|%2B)?\d{6,15}(?![0-9A-Za-z-])/gi, ":n")

/** `inner` with the sampling decision of the environment, whose spans never carry a URL's query or a phone number. */
export const scrubbed = (inner: Tracer.Tracer, sampling?: { readonly sampler: Sampler; readonly ratio: number }): Tracer.Tracer =>
  Tracer.make({
    span(options) {
      const sampled = sampling === undefined
        ? options.sampled
        : decide(sampling.sampler, sampling.ratio, Option.isSome(options.parent), options.sampled)
      const span = inner.span({ ...options, sampled })
      const attribute = span.attribute.bind(span)
      span.attribute = (key: string, value: unknown) => {
        if (key === "url.query") return
        attribute(key, URL_KEYS.has(key) && typeof value === "string" ? scrubUrl(value) : value)
      }
      return span
    },
    ...(inner.context === undefined ? {} : { context: inner.context })
  })

/** The OTLP exporter of `settings`, its spans scrubbed and sampled as configured. */
const layerOtlp = (settings: OtlpSettings) =>
  Layer.effect(
    Tracer.Tracer,
    Effect.map(
      OtlpTracer.make({
        url: settings.url,
        headers: settings.headers,
        resource: { serviceName: settings.serviceName },
        exportInterval: settings.exportIntervalMs,
        maxBatchSize: settings.maxBatchSize
      }),
      (tracer) => scrubbed(tracer, settings)
    )
  ).pipe(
    Layer.provide(
      settings.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf
    ),
    Layer.provide(Layer.fresh(NodeHttpClient.layerUndici)),
    Layer.provide(OtlpExporter.layerFlusher)
  )

/**
 * The host's tracer: the embedder's (scrubbed) when given, else the OTLP exporter when the environment configures
 * one, else nothing (Effect's default in-process tracer: nothing exported, no exporter built).
 */
export const layer = (tracer?: Tracer.Tracer | undefined): Layer.Layer<never> =>
  tracer !== undefined
    ? Layer.succeed(Tracer.Tracer, scrubbed(tracer))
    : Layer.unwrap(Effect.map(otlpSettings, (settings) => Option.isSome(settings) ? layerOtlp(settings.value) : Layer.empty))
