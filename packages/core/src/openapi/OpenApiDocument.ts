/**
 * What the generated document cannot say by itself, added to it (`OpenApi.annotations({ transform })` of the
 * contract):
 *
 * - The host's routes served outside the contract's groups: liveness and readiness, the upstream webhook (the
 *   network calls it, signed, not with a key) and the proxy's paths without the version segment. Their handlers are
 *   raw routes of the host (`Host.ts`, `ingestion/Routes.ts`, `proxy/Routes.ts`), so the document is their only
 *   description; `/openapi.json` and `/docs` show them next to the rest.
 * - The proxy's errors (`messaging/ProxyErrors.ts`) on each of its operations, at each status, beside the contract's.
 * - Request bodies take unknown fields (decoding ignores them), so their objects do not say
 *   `additionalProperties: false`; answers never carry fields beyond their schema, so theirs keep it.
 * - An example on every JSON request body (`RequestExamples.ts`: written to work as sent) and answer
 *   (`OpenApiExamples.ts`).
 */

import { PROXY_ERROR_STATUSES, proxyErrorJsonSchema } from "../network/NetworkErrors.ts"
import { withExamples } from "./OpenApiExamples.ts"
import { requestExamples } from "../http/RequestExamples.ts"

type Spec = Record<string, any>

const ErrorBody = {
  type: "object",
  properties: {
    error: { type: "string" },
    code: { type: "string" },
    details: {
      type: "array",
      items: {
        type: "object",
        properties: { path: { type: "string" }, message: { type: "string" } },
        required: ["path", "message"]
      }
    }
  },
  required: ["error"]
}

const error = (description: string) => ({ description, content: { "application/json": { schema: ErrorBody } } })

/**
 * What the host answers before any route: a query value or path segment it cannot store, headers over Node's limit,
 * a request that does not arrive in time.
 */
const refusedBeforeRoutes = {
  "422": error("A query value or path segment with a NUL character or an unpaired surrogate, named"),
  "408": error("The request's headers and body did not arrive in time"),
  "431": error("The request line and headers are over the limit")
}

const status = (value: string) => ({
  type: "object",
  properties: { status: { type: "string", enum: [value] } },
  required: ["status"]
})

const health = {
  "/healthz": {
    get: {
      tags: ["Health"],
      operationId: "health.live",
      summary: "Liveness",
      description: "Answers as soon as the process does; says nothing of the database.",
      security: [],
      responses: {
        "200": { description: "The process answers", content: { "application/json": { schema: status("ok"), example: { status: "ok" } } } },
        ...refusedBeforeRoutes
      }
    }
  },
  "/readyz": {
    get: {
      tags: ["Health"],
      operationId: "health.ready",
      summary: "Readiness",
      description: "200 once the host's services and workers are built (and, under `npm start`, the default project's " +
        "bootstrap is done) and the database answers within 2 seconds; 503 with `Retry-After: 1` until then.",
      security: [],
      responses: {
        "200": { description: "Ready", content: { "application/json": { schema: status("ready"), example: { status: "ready" } } } },
        "503": error("Not ready yet (`Not ready: starting`) or the database does not answer"),
        ...refusedBeforeRoutes
      }
    }
  }
}

const WEBHOOK = "/platform/v1/msg/upstream/webhook"

const configParameter = {
  name: "msg_config_id",
  in: "path",
  required: true,
  schema: { type: "string" },
  description: "The messaging configuration whose own app (and verify token, app secret) the network calls"
}

const handshake = (withConfig: boolean) => ({
  tags: ["Upstream webhook"],
  operationId: withConfig ? "upstreamWebhook.handshakeForConfig" : "upstreamWebhook.handshake",
  summary: withConfig ? "Webhook verification handshake (a customer's own app)" : "Webhook verification handshake",
  description: "The network's subscription check: with `hub.mode=subscribe` and the verify token, answers " +
    "`hub.challenge` as `text/plain`; anything else answers 403.",
  security: [],
  parameters: [
    ...(withConfig ? [configParameter] : []),
    { name: "hub.mode", in: "query", required: false, schema: { type: "string" } },
    { name: "hub.verify_token", in: "query", required: false, schema: { type: "string" } },
    { name: "hub.challenge", in: "query", required: false, schema: { type: "string" } }
  ],
  responses: {
    "200": { description: "The challenge, unchanged", content: { "text/plain": { schema: { type: "string" } } } },
    "403": error("Not a subscription request, or the verify token does not match"),
    ...refusedBeforeRoutes
  }
})

