/**
 * Every request example of the served `/openapi.json` works as written (issue 29 §3): each operation's JSON body
 * example is sent to a host set up as `npm start` sets one up (the default project with the simulated sandbox number
 * connected) and must answer one of the operation's documented success statuses. What the reader would have made
 * first is made here: a path's `{id}` is a resource created for it, and an example's placeholder UUID (`UUID`, the
 * value the document's examples use for ids of resources the reader creates) becomes that resource's id. Nothing
 * else of the example is changed.
 */
import { Ids, MessageConfigs } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Exit, Layer, Option, Scope } from "effect"
import { type AddressInfo } from "node:net"
import { createServer, type Server } from "node:http"
import { afterAll, assert, beforeAll, describe, it } from "vitest"
import { eventually, type MessagingHost, startMessagingHost } from "./messaging.support.ts"

/** The id the document's examples put where the reader names a resource of their own. */
const UUID = "0193f1c2-7b4e-7a10-9c3d-5e6f7a8b9c0d"

let host: MessagingHost
let pnid: string
let waba: string
let document: any
let close: () => Promise<void> = () => Promise.resolve()

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    // The examples' addresses are example.com's; this machine may resolve no name, and the check's rules have tests
    // of their own (`webhooks.http.test.ts`).
    host = yield* startMessagingHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer), {
      PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS: "true"
    })
    // As `npm start` does: the simulated number connected to the default project, its webhooks reaching ingestion.
    const config = Option.getOrThrow(yield* Context.get(host.context, MessageConfigs).bootstrap(host.projectA))
    pnid = config.phone_number_id
    waba = config.business_account_id
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
  document = (await host.request("GET", "/openapi.json", { key: null })).body
}, 60_000)
afterAll(() => close())

const ok = <R extends { readonly status: number; readonly text: string }>(res: R, what: string): R => {
  assert.isBelow(res.status, 300, `${what}: ${res.status} ${res.text}`)
  return res
}

const post = async (path: string, body: unknown) => ok(await host.request("POST", path, { body }), `POST ${path}`).body

const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({ id, position: { x: 0, y: 0 }, data: { node_type, config } })

/** A workflow that greets and waits for the answer. */
const workflow = async (status: "draft" | "active") =>
  (await post("/platform/v1/workflows", {
    workflow: {
      name: `Examples ${crypto.randomUUID()}`,
      status,
      definition: {
        nodes: [
          node("start", "start"),
          node("hi", "send_text", { message: "Hi" }),
          node("ask", "wait_for_response", { save_response_to: "answer", has_timeout: true, timeout_seconds: 600 })
        ],
        edges: [{ source: "start", target: "hi" }, { source: "hi", target: "ask" }]
      }
    }
  })).data.id as string

/** A viewer embed of one workflow: the request goes with its token, on the workflow. */
const viewerOf = async (workflowId: string, access: "view" | "edit") => {
  const embed = await post("/platform/v1/workflow_embeds", { workflow_embed: { scope_type: "workflow", scope_id: workflowId, access } })
  return { path: { id: workflowId }, key: null, headers: { "x-viewer-token": embed.data.token } }
}

/** A contact of the sandbox number writes in (its conversation opens). */
const contactWritesIn = async (from: string) => {
  await post("/sandbox/inbound", { phone_number_id: pnid, from, message: { type: "text", text: { body: "hello" } } })
  let id: string | undefined
  await eventually("the conversation opens", async () => {
    const res = await host.request("GET", `/platform/v1/msg/conversations?phone_number=${from}`)
    id = res.body?.data?.[0]?.id
    return id !== undefined
  })
  return id!
}

const waitingExecution = async () => {
  const from = `1555${Math.floor(1e6 + Math.random() * 8e6)}`
  await contactWritesIn(from)
  const ack = await post(`/platform/v1/workflows/${await workflow("active")}/executions`, {
    workflow_execution: { phone_number: `+${from}`, phone_number_id: pnid }
  })
  const id = ack.data.id as string
  await eventually("the run waits", async () => (await host.request("GET", `/platform/v1/workflow_executions/${id}`)).body.data.status === "waiting")
  return id
}

