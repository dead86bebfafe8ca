/**
 * The contract says what the server does (issue 21 §4): every operation of the served `/openapi.json` gets
 * requests generated from the document's own schemas (valid ones, and ones with wrong types, missing required
 * fields, unknown fields, odd path ids, no key), and every answer must be a documented status, never a 5xx, with a
 * body its documented schema accepts (checked by a real JSON Schema validator). Seeded and bounded, so each run
 * sends the same requests: `PARLEY_FUZZ_RUNS` per operation (24 by default; `npm run fuzz:openapi` sends 200).
 *
 * Time is no verdict here, the machine's load would decide it: each request has a generous limit of its own
 * (unanswered by then, it fails as a hang), and the test's budget grows with the number of requests it sends.
 */
import { type Schema as JsonSchema, Validator } from "@cfworker/json-schema"
import { Ids, stringProblem } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Effect, Exit, Layer, Predicate, Scope } from "effect"
import fc from "fast-check"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { connectSimulatedNumber, type MessagingHost, startMessagingHost } from "./messaging.support.ts"

const SEED = 21_4
/** Requests per operation: valid ones and mutated ones, half each. */
const RUNS = Number(process.env.PARLEY_FUZZ_RUNS ?? 24)
if (!Number.isInteger(RUNS) || RUNS < 2) throw new Error(`PARLEY_FUZZ_RUNS must be a whole number of at least 2, not ${process.env.PARLEY_FUZZ_RUNS}`)
/** An answer takes milliseconds even on a loaded machine: one not there after this is a hang. */
const REQUEST_LIMIT_MS = 15_000
/** At most this many operations (checked): the test's budget is counted in requests. */
const MAX_OPERATIONS = 300
/** Ample for every request at 100 ms (they take about 6 ms alone); a hang fails at `REQUEST_LIMIT_MS` well before. */
const BUDGET_MS = 60_000 + MAX_OPERATIONS * RUNS * 100

/** The connection was reset before any answer (`fetch failed`, caused by ECONNRESET): the request was not read. */
const resetUnread = (error: unknown) =>
  error instanceof TypeError && (error.cause as { readonly code?: unknown } | undefined)?.code === "ECONNRESET"

/**
 * `send`, sent again once when a kept-alive connection the server had closed was reset as the request went out (the
 * answers of the tests before leave such connections in the pool). A second reset is an answer: it fails.
 */
const againIfReset = <A>(send: () => Promise<A>): Promise<A> =>
  send().catch((error: unknown) => resetUnread(error) ? send() : Promise.reject(error))

let host: MessagingHost
let close: () => Promise<void>
/** Ids the host handed out (and the simulated number's), so requests also reach resources that exist. */
const seenIds: Array<string> = []

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    host = yield* startMessagingHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer))
    const number = yield* connectSimulatedNumber(host)
    seenIds.push(number.phoneNumberId, number.businessAccountId)
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
}, 60_000)
afterAll(() => close())

type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }
type Node = { readonly [key: string]: any }

interface Operation {
  readonly method: string
  readonly path: string
  readonly id: string
  readonly summary: string | undefined
  readonly description: string | undefined
  readonly parameters: ReadonlyArray<{ readonly name: string; readonly in: string; readonly required?: boolean; readonly schema?: Node }>
  readonly body: Node | undefined
  readonly responses: { readonly [status: string]: { readonly content?: { readonly [type: string]: { readonly schema?: Node } } } }
}

interface Request {
  readonly kind: string
  /** Resolved when sent. */
  readonly path: () => string
  readonly query: ReadonlyArray<readonly [string, string]>
  readonly body: Json | undefined
  /** A body that is not JSON at all, sent as is. */
  readonly raw?: string | undefined
  readonly withKey: boolean
}

/** Text the host takes anywhere (no NUL, no unpaired surrogate: the document's description states the rule). */
const storable = (s: string) => stringProblem(s, "") === undefined

const anyJson: fc.Arbitrary<Json> = fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>