const receive = (withConfig: boolean) => ({
  tags: ["Upstream webhook"],
  operationId: withConfig ? "upstreamWebhook.receiveForConfig" : "upstreamWebhook.receive",
  summary: withConfig ? "Receive the network's webhook (a customer's own app)" : "Receive the network's webhook",
  description: "The network's notifications (messages, statuses, template and account updates), signed with the " +
    "app secret in `X-Hub-Signature-256`. Answers 200 with no body once the raw bytes are stored; they are " +
    "processed afterwards.",
  security: [],
  parameters: [
    ...(withConfig ? [configParameter] : []),
    {
      name: "X-Hub-Signature-256",
      in: "header",
      required: false,
      schema: { type: "string" },
      description: "`sha256=` and the HMAC-SHA256 of the raw body under the app secret"
    }
  ],
  requestBody: { required: true, content: { "application/json": { schema: {} } } },
  responses: {
    "200": { description: "Stored" },
    "400": error("The body could not be read"),
    "401": error("The signature is missing or does not match"),
    "404": error("No such messaging configuration"),
    "413": error("The body is over the webhook's limit"),
    ...refusedBeforeRoutes
  }
})

const webhook = {
  [WEBHOOK]: { get: handshake(false), post: receive(false) },
  [`${WEBHOOK}/{msg_config_id}`]: { get: handshake(true), post: receive(true) }
}

/** The MCP tool server (decisions 4.12): the key as for the API, JSON-RPC over streamable HTTP. */
const mcp = {
  "/mcp": {
    post: {
      tags: ["MCP"],
      operationId: "mcp.call",
      summary: "MCP tool server (streamable HTTP)",
      description: "The Model Context Protocol over streamable HTTP (protocol versions 2025-11-25, 2025-06-18, " +
        "2025-03-26): an agent's MCP client lists the `msg_*` and Platform tools and calls them with the project's " +
        "key, checked before any session starts. Start with `initialize`; later requests carry the answer's " +
        "`Mcp-Session-Id` header. `Accept` must name `application/json` and `text/event-stream`.",
      parameters: [
        { name: "Mcp-Session-Id", in: "header", required: false, schema: { type: "string" }, description: "The session `initialize` opened" },
        {
          name: "Accept",
          in: "header",
          required: true,
          schema: { type: "string", example: "application/json, text/event-stream" },
          description: "Both `application/json` and `text/event-stream` (406 otherwise)"
        }
      ],
      requestBody: {
        required: true,
        content: {
          "application/json": {
            schema: {
              type: "object",
              properties: {
                jsonrpc: { type: "string", enum: ["2.0"] },
                id: { anyOf: [{ type: "string" }, { type: "integer" }] },
                method: { type: "string", description: "`initialize`, `tools/list`, `tools/call`, ..." },
                params: { type: "object" }
              },
              required: ["jsonrpc", "method"]
            },
            example: {
              jsonrpc: "2.0",
              id: 1,
              method: "initialize",
              params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "my-agent", version: "1.0.0" } }
            }
          }
        }
      },
      responses: {
        "200": {
          description: "The JSON-RPC answer, as JSON or as an event stream",
          content: { "application/json": { schema: { type: "object" } }, "text/event-stream": { schema: { type: "string" } } }
        },
        "202": { description: "A notification or answer accepted" },
        "400": error("Not a JSON-RPC request, or no session"),
        "401": error("A missing or wrong API key"),
        "404": error("The session is unknown or ended"),
        "406": error("`Accept` does not name both `application/json` and `text/event-stream`"),
        ...refusedBeforeRoutes
      }
    },
    delete: {
      tags: ["MCP"],
      operationId: "mcp.endSession",
      summary: "End an MCP session",
      description: "Ends the session named by `Mcp-Session-Id`.",
      parameters: [{ name: "Mcp-Session-Id", in: "header", required: true, schema: { type: "string" } }],
      responses: {
        "200": { description: "Ended" },
        "400": error("No `Mcp-Session-Id`"),
        "401": error("A missing or wrong API key"),
        "404": error("The session is unknown or ended"),
        ...refusedBeforeRoutes
      }
    }
  }
}