const approvedTemplate = async () => {
  const name = `example_${Math.floor(Math.random() * 1e9)}`
  const created = await host.request("POST", `/proxy/${waba}/message_templates`, {
    body: { name, category: "MARKETING", language: "en_US", components: [{ type: "BODY", text: "Hello!" }] }
  })
  ok(created, "template")
  await Effect.runPromise(host.simulator.setTemplateStatus(created.body.id, "APPROVED"))
  let id: string | undefined
  await eventually("the template is mirrored", async () => {
    id = (await host.request("GET", `/platform/v1/msg/templates?name=${name}&status=approved`)).body?.data?.[0]?.id
    return id !== undefined
  })
  return id!
}

const customer = async () => (await post("/platform/v1/customers", { customer: { name: `C ${crypto.randomUUID()}` } })).data.id as string

interface Prepared {
  /** Path parameters beyond the sandbox number's (`phone_number_id`, `business_account_id`, `version`). */
  readonly path?: Record<string, string>
  /** The id that stands for the placeholder UUID in the body. */
  readonly uuid?: string
  readonly headers?: Record<string, string>
  readonly key?: string | null
  /** Done before the example is sent (the state the operation starts from). */
  readonly before?: () => Promise<void>
  /**
   * Where `https://example.com` is served from for an example the host fetches at once (this machine reaches no
   * outside name): the example's path is kept.
   */
  readonly origin?: string
}

/** What each operation needs made first. */
/** A workflow and a revision of it stored beside its current definition (to restore, migrate to or roll out). */
const stagedRevision = async () => {
  const id = await workflow("draft")
  const staged = await post(`/platform/v1/workflows/${id}/revisions`, {
    revision: { definition: { nodes: [node("start", "start"), node("bye", "send_text", { message: "Bye" })], edges: [{ source: "start", target: "bye" }] } }
  })
  return { id, revision_id: staged.data.id as string }
}

