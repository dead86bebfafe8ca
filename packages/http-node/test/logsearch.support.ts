/**
 * The log search suite over real HTTP (decisions 4.7), run on memory ports (`logsearch.http.test.ts`) and on
 * PostgreSQL (`logsearch.http.pg.test.ts`): API requests, upstream webhook events, workflow step events and
 * webhook delivery attempts are found by words, source, window, filters and problems; cursors, highlights, the
 * catalog, and the refusals of malformed parameters.
 */
import { assert, describe, it } from "@effect/vitest"
import { LOG_FILTER_KEYS } from "@parley/core"
import { Effect, Exit, type Layer, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { connectSimulatedNumber, eventually, type MessagingHost, startMessagingHost } from "./messaging.support.ts"
import { type Receiver, startReceiver } from "./receiver.ts"

export const logSearchOverHttp = (storage: string, ports: Effect.Effect<Layer.Layer<any, any, never>, unknown, Scope.Scope>) => {
  let host: MessagingHost
  let pnid: string
  let receiver: Receiver
  let close: () => Promise<void> = () => Promise.resolve()
  beforeAll(async () => {
    const scope = Effect.runSync(Scope.make())
    await Effect.runPromise(Effect.gen(function*() {
      receiver = yield* startReceiver
      // The receiver is on loopback.
      host = yield* startMessagingHost(yield* ports, { PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS: "true" })
      pnid = (yield* connectSimulatedNumber(host, { sink: true })).phoneNumberId
    }).pipe(Effect.provideService(Scope.Scope, scope)))
    close = () => Effect.runPromise(Scope.close(scope, Exit.void))
  }, 120_000)
  afterAll(() => close())

  const search = (body: Record<string, unknown>, key?: string) =>
    host.request("POST", "/platform/v1/log_search", { body, ...(key === undefined ? {} : { key }) })
  const unique = () => crypto.randomUUID().replaceAll("-", "")

  const refused = async (res: { readonly status: number; readonly body: any; readonly text: string }, status: number, error: string) => {
    assert.strictEqual(res.status, status, res.text)
    assert.strictEqual(res.body.error, error)
  }

  describe(`log search over HTTP (${storage})`, () => {
    it("finds the project's API requests with their key's id and name, never the key, and only its own", async () => {
      const tag = unique()
      assert.strictEqual((await host.request("GET", `/platform/v1/workflows/${tag}`)).status, 404)
      assert.strictEqual((await host.request("GET", `/platform/v1/workflows?name=${tag}`)).status, 200)
      const res = await host.request("GET", `/platform/v1/log_search?source=api&query=${tag}`)
      assert.strictEqual(res.status, 200, res.text)
      assert.strictEqual(res.body.available, true)
      assert.strictEqual(res.body.source, "api")
      assert.strictEqual(Date.parse(res.body.window.until) - Date.parse(res.body.window.since), 24 * 60 * 60 * 1000)
      // The query string is not logged: only the path holds the tag.
      assert.strictEqual(res.body.events.length, 1)
      const [event] = res.body.events
      assert.deepInclude(event, {
        source: "external_api_log",
        level: "warning",
        status: "404",
        http_method: "GET",
        endpoint: `/platform/v1/workflows/${tag}`,
        response_status: 404,
        api_key_name: "test",
        resource_type: null,
        error_message: "Workflow not found",
        message: `GET /platform/v1/workflows/${tag} 404`,
        payload: null,
        highlighted: false
      })
      assert.strictEqual(event.timestamp, event.occurred_at)
      assert.isString(event.api_key_id)
      assert.isNumber(event.response_time_ms)
      assert.deepStrictEqual(res.body.pagination, { has_more: false, next_cursor: null })
      assert.notInclude(res.text, host.key)
      // Another project finds none of it.
      const other = await host.request("GET", `/platform/v1/log_search?query=${tag}`, { key: host.otherKey })
      assert.deepStrictEqual(other.body.events, [])
      // The filters of the catalogue narrow it; problems only keeps the 404.
      const filtered = await search({ source: "external_api_log", filters: [{ key: "endpoint_contains", value: tag.toUpperCase() }, { key: "response_status", value: 404 }] })
      assert.deepStrictEqual(filtered.body.events.map((e: any) => e.id), [event.id])
      const problems = await host.request("GET", `/platform/v1/log_search?query=${tag}&problems_only=true`)
      assert.deepStrictEqual(problems.body.events.map((e: any) => e.id), [event.id])
      const deprecated = await search({ query: tag, errors_only: true })
      assert.deepStrictEqual(deprecated.body.events.map((e: any) => e.id), [event.id])
    })

    it("pages with next_cursor, newest first, and marks the highlighted event", async () => {
      const tag = unique()
      for (let i = 0; i < 5; i++) await host.request("GET", `/platform/v1/workflows/${tag}-${i}`)
      const seen: Array<any> = []
      let cursor: string | null = null
      const more: Array<boolean> = []
      do {
        const page: any = await search({ query: tag, limit: 2, ...(cursor === null ? {} : { cursor }) })
        assert.strictEqual(page.status, 200, page.text)
        seen.push(...page.body.events)
        more.push(page.body.pagination.has_more)
        cursor = page.body.pagination.next_cursor
      } while (cursor !== null)
      assert.deepStrictEqual(more, [true, true, false])
      assert.deepStrictEqual(seen.map((e) => e.endpoint), [4, 3, 2, 1, 0].map((i) => `/platform/v1/workflows/${tag}-${i}`))
      const marked = await host.request("GET", `/platform/v1/log_search?query=${tag}&limit=5&highlight_event_id=${seen[2].id}`)
      assert.deepStrictEqual(marked.body.events.map((e: any) => e.highlighted), [false, false, true, false, false])
      // `period=context` keeps 15 minutes either side of `around`.
      const around = seen[0].occurred_at
      const context = await host.request("GET", `/platform/v1/log_search?query=${tag}&period=context&around=${around}`)
      assert.strictEqual(context.body.events.length, 5)
      assert.deepStrictEqual(context.body.window, {
        since: new Date(Date.parse(around) - 15 * 60_000).toISOString(),
        until: new Date(Date.parse(around) + 15 * 60_000).toISOString()
      })
      const later = new Date(Date.parse(around) + 16 * 60_000).toISOString()
      const outside = await host.request("GET", `/platform/v1/log_search?query=${tag}&period=context&around=${later}`)
      assert.deepStrictEqual(outside.body.events, [])
    })

    it("refuses malformed parameters with 422 (400 for a cursor) and the reason", async () => {
      const get = (query: string) => host.request("GET", `/platform/v1/log_search?${query}`)
      await refused(await search({ filters: "flow_id=1" }), 422, "filters must be an object or a list of {key, value} pairs")
      await refused(await search({ filters: [{ key: "flow_id" }] }), 422, "filters must be an object or a list of {key, value} pairs")
      await refused(await search({ filters: [["flow_id", "x"]] }), 422, "filters must be an object or a list of {key, value} pairs")
      await refused(await search({ filters: { flow_id: { nested: true } } }), 422, "filters must be an object or a list of {key, value} pairs")
      await refused(await search({ filters: { colour: "red" } }), 422, `unknown filter key "colour": use one of ${LOG_FILTER_KEYS.join(", ")}`)
      await refused(await search({ filters: { response_status: "5xx" } }), 422, "filters.response_status must be an HTTP status (an integer 100-599)")
      await refused(await get("period=context"), 422, "around is required with period context")
      await refused(await search({ period: "context", around: "yesterday" }), 422, "around must be an ISO 8601 date-time")
      // A blank period is a mistake, not the default (issue 29 §4); so is a name an object inherits.
      for (const period of ["", " ", "toString"]) {
        await refused(await search({ period }), 422, "period must be one of 24h, 7d, context")
        await refused(await get(`period=${encodeURIComponent(period)}`), 422, "period must be one of 24h, 7d, context")
      }
      await refused(await get("period=30d"), 422, "period must be one of 24h, 7d, context")
      await refused(await get("source=mail"), 422, "source must be one of all, external_api_log, msg_webhook_event, flow_event, webhook_delivery (or an alias from the catalog)")
      for (const limit of ["0", "101", "ten"]) await refused(await get(`limit=${limit}`), 422, "limit must be between 1 and 100")
      await refused(await search({ limit: 2.5 }), 422, "limit must be between 1 and 100")
      const maybe = await get("problems_only=maybe")
      assert.deepStrictEqual([maybe.status, typeof maybe.body.error], [422, "string"])
      await refused(await get("cursor=not-a-cursor"), 400, "Invalid pagination cursor")
      const numeric = await search({ query: 5 })
      assert.deepStrictEqual([numeric.status, numeric.body.details[0].path], [422, "query"])
      assert.strictEqual((await host.request("GET", "/platform/v1/log_search", { key: null })).status, 401)
    })

    it("finds a failed webhook delivery with problems_only, by its webhook and as the highlighted resource", async () => {
      receiver.answer((r) => (r.path === "/failing" ? { status: 500, body: "receiver broke" } : { status: 200 }))
      const created = await host.request("POST", "/platform/v1/msg/webhooks", {
        body: { msg_webhook: { url: `${receiver.url}/failing`, events: ["project.event"], secret_key: "whsec_logsearch_0123456789" } }
      })
      assert.strictEqual(created.status, 201, created.text)
      const webhookId = created.body.data.id
      const tested = await host.request("POST", `/platform/v1/msg/webhooks/${webhookId}/test`, { body: {} })
      assert.strictEqual(tested.body.data.success, false, tested.text)
      const deliveryId = tested.body.data.delivery_id
      const found = await search({ source: "webhook_delivery", problems_only: true, filters: { webhook_id: webhookId }, highlight_resource_id: deliveryId })
      assert.strictEqual(found.status, 200, found.text)
      assert.strictEqual(found.body.events.length, 1)
      assert.deepInclude(found.body.events[0], {
        source: "webhook_delivery",
        level: "error",
        status: "failed",
        resource_type: "webhook_delivery",
        resource_id: deliveryId,
        event: "project.event",
        webhook_id: webhookId,
        webhook_url: `${receiver.url}/failing`,
        response_status: 500,
        error_message: "receiver broke",
        highlighted: true
      })
      assert.notInclude(found.text, "whsec_logsearch_0123456789")
      // The words of the error find it too.
      const byWords = await search({ source: "deliveries", query: "receiver broke", filters: [{ key: "webhook_id", value: webhookId }] })
      assert.deepStrictEqual(byWords.body.events.map((e: any) => e.resource_id), [deliveryId])
    })

    it("finds upstream webhook events and a workflow's step events", async () => {
      const tag = unique()
      const from = `1555${Math.floor(Math.random() * 1e7).toString().padStart(7, "0")}`
      const inbound = await host.request("POST", "/sandbox/inbound", { body: { phone_number_id: pnid, from, message: { type: "text", text: { body: `hello ${tag}` } } } })
      assert.strictEqual(inbound.status, 202, inbound.text)
      let upstream: any
      await eventually("the upstream message is searchable", async () => {
        const res = await search({ source: "msg_webhook_event", query: tag })
        upstream = res.body.events[0]
        return upstream !== undefined
      })
      assert.deepInclude(upstream, {
        source: "msg_webhook_event",
        field: "messages",
        event: "message",
        event_type: "message",
        message_type: "text",
        phone_number_id: pnid,
        message: `message text from ${from}`
      })
      assert.strictEqual(upstream.payload.text.body, `hello ${tag}`)

      const workflow = await host.request("POST", "/platform/v1/workflows", {
        body: {
          workflow: {
            name: `Logged ${tag}`,
            status: "active",
            definition: {
              nodes: [
                { id: "start", position: { x: 0, y: 0 }, data: { node_type: "start", config: {} } },
                { id: "hi", position: { x: 0, y: 0 }, data: { node_type: "send_text", config: { message: "Hi" } } }
              ],
              edges: [{ source: "start", target: "hi" }]
            }
          }
        }
      })
      assert.strictEqual(workflow.status, 201, workflow.text)
      const started = await host.request("POST", `/platform/v1/workflows/${workflow.body.data.id}/executions`, {
        body: { workflow_execution: { phone_number: `+${from}`, phone_number_id: pnid } }
      })
      assert.strictEqual(started.status, 202, started.text)
      const executionId = started.body.data.id
      let events: Array<any> = []
      await eventually("the run's step events are searchable", async () => {
        const res = await search({ source: "flow_event", filters: { flow_execution_id: executionId } })
        events = res.body.events
        return events.some((e) => e.event_type === "execution_ended")
      })
      const startedEvent = events.find((e) => e.event_type === "execution_started")
      assert.deepInclude(startedEvent, {
        flow_name: `Logged ${tag}`,
        flow_id: workflow.body.data.id,
        flow_execution_id: executionId,
        resource_id: executionId,
        step_identifier: null
      })
      const sent = events.find((e) => e.event_type === "action_performed")
      assert.deepInclude(sent, { step_identifier: "hi", step_type: "send_text", flow_name: `Logged ${tag}`, level: "info" })
      // The workflow's name is searchable.
      const byName = await search({ source: "workflow", query: `logged ${tag}`, filters: { event_type: "execution_ended" } })
      assert.deepStrictEqual(byName.body.events.map((e: any) => e.flow_execution_id), [executionId])
    })

    it("GET /api_logs lists the project's API requests by endpoint, status and errors, newest first, by cursor", async () => {
      const tag = unique()
      assert.strictEqual((await host.request("GET", `/platform/v1/workflows/${tag}`)).status, 404)
      assert.strictEqual((await host.request("GET", `/platform/v1/workflows/${tag}/definition`)).status, 404)
      assert.strictEqual((await host.request("GET", `/platform/v1/workflows?name=${tag}`)).status, 200)
      const mine = await host.request("GET", `/platform/v1/api_logs?endpoint=${tag.toUpperCase()}`)
      assert.strictEqual(mine.status, 200, mine.text)
      assert.deepStrictEqual(mine.body.data.map((r: any) => r.endpoint), [
        `/platform/v1/workflows/${tag}/definition`,
        `/platform/v1/workflows/${tag}`
      ])
      const [latest] = mine.body.data
      assert.deepStrictEqual(Object.keys(latest).sort(), [
        "api_key_id",
        "api_key_name",
        "created_at",
        "endpoint",
        "error_message",
        "http_method",
        "id",
        "ip_address",
        "response_status",
        "response_time_ms"
      ])
      assert.deepInclude(latest, { http_method: "GET", response_status: 404, api_key_name: "test", error_message: "Workflow not found" })
      assert.isString(latest.ip_address)
      assert.isNumber(latest.response_time_ms)
      // Status, errors only, and a page of one with its next page.
      const first = await host.request("GET", `/platform/v1/api_logs?endpoint=${tag}&status_code=404&errors_only=true&limit=1`)
      assert.strictEqual(first.status, 200, first.text)
      assert.strictEqual(first.body.data.length, 1)
      assert.strictEqual(first.body.data[0].id, latest.id)
      assert.isString(first.body.paging.next)
      const next = await host.request("GET", first.body.paging.next.slice(first.body.paging.next.indexOf("/platform/v1")))
      assert.strictEqual(next.status, 200, next.text)
      assert.deepStrictEqual(next.body.data.map((r: any) => r.endpoint), [`/platform/v1/workflows/${tag}`])
      assert.strictEqual((await host.request("GET", `/platform/v1/api_logs?endpoint=${tag}&status_code=200`)).body.data.length, 0)
      // Another project sees none of them; malformed parameters are refused.
      assert.strictEqual((await host.request("GET", `/platform/v1/api_logs?endpoint=${tag}`, { key: host.otherKey })).body.data.length, 0)
      assert.strictEqual((await host.request("GET", "/platform/v1/api_logs?status_code=abc")).status, 422)
      assert.strictEqual((await host.request("GET", "/platform/v1/api_logs?period=1y")).status, 422)
    })

    it("lists the catalog: sources with aliases, filter keys, detail fields", async () => {
      const res = await host.request("GET", "/platform/v1/log_search/catalog")
      assert.strictEqual(res.status, 200, res.text)
      assert.strictEqual(res.body.available, true)
      assert.deepStrictEqual(res.body.catalog.sources.map((s: any) => s.value), ["external_api_log", "msg_webhook_event", "flow_event", "webhook_delivery"])
      for (const source of res.body.catalog.sources) assert.deepStrictEqual(Object.keys(source).sort(), ["aliases", "color", "label", "value"])
      assert.deepStrictEqual(res.body.catalog.filter_suggestions.map((f: any) => f.key), [...LOG_FILTER_KEYS])
      for (const f of res.body.catalog.filter_suggestions) {
        assert.deepStrictEqual(Object.keys(f).sort(), ["description", "key", "label", "param_key", "sources"])
        assert.strictEqual(f.param_key, f.key)
      }
      assert.include(res.body.catalog.detail_fields, "payload")
    })
  })
}