/** A JSON Schema (the subset the contract uses: type, enum, properties, items, anyOf, allOf, $ref) → values it accepts. */
const arbitrary = (components: Node, schema: Node | undefined, depth = 0): fc.Arbitrary<Json> => {
  if (schema === undefined || depth > 6) return anyJson
  if (typeof schema.$ref === "string") {
    return arbitrary(components, components[schema.$ref.replace("#/components/schemas/", "")], depth + 1)
  }
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum as Array<Json>)
  if ("const" in schema) return fc.constant(schema.const as Json)
  if (Array.isArray(schema.anyOf)) return fc.oneof(...schema.anyOf.map((s: Node) => arbitrary(components, s, depth + 1)))
  if (Array.isArray(schema.oneOf)) return fc.oneof(...schema.oneOf.map((s: Node) => arbitrary(components, s, depth + 1)))
  if (Array.isArray(schema.allOf)) return arbitrary(components, Object.assign({}, ...schema.allOf), depth + 1)
  switch (schema.type) {
    case "string":
      if (schema.format === "date-time") {
        return fc.date({ min: new Date("2000-01-01T00:00:00Z"), max: new Date("2100-01-01T00:00:00Z"), noInvalidDate: true })
          .map((d) => d.toISOString())
      }
      if (typeof schema.pattern === "string") return fc.stringMatching(new RegExp(schema.pattern, "u"))
      // Any code point now and then (astral, controls), and sometimes long; never text the API refuses everywhere
      // (a NUL, an unpaired surrogate: the document's description says so), which the invalid requests send.
      return fc.string({
        minLength: schema.minLength ?? 0,
        maxLength: Math.max(schema.minLength ?? 0, 12),
        unit: fc.oneof(
          { weight: 4, arbitrary: fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 1 }) },
          { weight: 1, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }) }
        )
      }).filter(storable).chain((s) => fc.constantFrom(s, s.repeat(200)))
    case "integer":
      return fc.integer({ min: schema.minimum ?? Number.MIN_SAFE_INTEGER, max: schema.maximum ?? Number.MAX_SAFE_INTEGER })
    case "number":
      return fc.double({ min: schema.minimum ?? -1e300, max: schema.maximum ?? 1e300, noNaN: true, noDefaultInfinity: true })
    case "boolean":
      return fc.boolean()
    case "null":
      return fc.constant(null)
    case "array":
      return fc.array(arbitrary(components, schema.items, depth + 1), { minLength: schema.minItems ?? 0, maxLength: 3 })
    case "object": {
      const properties: Node = schema.properties ?? {}
      const required = new Set<string>(schema.required ?? [])
      const record: { [key: string]: fc.Arbitrary<Json> } = {}
      for (const [key, sub] of Object.entries(properties)) record[key] = arbitrary(components, sub as Node, depth + 1)
      return fc.record(record, { requiredKeys: [...required].filter((k) => k in record) }) as fc.Arbitrary<Json>
    }
    default:
      return anyJson
  }
}

/** A value of another JSON type than `schema` says. */
const wrongType = (schema: Node | undefined): fc.Arbitrary<Json> => {
  const type = schema?.type
  const pool: Array<fc.Arbitrary<Json>> = [fc.constant(null), fc.boolean(), fc.integer(), fc.string(), fc.constant([]), fc.constant({})]
  // Text no field takes.
  if (type === "string") pool.push(fc.constantFrom("a\u0000b", "\ud800"))
  const of = (v: Json) =>
    v === null ? "null" : Array.isArray(v) ? "array" : typeof v === "number" ? (Number.isInteger(v) ? "integer" : "number") : typeof v
  return fc.oneof(...pool).filter((v) =>
    type === undefined ? v !== null : (of(v) !== type || typeof v === "string" && !storable(v)) &&
      !(type === "number" && of(v) === "integer")
  )
}

const resolve = (components: Node, schema: Node | undefined): Node | undefined =>
  schema !== undefined && typeof schema.$ref === "string" ? resolve(components, components[schema.$ref.replace("#/components/schemas/", "")]) : schema

const UNKNOWN_FIELD = "unknown_field_z"

/** Whether `schema` is a plain struct (declared fields only), which takes an unknown field (and ignores it). */
const isStruct = (schema: Node | undefined) => schema?.properties !== undefined && schema.additionalProperties === undefined