const prepare: Record<string, () => Promise<Prepared>> = {
  "workflows.update": async () => ({ path: { id: await workflow("draft") } }),
  "triggers.create": async () => ({ path: { id: await workflow("draft") } }),
  "triggers.replace": async () => ({ path: { id: await workflow("draft") } }),
  "triggers.update": async () => {
    const id = await workflow("draft")
    const trigger = await post(`/platform/v1/workflows/${id}/triggers`, { trigger: { trigger_type: "api_call" } })
    return { path: { id: trigger.data.id } }
  },
  "flows.update": async () => ({ path: { id: await workflow("draft") } }),
  "workflowLifecycle.saveRevision": async () => ({ path: { id: await workflow("draft") } }),
  "workflowLifecycle.restoreRevision": async () => ({ path: await stagedRevision() }),
  "workflowLifecycle.migrateRuns": async () => ({ path: await stagedRevision() }),
  "workflowLifecycle.startRollout": async () => {
    const { id, revision_id } = await stagedRevision()
    return { path: { id }, uuid: revision_id }
  },
  "workflowLifecycle.promoteRollout": async () => {
    const { id, revision_id } = await stagedRevision()
    ok(await host.request("PUT", `/platform/v1/workflows/${id}/rollout`, { body: { rollout: { revision_id, percent: 10 } } }), "rollout")
    return { path: { id } }
  },
  "executions.start": async () => {
    await contactWritesIn("15551234567")
    return { path: { id: await workflow("active") } }
  },
  "executions.update": async () => ({ path: { id: await waitingExecution() } }),
  "executions.resume": async () => ({ path: { id: await waitingExecution() } }),
  "eventDefinitions.update": async () => {
    const saved = await post("/platform/v1/event-definitions", { name: `order.${Math.floor(Math.random() * 1e9)}` })
    return { path: { id: saved.data.id } }
  },
  "phoneNumbers.connect": async () => ({
    // The sandbox number is connected at start: the example connects it again once it is released.
    before: async () => void ok(await host.request("DELETE", `/platform/v1/msg/phone_numbers/${pnid}`), "release")
  }),
  "phoneNumbers.connectToCustomer": async () => ({
    path: { id: await customer() },
    before: async () => void ok(await host.request("DELETE", `/platform/v1/msg/phone_numbers/${pnid}`), "release")
  }),
  "customers.update": async () => ({ path: { id: await customer() } }),
  // The connect examples before it connected the number again: its configuration is a new one.
  "msgConfigs.update": async () => ({ path: { id: (await host.request("GET", `/platform/v1/msg/phone_numbers/${pnid}`)).body.data.id } }),
  "msgMedia.ingest": async () => ({ origin: await mediaOrigin() }),
  "msgConversations.update": async () => ({ path: { id: await contactWritesIn(`1555${Math.floor(1e6 + Math.random() * 8e6)}`) } }),
  "functions.update": async () => ({ path: { id: await fn() } }),
  "functions.saveSecret": async () => ({ path: { id: await deployed(false) } }),
  "functionInvoke.invoke": async () => ({ path: { id: await deployed(true) }, key: null }),
  "webhooks.updateForNumber": async () => ({ path: { id: await webhook(true) } }),
  "webhooks.update": async () => ({ path: { id: await webhook(false) } }),
  "webhooks.test": async () => ({ path: { id: await webhook(false) } }),
  "setupLinks.create": async () => ({ path: { customer_id: await customer() } }),
  "setupLinks.update": async () => {
    const customerId = await customer()
    const link = await post(`/platform/v1/customers/${customerId}/setup_links`, { setup_link: {} })
    return { path: { customer_id: customerId, id: link.data.id } }
  },
  "inboxEmbeds.update": async () => {
    const embed = await post("/platform/v1/inbox_embeds", { inbox_embed: { scope_type: "project" } })
    return { path: { id: embed.data.id } }
  },
  "workflowEmbeds.create": async () => ({ uuid: await workflow("draft") }),
  "workflowEmbeds.update": async () => {
    const embed = await post("/platform/v1/workflow_embeds", { workflow_embed: { scope_type: "project" } })
    return { path: { id: embed.data.id } }
  },
  "viewer.validate": async () => viewerOf(await workflow("draft"), "view"),
  "viewer.save": async () => viewerOf(await workflow("draft"), "edit"),
  "viewer.testRun": async () => viewerOf(await workflow("active"), "edit"),
  "inbox.reply": async () => {
    const conversation = await contactWritesIn(`1555${Math.floor(1e6 + Math.random() * 8e6)}`)
    const embed = await post("/platform/v1/inbox_embeds", { inbox_embed: { scope_type: "project" } })
    await approvedTemplate()
    return { path: { id: conversation }, key: null, headers: { "x-inbox-token": embed.data.token } }
  },
  "msgBroadcasts.create": async () => ({ uuid: await approvedTemplate() }),
  "guardrails.setTimeZone": async () => ({ path: { phone_number: "+15550100999" } }),
  "msgBroadcasts.update": async () => ({ path: { id: await broadcast() } }),
  "msgBroadcasts.schedule": async () => {
    const id = await broadcast()
    await post(`/platform/v1/msg/broadcasts/${id}/recipients`, { recipients: [{ phone_number: "+15551234567" }] })
    return { path: { id } }
  },
  "proxy.send": async () => {
    // The contact wrote in first: a free-form text goes inside the 24-hour window only.
    await contactWritesIn("15551234567")
    return {}
  },
  // The header the operation documents as required.
  "mcp.call": async () => ({ headers: { accept: "application/json, text/event-stream" } }),
  "proxy.blockUsers": async () => {
    await contactWritesIn("15551234567")
    return {}
  },
  "proxy.blockUsersUnversioned": async () => {
    await contactWritesIn("15551234567")
    return {}
  },
  "proxy.updateFlowMetadata": async () => ({ path: { flow_id: await Effect.runPromise(host.simulator.createFlow(waba, { name: "Booking" })) } }),
  "proxy.updateFlowMetadataUnversioned": async () => ({ path: { flow_id: await Effect.runPromise(host.simulator.createFlow(waba, { name: "Booking" })) } }),
  "proxy.createTemplateUnversioned": async () => ({
    // The same example made the template once already (names are unique per business account).
    before: async () => void ok(await host.request("DELETE", `/proxy/${waba}/message_templates?name=order_shipped`), "delete the template")
  }),
  "msgBroadcasts.addRecipients": async () => ({ path: { id: await broadcast() } })
}

const fn = async (publicEndpoint = false) =>
  (await post("/platform/v1/functions", {
    function: {
      name: `f${Math.floor(Math.random() * 1e9)}`,
      code: "export default { async fetch() { return Response.json({ ok: true }) } }",
      ...(publicEndpoint ? { public_endpoint: true } : {})
    }
  })).data.id as string

/** A function, deployed (and public: invoked without a key). */
const deployed = async (publicEndpoint: boolean) => {
  const id = await fn(publicEndpoint)
  ok(await host.request("POST", `/platform/v1/functions/${id}/deploy`), "deploy")
  await eventually("deployed", async () => (await host.request("GET", `/platform/v1/functions/${id}`)).body.data.status === "deployed")
  return id
}