/** Every documented `/proxy/{version}/...` operation again without the segment: the network's default version. */
const unversionedProxy = (paths: Spec): Spec =>
  Object.fromEntries(
    Object.entries(paths)
      .filter(([path]) => path.startsWith("/proxy/{version}/"))
      .map(([path, item]) => [
        path.replace("/{version}", ""),
        Object.fromEntries(Object.entries(item as Spec).map(([method, op]) => [method, {
          ...op,
          operationId: `${op.operationId}Unversioned`,
          summary: `${op.summary} (default API version)`,
          parameters: (op.parameters ?? []).filter((p: Spec) => !(p.in === "path" && p.name === "version"))
        }]))
      ])
  )

/** Each operation of `paths`, changed by `f` (with its path). */
const mapOperations = (paths: Spec, f: (path: string, op: Spec) => Spec): Spec =>
  Object.fromEntries(Object.entries(paths).map(([path, item]) => [
    path,
    Object.fromEntries(Object.entries(item as Spec).map(([method, op]) => [method, f(path, op)]))
  ]))

/** A request body's schema without `additionalProperties: false` anywhere in it (unknown fields are ignored). */
const openObjects = (schema: unknown): unknown =>
  Array.isArray(schema)
    ? schema.map(openObjects)
    : typeof schema === "object" && schema !== null
    ? Object.fromEntries(
      Object.entries(schema).filter(([key, value]) => !(key === "additionalProperties" && value === false))
        .map(([key, value]) => [key, openObjects(value)])
    )
    : schema

const withOpenRequestBodies = (paths: Spec): Spec =>
  mapOperations(paths, (_, op) => op.requestBody === undefined ? op : { ...op, requestBody: openObjects(op.requestBody) })

const PROXY_ERROR = { $ref: "#/components/schemas/ProxyError" }

/** A proxy operation's responses with the proxy's errors: alone at a status, or beside the contract's error there. */
const withProxyErrors = (responses: Spec): Spec => {
  const merged: Spec = { ...responses }
  for (const [status, description] of PROXY_ERROR_STATUSES) {
    const existing = responses[status]?.content?.["application/json"]?.schema
    merged[status] = {
      description: existing === undefined ? description : `${description} | ${responses[status].description}`,
      content: { "application/json": { schema: existing === undefined ? PROXY_ERROR : { anyOf: [PROXY_ERROR, existing] } } }
    }
  }
  return merged
}

/**
 * `schema` without the safe-integer bounds Schema's `Int` check writes (`minimum: -9007199254740991`,
 * `maximum: 9007199254740991`): they say "an integer JavaScript holds exactly", which `type: integer` already says
 * to a reader, and documentation renderers showed the bounds instead of the type. Real bounds stay.
 */
const withoutSafeIntegerBounds = (schema: unknown): unknown =>
  Array.isArray(schema)
    ? schema.map(withoutSafeIntegerBounds)
    : typeof schema === "object" && schema !== null
    ? Object.fromEntries(
      Object.entries(schema)
        .filter(([key, value]) =>
          !(key === "minimum" && value === Number.MIN_SAFE_INTEGER) && !(key === "maximum" && value === Number.MAX_SAFE_INTEGER)
        )
        .map(([key, value]) => [key, withoutSafeIntegerBounds(value)])
    )
    : schema

/**
 * `schema` with `Schema.Number`'s `anyOf [number, "Infinity" | "-Infinity" | "NaN"]` as plain `number`: the service
 * answers finite numbers only, and refuses the three strings wherever a request takes a number (ranges are checked).
 */
