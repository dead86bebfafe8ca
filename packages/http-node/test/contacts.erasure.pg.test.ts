/**
 * Contact erasure end to end on PostgreSQL (decisions 4.8): a contact writes in through the network (ingestion, a
 * webhook's delivery log, an inbound-triggered run left waiting on it, a project event of its conversation), is
 * erased with `DELETE /platform/v1/msg/contacts/<phone>`, and afterwards no row of any table of the schema (nor of
 * pg-boss's: the relay's jobs carry outbox entries), nor any bytea value, holds its phone number, name or
 * business-scoped id; another contact's history stays.
 */
import { assert, describe, it } from "@effect/vitest"
import { ContactErasureRepo, ContactsRepo, Ids } from "@parley/core"
import { layerFromUrl, layerJobQueue, layerStorage } from "@parley/store-pg"
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { freshDatabase } from "../../store-pg/test/pg.ts"
import { eventually, hostForSuite, type MessagingHost } from "./messaging.support.ts"

const PHONE = "15550404001"
const NAME = "Zora Erasewell"
const OTHER = "15550404002"

// The webhook posts to a closed local port: its deliveries fail, and their logs keep the bodies.
process.env.PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS = "true"

let host: MessagingHost
let pnid: string
hostForSuite(
  Effect.map(freshDatabase, (url) =>
    Layer.mergeAll(layerStorage, layerJobQueue({ pollingIntervalSeconds: 0.2 }), Ids.layer).pipe(Layer.provideMerge(layerFromUrl(url)))),
  (h, p) => {
    host = h
    pnid = p
  }
)

const run = <A, E>(effect: Effect.Effect<A, E, any>) =>
  Effect.runPromise(Effect.provideContext(effect, host.context) as Effect.Effect<A, E>)

const say = async (from: string, name: string, text: string) => {
  const res = await host.request("POST", "/sandbox/inbound", {
    body: { phone_number_id: pnid, from, profile_name: name, message: { type: "text", text: { body: text } } }
  })
  assert.strictEqual(res.status, 202, res.text)
}

/**
 * Every place of Parley's schema, and of pg-boss's (`pgboss`: job payloads), that still holds one of `terms`:
 * `table: term` for row text, `table.column: term` for bytes.
 */
const mentions = (terms: ReadonlyArray<string>) =>
  run(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const found: Array<string> = []
    const tables = yield* sql<{ readonly table_schema: string; readonly table_name: string }>`
      SELECT table_schema, table_name FROM information_schema.tables
      WHERE table_schema IN (current_schema(), 'pgboss') AND table_type = 'BASE TABLE' ORDER BY table_schema, table_name`
    for (const { table_name, table_schema } of tables) {
      const rows = yield* sql<{ readonly row: string }>`SELECT t::text AS row FROM ${sql(table_schema)}.${sql(table_name)} AS t`
      for (const term of terms) if (rows.some((r) => r.row.includes(term))) found.push(`${table_name}: ${term}`)
    }
    const columns = yield* sql<{ readonly table_schema: string; readonly table_name: string; readonly column_name: string }>`
      SELECT table_schema, table_name, column_name FROM information_schema.columns
      WHERE table_schema IN (current_schema(), 'pgboss') AND data_type = 'bytea'`
    for (const { column_name, table_name, table_schema } of columns) {
      for (const term of terms) {
        const [hit] = yield* sql<{ readonly n: number }>`
          SELECT count(*)::int AS n FROM ${sql(table_schema)}.${sql(table_name)}
          WHERE position(convert_to(${term}, 'UTF8') IN ${sql(column_name)}) > 0`
        if (hit!.n > 0) found.push(`${table_name}.${column_name}: ${term}`)
      }
    }
    return found
  }))