const isRecord = (v: Json): v is { readonly [key: string]: Json } => Predicate.isObject(v) && !Array.isArray(v)

/** An unknown field in the body and in each struct directly inside it (an envelope's resource). */
const withUnknownFields = (components: Node, node: Node | undefined) => (v: Json): Json =>
  isRecord(v) && isStruct(node)
    ? Object.fromEntries([
      ...Object.entries(v).map(([key, inner]) =>
        [key, isRecord(inner) && isStruct(resolve(components, node!.properties[key])) ? { ...inner, [UNKNOWN_FIELD]: 1 } : inner]
      ),
      [UNKNOWN_FIELD, 1]
    ])
    : v

/** Mutated bodies: the whole body of a wrong type, a required field dropped or retyped, or unknown fields added (valid). */
const mutatedBody = (components: Node, schema: Node | undefined, valid: fc.Arbitrary<Json>): fc.Arbitrary<Json> => {
  const node = resolve(components, schema)
  const mutations: Array<fc.Arbitrary<Json>> = [wrongType(node), valid.map(withUnknownFields(components, node))]
  const fields = Object.keys(node?.properties ?? {})
  if (node?.type === "object" && fields.length > 0) {
    mutations.push(fc.tuple(valid, fc.constantFrom(...fields)).map(([v, key]) => {
      const copy = { ...(v as { [key: string]: Json }) }
      delete copy[key]
      return copy
    }))
    mutations.push(fc.tuple(valid, fc.constantFrom(...fields)).chain(([v, key]) =>
      wrongType(resolve(components, node.properties[key])).map((bad) => ({ ...(v as { [key: string]: Json }), [key]: bad }))
    ))
  }
  return fc.oneof(...mutations)
}

/**
 * Path segments: plausible ids, strangers, and some that are not ids at all. Never only dots: `fetch` resolves
 * `.` and `..` before sending, so the request would go to another path.
 */
const pathValue = fc.oneof(
  fc.stringMatching(/^[a-z0-9_-]{1,24}$/),
  fc.constantFrom("0", "-1", "00000000-0000-0000-0000-000000000000", "%20", "a.b", "v24.0"),
  fc.string({ minLength: 1, maxLength: 8 }).filter((s) => !/^\.+$/.test(s))
)

const asQuery = (value: Json): string => typeof value === "string" ? value : JSON.stringify(value)

/** Every `id` or `*_id` string of an answer, at any depth. */
const collectIds = (value: unknown): Array<string> =>
  Array.isArray(value)
    ? value.flatMap(collectIds)
    : Predicate.isObject(value)
    ? Object.entries(value).flatMap(([key, v]) =>
      typeof v === "string" && (key === "id" || key.endsWith("_id")) ? [v] : collectIds(v)
    )
    : []