const webhook = async (forNumber: boolean) =>
  (await post(forNumber ? `/platform/v1/msg/phone_numbers/${pnid}/webhooks` : "/platform/v1/msg/webhooks", {
    msg_webhook: {
      url: "https://example.com/hooks/parley",
      secret_key: "a-long-random-signing-secret",
      events: [forNumber ? "msg.message.received" : "workflow.execution.failed"]
    }
  })).data.id as string

const broadcast = async () =>
  (await post("/platform/v1/msg/broadcasts", {
    msg_broadcast: { name: "Spring sale", phone_number_id: pnid, msg_template_id: await approvedTemplate() }
  })).data.id as string

/** Operations whose caller is not an API user: the network signs its webhooks with the app secret. */
const NOT_A_USERS_CALL = new Set(["upstreamWebhook.receive", "upstreamWebhook.receiveForConfig"])

interface Example {
  readonly id: string
  readonly method: string
  readonly path: string
  readonly body: unknown
  readonly success: ReadonlyArray<number>
}

const examples = (): ReadonlyArray<Example> =>
  Object.entries<any>(document.paths).flatMap(([path, item]) =>
    Object.entries<any>(item).flatMap(([method, op]) => {
      const json = op.requestBody?.content?.["application/json"]
      if (json === undefined || NOT_A_USERS_CALL.has(op.operationId)) return []
      return [{
        id: op.operationId,
        method: method.toUpperCase(),
        path,
        body: json.example,
        success: Object.keys(op.responses).map(Number).filter((s) => s >= 200 && s < 300)
      }]
    })
  )

const substitute = (value: unknown, prepared: Prepared): unknown => {
  let text = JSON.stringify(value)
  if (prepared.uuid !== undefined) text = text.replaceAll(UUID, prepared.uuid)
  if (prepared.origin !== undefined) text = text.replaceAll("https://example.com", prepared.origin)
  return JSON.parse(text)
}

/** A local stand-in for example.com serving a small PDF at any path. */
let mediaServer: Server | undefined
const mediaOrigin = async () => {
  mediaServer ??= await new Promise<Server>((resolve) => {
    const server = createServer((_, res) => {
      res.writeHead(200, { "content-type": "application/pdf" })
      res.end("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")
    })
    server.listen(0, "127.0.0.1", () => resolve(server))
  })
  const address = mediaServer.address() as AddressInfo
  return `http://127.0.0.1:${address.port}`
}
afterAll(() => mediaServer?.close())

describe("the request examples of /openapi.json", () => {
  it("every JSON request body has an example, and there are as many as operations that take one", () => {
    const all = examples()
    assert.isAtLeast(all.length, 40)
    for (const e of all) assert.isDefined(e.body, `${e.id} has no example`)
  })

  it("each works as written against a fresh host, answering a documented success status", async () => {
    const failures: Array<string> = []
    for (const e of examples()) {
      const prepared = await (prepare[e.id] ?? (async () => ({})))()
      await prepared.before?.()
      const params: Record<string, string> = { phone_number_id: pnid, business_account_id: waba, version: "v21.0", ...prepared.path }
      const path = e.path.replace(/\{(\w+)\}/g, (_, name: string) => params[name] ?? `{${name}}`)
      const res = await host.request(e.method, path, {
        body: substitute(e.body, prepared),
        ...(prepared.key !== undefined ? { key: prepared.key } : {}),
        ...(prepared.headers !== undefined ? { headers: prepared.headers } : {})
      })
      if (!e.success.includes(res.status)) failures.push(`${e.id} ${e.method} ${path} ${JSON.stringify(e.body)}: ${res.status} ${res.text.slice(0, 300)}`)
      // A number released for a connect example is back for the next example.
      if (e.id.startsWith("phoneNumbers.connect") && res.status >= 300) {
        await Effect.runPromise(Context.get(host.context, MessageConfigs).bootstrap(host.projectA))
      }
    }
    assert.deepStrictEqual(failures, [], failures.join("\n"))
  }, 120_000)
})