describe("contact erasure (postgres, over HTTP)", () => {
  it("leaves nothing of the contact in any table", async () => {
    const webhook = await host.request("POST", `/platform/v1/msg/phone_numbers/${pnid}/webhooks`, {
      body: { msg_webhook: { url: "http://127.0.0.1:9/parley", events: ["msg.message.received"], secret_key: "erasure-test-secret" } }
    })
    assert.strictEqual(webhook.status, 201, webhook.text)
    const workflow = await host.request("POST", "/platform/v1/workflows", {
      body: {
        workflow: {
          name: "Greeter",
          status: "draft",
          definition: {
            nodes: [
              { id: "start", position: { x: 0, y: 0 }, data: { node_type: "start", config: {} } },
              { id: "hi", position: { x: 0, y: 0 }, data: { node_type: "send_text", config: { message: "Hi {{context.contact.name}}" } } },
              { id: "ask", position: { x: 0, y: 0 }, data: { node_type: "wait_for_response", config: { save_response_to: "answer", has_timeout: true, timeout_seconds: 600 } } }
            ],
            edges: [{ source: "start", target: "hi" }, { source: "hi", target: "ask" }]
          }
        }
      }
    })
    assert.strictEqual(workflow.status, 201, workflow.text)
    const workflowId = workflow.body.data.id
    const trigger = await host.request("POST", `/platform/v1/workflows/${workflowId}/triggers`, {
      body: { trigger: { trigger_type: "inbound_message", phone_number_id: pnid } }
    })
    assert.strictEqual(trigger.status, 201, trigger.text)
    const active = await host.request("PATCH", `/platform/v1/workflows/${workflowId}`, {
      body: { workflow: { status: "active", message_debounce_seconds: 0 } }
    })
    assert.strictEqual(active.status, 200, active.text)

    await say(PHONE, NAME, "hello, I am Zora")
    await say(OTHER, "Kept Contact", "hello")
    const conversationOf = async (phone: string) =>
      (await host.request("GET", `/platform/v1/msg/conversations?phone_number=${phone}`)).body.data[0]?.id as string | undefined
    await eventually("both conversations", async () => (await conversationOf(PHONE)) !== undefined && (await conversationOf(OTHER)) !== undefined)
    const conversation = (await conversationOf(PHONE))!
    const executions = `/platform/v1/workflows/${workflowId}/executions?msg_conversation_id=${conversation}`
    await eventually("the contact's run waiting for its answer", async () =>
      (await host.request("GET", executions)).body.data[0]?.status === "waiting", 20_000)
    // The network's status reports of the greeting are in: what it posts after the erasure is not the erasure's.
    await eventually("the greeting delivered", async () =>
      (await host.request("GET", `/platform/v1/msg/messages?phone_number=${PHONE}&direction=outbound&status=delivered`)).body.data.length === 1, 20_000)
    const event = await host.request("POST", "/platform/v1/events", {
      body: { name: "lead.qualified", conversation_id: conversation, properties: { phone: PHONE, name: NAME } }
    })
    assert.strictEqual(event.status, 201, event.text)
    await eventually("a delivery logged", async () =>
      (await mentions([PHONE])).some((m) => m.startsWith("webhook_deliveries.body")), 20_000)

    const contacts = Context.get(host.context, ContactsRepo)
    const contact = Option.getOrThrow(await run(contacts.findByWaId(host.projectA, PHONE)))
    const terms = [PHONE, NAME, contact.business_scoped_user_id!]
    const before = await mentions(terms)
    const places = ["msg_contacts", "msg_conversations", "msg_messages", "workflow_executions", "events", "webhook_deliveries.body", "msg_upstream_inbox.body", "job"]
    for (const place of places) {
      assert.isTrue(before.some((m) => m.startsWith(place)), `${place} held the contact before: ${before.join(", ")}`)
    }

    const erased = await host.request("DELETE", `/platform/v1/msg/contacts/%2B${PHONE}`)
    assert.strictEqual(erased.status, 204, erased.text)
    const erasures = Context.get(host.context, ContactErasureRepo)
    await eventually("the erasure done", async () =>
      (await run(erasures.listUnfinished(100))).length === 0 && Option.isNone(await run(contacts.findByWaId(host.projectA, PHONE))), 20_000)

    const after = await mentions(terms)
    assert.deepStrictEqual(after, [], after.join(", "))
    const kept = await host.request("GET", `/platform/v1/msg/messages?phone_number=${OTHER}&direction=inbound`)
    assert.strictEqual(kept.body.data.length, 1)
    assert.deepStrictEqual((await host.request("GET", `/platform/v1/msg/conversations?phone_number=${PHONE}`)).body.data, [])
  }, 90_000)
})