const requests = (components: Node, op: Operation): fc.Arbitrary<Request> => {
  const validBody = arbitrary(components, op.body)
  const queryParams = op.parameters.filter((p) => p.in === "query")
  // What the schema says, or (`loose`) sometimes any text; optional parameters are left out half the time.
  const query = (loose: boolean) =>
    fc.tuple(...queryParams.map((p) => {
      const valid = arbitrary(components, p.schema)
      const value = loose ? fc.oneof({ weight: 3, arbitrary: valid }, { weight: 1, arbitrary: fc.string({ maxLength: 6 }) }) : valid
      const pair = value.map((v) => [p.name, asQuery(v)] as const)
      return p.required === true ? pair : fc.option(pair, { nil: undefined, freq: 2 })
    })).map((pairs) => pairs.filter(Predicate.isNotUndefined))
  const pathParams = op.parameters.filter((p) => p.in === "path")
  // Half the ids are ones the host handed out so far, picked when the request is sent (the pool grows as it goes);
  // the API version is mostly a real one, so requests get past it.
  const path = fc.tuple(...pathParams.map((p) =>
    p.name === "version"
      ? fc.oneof(fc.constant("v24.0"), pathValue).map((v) => () => v)
      : fc.oneof(pathValue.map((v) => () => v), fc.nat().map((n) => () => seenIds[n % seenIds.length]!))
  )).map((values) => () => pathParams.reduce((path, p, i) => path.replace(`{${p.name}}`, encodeURIComponent(values[i]!())), op.path))
  const valid = fc.record({ kind: fc.constant("valid"), query: query(false), body: op.body === undefined ? fc.constant(undefined) : validBody })
  const invalid = op.body === undefined
    ? fc.record({ kind: fc.constant("loose query"), query: query(true), body: fc.constant(undefined) })
    : fc.oneof(
      { weight: 4, arbitrary: fc.record({ kind: fc.constant("mutated body"), query: query(true), body: mutatedBody(components, op.body, validBody) }) },
      {
        weight: 1,
        arbitrary: fc.record({ kind: fc.constant("unparsable body"), query: query(false), body: fc.constant(undefined), raw: fc.constantFrom("", "{", "[1,", "nul", "{\"a\":}") })
      }
    )
  // One request in six goes without a key.
  return fc.record({ path, parts: fc.oneof(valid, invalid), withKey: fc.nat(5).map((n) => n !== 0) })
    .map(({ parts, path, withKey }) => ({
      kind: parts.kind,
      path,
      query: parts.query,
      body: parts.body as Json | undefined,
      raw: "raw" in parts ? parts.raw : undefined,
      withKey
    }))
}

const operations = (document: Node): ReadonlyArray<Operation> =>
  Object.entries(document.paths as Node).flatMap(([path, item]) =>
    Object.entries(item as Node).map(([method, op]) => ({
      method: method.toUpperCase(),
      path,
      id: op.operationId ?? `${method} ${path}`,
      summary: op.summary,
      description: op.description,
      parameters: op.parameters ?? [],
      body: op.requestBody?.content?.["application/json"]?.schema,
      responses: op.responses ?? {}
    }))
  )

interface Failure {
  readonly operation: string
  readonly why: string
  readonly request: string
  readonly answer: string
}