describe("the document says what the host serves", () => {
  it("renders integers as integers, without the safe-integer bounds", () => {
    const text = JSON.stringify(document)
    assert.notInclude(text, "9007199254740991")
    assert.strictEqual(document.paths["/platform/v1/workflows/{id}/executions"].get.parameters.length > 0, true)
  })

  it("names the proxy's real base", () => {
    const tag = document.tags.find((t: { name: string }) => t.name === "Messaging proxy")
    assert.notInclude(tag.description, "{proxy_url}")
    assert.include(tag.description, "/proxy")
    assert.include(tag.description, "/proxy/v24.0")
  })

  it("lists the spec's working routes: media upload, block users, template by id, forms, username, /mcp", async () => {
    const routes: ReadonlyArray<readonly [string, string]> = [
      ["post", "/proxy/{version}/{phone_number_id}/media"],
      ["post", "/proxy/{phone_number_id}/media"],
      ["get", "/proxy/{version}/{phone_number_id}/block_users"],
      ["post", "/proxy/{version}/{phone_number_id}/block_users"],
      ["delete", "/proxy/{version}/{phone_number_id}/block_users"],
      ["get", "/proxy/{version}/{business_account_id}/message_templates/{template_id}"],
      ["post", "/proxy/{version}/{flow_id}"],
      ["get", "/proxy/{version}/{phone_number_id}/username"],
      ["post", "/proxy/{version}/{phone_number_id}/username"],
      ["delete", "/proxy/{version}/{phone_number_id}/username"],
      ["get", "/proxy/{version}/{phone_number_id}/username_suggestions"],
      ["post", "/mcp"]
    ]
    for (const [method, path] of routes) assert.isDefined(document.paths[path]?.[method], `${method} ${path}`)
    // The upload is a multipart form with the network's fields.
    const upload = document.paths["/proxy/{version}/{phone_number_id}/media"].post.requestBody.content["multipart/form-data"]
    assert.deepStrictEqual(Object.keys(upload.schema.properties).sort(), ["file", "messaging_product", "type"])
    // And each answers through the proxy as documented (the template by id, the suggestions).
    const templates = await host.request("GET", `/proxy/${waba}/message_templates`)
    const id = templates.body.data[0]?.id
    if (id !== undefined) assert.strictEqual((await host.request("GET", `/proxy/v24.0/${waba}/message_templates/${id}`)).status, 200)
    assert.strictEqual((await host.request("GET", `/proxy/v24.0/${pnid}/username_suggestions`)).status, 200)
  })
})

describe("enums the server enforces are closed in the document", () => {
  /** The schema at `path` (property names, `[]` for items) of an operation's JSON body, `$ref`s and nullables resolved. */
  const bodyField = (operationId: string, path: ReadonlyArray<string>): any => {
    const components = document.components.schemas
    const resolve = (s: any): any => {
      let current = s
      while (current?.$ref !== undefined) current = components[current.$ref.split("/").pop()]
      if (Array.isArray(current?.anyOf)) return resolve(current.anyOf.find((m: any) => m.type !== "null"))
      if (Array.isArray(current?.allOf)) return Object.assign({}, ...current.allOf.map(resolve), { ...current, allOf: undefined })
      return current
    }
    for (const item of Object.values<any>(document.paths)) {
      for (const op of Object.values<any>(item)) {
        if (op.operationId !== operationId) continue
        let schema = resolve(op.requestBody.content["application/json"].schema)
        for (const key of path) schema = resolve(key === "[]" ? schema.items : schema.properties[key])
        return schema
      }
    }
    throw new Error(`no operation ${operationId}`)
  }

  it("lists the values each field takes", () => {
    const cases: ReadonlyArray<readonly [string, ReadonlyArray<string>, ReadonlyArray<string>]> = [
      ["triggers.create", ["trigger", "trigger_type"], ["inbound_message", "api_call", "msg_event", "project_event"]],
      ["triggers.create", ["trigger", "operator"], ["eq", "lt", "lte", "gt", "gte"]],
      ["webhooks.create", ["msg_webhook", "buffer_events", "[]"], ["msg.message.received"]],
      ["webhooks.test", ["event_type"], []],
      ["setupLinks.create", ["setup_link", "upstream_billing_mode"], ["customer_managed", "partner_managed"]],
      ["setupLinks.create", ["setup_link", "allowed_connection_types", "[]"], ["coexistence", "dedicated"]],
      ["setupLinks.update", ["setup_link", "status"], ["revoked"]],
      ["msgBroadcasts.update", ["status"], ["stopped", "draft"]],
      ["functions.create", ["function", "function_type"], ["edge_worker"]]
    ]
    for (const [id, path, values] of cases) {
      const schema = bodyField(id, path)
      assert.isArray(schema.enum, `${id} ${path.join(".")} has an enum`)
      for (const value of values) assert.include(schema.enum, value, `${id} ${path.join(".")}`)
    }
    const events = bodyField("webhooks.create", ["msg_webhook", "events", "[]"]).enum
    assert.includeMembers(events, ["msg.message.received", "workflow.execution.failed", "project.event"])
  })

  it("and the server refuses a value outside them", async () => {
    const refused = async (method: string, path: string, body: unknown) => {
      const res = await host.request(method, path, { body })
      assert.strictEqual(res.status, 422, `${method} ${path} ${JSON.stringify(body)}: ${res.text}`)
    }
    const workflow = (await post("/platform/v1/workflows", { workflow: { name: "Enums" } })).data.id
    await refused("POST", `/platform/v1/workflows/${workflow}/triggers`, { trigger: { trigger_type: "cron" } })
    await refused("POST", "/platform/v1/msg/webhooks", { msg_webhook: { url: "https://example.com/h", secret_key: "s", events: ["msg.everything"] } })
    const customerId = (await post("/platform/v1/customers", { customer: { name: "Enums" } })).data.id
    await refused("POST", `/platform/v1/customers/${customerId}/setup_links`, { setup_link: { upstream_billing_mode: "free" } })
    await refused("POST", "/platform/v1/functions", { function: { name: "e", code: "export default {}", function_type: "lambda" } })
  })
})