const withFiniteNumbers = (schema: unknown): unknown => {
  if (Array.isArray(schema)) return schema.map(withFiniteNumbers)
  if (typeof schema !== "object" || schema === null) return schema
  const node = schema as Spec
  const members = node.anyOf
  const nonFinite = (m: Spec) => m?.type === "string" && JSON.stringify(m.enum) === JSON.stringify(["Infinity", "-Infinity", "NaN"])
  if (Array.isArray(members) && members.some((m: Spec) => m?.type === "number") && members.some(nonFinite)) {
    const { anyOf: _, ...rest } = node
    const kept = members.filter((m: Spec) => !nonFinite(m))
    const own = withFiniteNumbers(rest) as Spec
    return kept.length === 1 ? { ...kept[0], ...own } : { ...own, anyOf: kept.map(withFiniteNumbers) }
  }
  return Object.fromEntries(Object.entries(node).map(([key, value]) => [key, withFiniteNumbers(value)]))
}

/**
 * Request envelopes the handlers require though the payload schema leaves them optional (it decodes first, so the
 * handler can answer 400 `missing_envelope` in its own words): said in the document as the server enforces them.
 */
const REQUIRED_ENVELOPES: Readonly<Record<string, ReadonlyArray<string>>> = {
  "workflows.update": ["workflow", "flow"],
  "executions.update": ["workflow_execution"]
}

const withRequiredEnvelope = (op: Spec): Spec => {
  const envelopes = REQUIRED_ENVELOPES[String(op.operationId)]
  const json = op.requestBody?.content?.["application/json"]
  if (envelopes === undefined || json?.schema === undefined) return op
  const schema = envelopes.length === 1
    ? { ...json.schema, required: [...envelopes] }
    : { ...json.schema, anyOf: envelopes.map((name) => ({ required: [name] })) }
  return { ...op, requestBody: { ...op.requestBody, content: { ...op.requestBody.content, "application/json": { ...json, schema } } } }
}

/** `op` with its written request example (`RequestExamples.ts`), when the table has one. */
const withRequestExample = (op: Spec, examples: Readonly<Record<string, unknown>>): Spec => {
  const example = examples[String(op.operationId ?? "").replace(/Unversioned$/, "")]
  const json = op.requestBody?.content?.["application/json"]
  if (example === undefined || json === undefined) return op
  return { ...op, requestBody: { ...op.requestBody, content: { ...op.requestBody.content, "application/json": { ...json, example } } } }
}

/**
 * The generated document completed: the host's other routes joined, the proxy's errors on its operations, request
 * bodies open to unknown fields, examples on every JSON body.
 */
export const completeDocument = (generated: Spec): Spec => {
  const spec = withFiniteNumbers(withoutSafeIntegerBounds(generated)) as Spec
  const components = {
    ...spec.components,
    schemas: { ...spec.components?.schemas, ProxyError: withoutSafeIntegerBounds(proxyErrorJsonSchema) }
  }
  // The document is built when the host starts (a synchronous transform, outside any Effect): the one example dated
  // relative to the present (a schedule, days ahead) is dated then.
  const examples = requestExamples(Date.now())
  return {
    ...spec,
    paths: mapOperations(
      withOpenRequestBodies({ ...spec.paths, ...unversionedProxy(spec.paths ?? {}), ...webhook, ...mcp, ...health }),
      (path, op) =>
        withExamples(
          withRequestExample(
            withRequiredEnvelope(path.startsWith("/proxy/") ? { ...op, responses: withProxyErrors(op.responses ?? {}) } : op),
            examples
          ),
          components.schemas
        )
    ),
    components,
    tags: [
      ...(spec.tags ?? []),
      { name: "Health", description: "Liveness and readiness, for orchestrators; no key" },
      { name: "MCP", description: "The tool server agents connect to (`{mcp_url}`), with the project's key" },
      {
        name: "Upstream webhook",
        description: "Where the messaging network delivers its webhooks; signed by the network, no key"
      }
    ]
  }
}