describe("the served /openapi.json", () => {
  it("names every operation and offers the API key to /docs", async () => {
    const document = await (await fetch(`${host.url}/openapi.json`)).json() as Node
    assert.deepStrictEqual(document.components.securitySchemes.apiKey, { type: "apiKey", name: "X-API-Key", in: "header" })
    const ops = operations(document)
    assert.deepStrictEqual(ops.filter((op) => op.summary === undefined).map((op) => op.id), [])
    assert.deepStrictEqual(ops.filter((op) => (op.description ?? "").length < 20).map((op) => op.id), [])
    for (const path of ["/healthz", "/readyz", "/platform/v1/msg/upstream/webhook", "/proxy/{phone_number_id}/messages"]) {
      assert.isDefined(document.paths[path], path)
    }
  })

  it("shows an example its own schema accepts on every JSON request body and answer", async () => {
    const document = await (await fetch(`${host.url}/openapi.json`)).json() as Node
    const failures: Array<string> = []
    for (const [path, item] of Object.entries(document.paths as Node)) {
      for (const [method, op] of Object.entries(item as Node)) {
        const contents: Array<[string, Node | undefined]> = [
          ["request", op.requestBody?.content?.["application/json"]],
          ...Object.entries((op.responses ?? {}) as Record<string, Node>).map(
            ([status, r]): [string, Node | undefined] => [status, r.content?.["application/json"]]
          )
        ]
        for (const [where, content] of contents) {
          if (content?.schema === undefined) continue
          const at = `${method.toUpperCase()} ${path} ${where}`
          if (!("example" in content)) {
            failures.push(`${at}: no example`)
            continue
          }
          const result = new Validator({ ...content.schema, components: document.components } as JsonSchema, "2020-12", false)
            .validate(content.example)
          if (!result.valid) failures.push(`${at}: ${result.errors.map((e) => e.error).join("; ")}`)
        }
      }
    }
    assert.deepStrictEqual(failures, [])
  })

  it("documents every answer of every operation, for valid and invalid requests", async () => {
    const document = await (await againIfReset(() => fetch(`${host.url}/openapi.json`))).json() as Node
    const components: Node = document.components?.schemas ?? {}
    const validators = new Map<Node, Validator>()
    const validate = (schema: Node, value: unknown) => {
      let validator = validators.get(schema)
      if (validator === undefined) {
        // `$ref`s point into `#/components`: the schema is checked as the root of a document holding them.
        validator = new Validator({ ...schema, components: document.components } as JsonSchema, "2020-12", false)
        validators.set(schema, validator)
      }
      return validator.validate(value)
    }
    const failures: Array<Failure> = []
    const ops = operations(document)
    assert.isAbove(ops.length, 80)
    assert.isAtMost(ops.length, MAX_OPERATIONS, "the budget counts on at most MAX_OPERATIONS operations")
    for (const [index, op] of ops.entries()) {
      const samples = fc.sample(requests(components, op), { seed: SEED + index, numRuns: RUNS })
      for (const request of samples) {
        const search = new URLSearchParams(request.query as Array<[string, string]>).toString()
        const target = `${request.path()}${search.length > 0 ? `?${search}` : ""}`
        const send = () =>
          host.request(op.method, target, {
            ...(request.body !== undefined ? { body: request.body } : {}),
            ...(request.raw !== undefined ? { raw: request.raw, headers: { "content-type": "application/json" } } : {}),
            key: request.withKey ? host.key : null,
            signal: AbortSignal.timeout(REQUEST_LIMIT_MS)
          })
        const sent = await againIfReset(send).catch((error: unknown) => ({ error }))
        const described = `${request.kind}${request.withKey ? "" : ", no key"}: ${op.method} ${target.slice(0, 500)} ${request.raw ?? JSON.stringify(request.body)?.slice(0, 500) ?? ""}`
        if ("error" in sent) {
          failures.push({ operation: `${op.method} ${op.path} (${op.id})`, why: `no answer: ${String((sent.error as Error).cause ?? sent.error)}`, request: described, answer: "" })
          continue
        }
        const answer = sent
        const fail = (why: string) =>
          failures.push({
            operation: `${op.method} ${op.path} (${op.id})`,
            why,
            request: described,
            answer: `${answer.status} ${answer.text.slice(0, 300)}`
          })
        if (answer.status < 300) seenIds.push(...collectIds(answer.body))
        // A request the document accepts must not be refused for one of its parameters (the document would be wider
        // than the server); its ids and body may still be refused (unknown, or a rule a JSON Schema cannot say).
        const refusedParameter = (answer.body?.details as ReadonlyArray<{ readonly path: string }> | undefined)
          ?.find((d) => op.parameters.some((p) => p.in === "query" && p.name === d.path))
        if (request.kind === "valid" && request.withKey && refusedParameter !== undefined) {
          fail(`schema-compliant parameter ${refusedParameter.path} refused`)
        }
        // Request bodies take unknown fields (the document's objects are open): none may be refused for one.
        if (answer.text.includes(UNKNOWN_FIELD)) fail("unknown body field refused")
        const documented = op.responses[String(answer.status)] ?? op.responses["default"]
        if (answer.status >= 500) fail(`server error ${answer.status}`)
        else if (documented === undefined) fail(`undocumented status ${answer.status}`)
        else {
          const schema = documented.content?.["application/json"]?.schema
          if (schema !== undefined) {
            const result = validate(schema, answer.body)
            if (!result.valid) {
              fail(`body breaks the ${answer.status} schema: ${result.errors.slice(-2).map((e) => `${e.instanceLocation} ${e.error}`).join("; ")}`)
            }
          } else if (documented.content === undefined && answer.text.length > 0) fail(`${answer.status} documents no body, got one`)
        }
      }
    }
    // One line per (operation, why): the first request that showed it.
    const unique = [...new Map(failures.map((f) => [`${f.operation} ${f.why.replace(/:.*/, "")}`, f])).values()]
    assert.deepStrictEqual(
      unique.map((f) => `${f.operation}: ${f.why}\n    request: ${f.request}\n    answer: ${f.answer}`),
      []
    )
    // About 170 operations × 24 requests: 20-30 s on a shared 2-core machine.
  }, BUDGET_MS)
})