describe("the main resources' fields are described", () => {
  /** The `data` object of an operation's success answer, `$ref`s resolved. */
  const answerData = (method: string, path: string): any => {
    const components = document.components.schemas
    const resolve = (s: any): any => {
      let current = s
      while (current?.$ref !== undefined) current = components[current.$ref.split("/").pop()]
      return current
    }
    const op = document.paths[path][method]
    const status = Object.keys(op.responses).find((s) => s.startsWith("2"))!
    const body = resolve(op.responses[status].content["application/json"].schema)
    return resolve(body.properties.data)
  }

  it("every field of a workflow, function, event, connected number, webhook, setup link and broadcast says what it is", () => {
    const resources: ReadonlyArray<readonly [string, string]> = [
      ["get", "/platform/v1/workflows/{id}"],
      ["get", "/platform/v1/functions/{id}"],
      ["post", "/platform/v1/events"],
      ["get", "/platform/v1/msg/webhooks/{id}"],
      ["get", "/platform/v1/customers/{customer_id}/setup_links/{id}"],
      ["get", "/platform/v1/msg/broadcasts/{id}"]
    ]
    for (const [method, path] of resources) {
      const data = answerData(method, path)
      const undescribed = Object.entries<any>(data.properties)
        .filter(([, schema]) => typeof schema.description !== "string" || schema.description.length === 0)
        .map(([name]) => name)
      assert.deepStrictEqual(undescribed, [], `${method} ${path}`)
    }
    for (const name of ["MsgConversation", "MsgMessage"]) {
      const component = document.components.schemas[name]
      const undescribed = Object.entries<any>(component.properties)
        .filter(([, schema]) => typeof schema.description !== "string")
        .map(([field]) => field)
      assert.deepStrictEqual(undescribed, [], name)
    }
    const workflow = answerData("get", "/platform/v1/workflows/{id}")
    assert.include(workflow.properties.slug.description, "stable across renames")
    assert.include(workflow.properties.inbound_message_read_mode.description, "read_with_typing")
  })
})

describe("numbers are numbers", () => {
  it("no field documents the strings Infinity, -Infinity and NaN as a number's values", () => {
    assert.notInclude(JSON.stringify(document), "\"NaN\"")
  })
})

describe("envelopes the server requires are required in the document", () => {
  it("workflows.update takes `workflow` or `flow`, executions.update `workflow_execution`; without one the server answers 400", async () => {
    const find = (id: string) =>
      Object.values<any>(document.paths).flatMap((item) => Object.values<any>(item)).find((op) => op.operationId === id)
    const update = find("workflows.update").requestBody.content["application/json"].schema
    assert.deepStrictEqual(update.anyOf, [{ required: ["workflow"] }, { required: ["flow"] }])
    assert.deepStrictEqual(find("executions.update").requestBody.content["application/json"].schema.required, ["workflow_execution"])
    const workflow = (await post("/platform/v1/workflows", { workflow: { name: "Envelopes" } })).data.id
    const missing = await host.request("PATCH", `/platform/v1/workflows/${workflow}`, { body: {} })
    assert.deepStrictEqual([missing.status, missing.body.code], [400, "missing_envelope"])
  })
})
