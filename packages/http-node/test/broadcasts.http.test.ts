/**
 * Broadcasts over real HTTP (decisions 2.14, 3.4, 4.9, 8.2) on memory ports,
 * with the network simulator behind the sender and its status reports coming
 * back through ingestion: every endpoint of both surfaces, the refusals, the
 * sender's pacing, throttling retries, suppression, stops and the counters.
 */
import { assert, describe, it } from "@effect/vitest"
import { ContactsRepo, Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Exit, Layer, Option, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { connectSimulatedNumber, eventually, type MessagingHost, startMessagingHost } from "./messaging.support.ts"

let host: MessagingHost
let pnid: string
let waba: string
let msgConfigId: string
let close: () => Promise<void>

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)

const BROADCASTS = "/platform/v1/msg/broadcasts"

/** A template created through the proxy and approved by the network, as the mirror names it. */
const approvedTemplate = async (body: string, extra: Record<string, unknown> = {}) => {
  const name = `sale_${Date.now()}_${Math.floor(Math.random() * 1e6)}`
  const created = await host.request("POST", `/proxy/${waba}/message_templates`, {
    raw: JSON.stringify({ name, category: "MARKETING", language: "en_US", components: [{ type: "BODY", text: body, ...extra }] })
  })
  assert.strictEqual(created.status, 200, created.text)
  await run(host.simulator.setTemplateStatus(created.body.id, "APPROVED"))
  const listed = await host.request("GET", `/platform/v1/msg/templates?name=${name}&status=approved`)
  assert.strictEqual(listed.body.data.length, 1, listed.text)
  return { id: listed.body.data[0].id as string, upstreamId: created.body.id as string, name }
}

const create = async (templateId: string, extra: Record<string, unknown> = {}) => {
  const res = await host.request("POST", BROADCASTS, { body: { msg_broadcast: { name: "Spring sale", msg_config_id: msgConfigId, msg_template_id: templateId, ...extra } } })
  assert.strictEqual(res.status, 201, res.text)
  return res.body.data
}

const phones = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(4, "0")}`)

const addAll = async (id: string, numbers: ReadonlyArray<string>) => {
  const res = await host.request("POST", `${BROADCASTS}/${id}/recipients`, { body: { recipients: numbers.map((phone_number) => ({ phone_number, template_parameters: ["Ada"] })) } })
  assert.strictEqual(res.status, 201, res.text)
  return res.body.data
}

const get = async (id: string) => (await host.request("GET", `${BROADCASTS}/${id}`)).body.data

const untilStatus = async (id: string, status: string, ms = 30_000) => {
  await eventually(`broadcast ${id} ${status}`, async () => (await get(id)).status === status, ms)
  return get(id)
}

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    host = yield* startMessagingHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer), {
      PARLEY_BROADCAST_PROGRESS_MS: "100",
      PARLEY_BROADCAST_SWEEP_MS: "500"
    })
    const number = yield* connectSimulatedNumber(host, { sink: true })
    pnid = number.phoneNumberId
    waba = number.businessAccountId
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  const numbers = await host.request("GET", "/platform/v1/msg/phone_numbers")
  msgConfigId = numbers.body.data.find((n: { phone_number_id: string }) => n.phone_number_id === pnid).id
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
}, 60_000)
afterAll(() => close())

describe("broadcasts over HTTP", () => {
  it("creates drafts, refuses what 4.9 refuses, reads, renames and lists them on both surfaces", async () => {
    const t = await approvedTemplate("Hi {{1}}, the spring sale starts today!")
    const b = await create(t.id)
    assert.deepStrictEqual(
      { status: b.status, msg_config_id: b.msg_config_id, total: b.total_recipients, rate: b.response_rate, stop_reason: b.stop_reason },
      { status: "draft", msg_config_id: msgConfigId, total: 0, rate: 0, stop_reason: null }
    )
    assert.deepStrictEqual(b.msg_template, { id: t.id, name: t.name, language_code: "en_US", category: "MARKETING", status: "approved" })
    assert.deepStrictEqual(b.stats, { total: 0, sent: 0, failed: 0, delivered: 0, read: 0, responded: 0, pending: 0, held: 0 })
    assert.isFalse("stopped_at" in b)
    // By phone_number_id too.
    const byNumber = await host.request("POST", BROADCASTS, { body: { msg_broadcast: { name: "By number", phone_number_id: pnid, msg_template_id: t.id } } })
    assert.strictEqual(byNumber.status, 201, byNumber.text)

    const refusals: Array<[unknown, number, string]> = [
      [{ msg_broadcast: { name: "x", msg_config_id: msgConfigId, msg_template_id: "00000000-0000-4000-8000-000000000000" } }, 422, "Template not linked to number"],
      [{ msg_broadcast: { name: "x", msg_config_id: "00000000-0000-4000-8000-000000000000", msg_template_id: t.id } }, 422, "msg_config_id does not name a connected number of the project"],
      [{ msg_broadcast: { name: "x", msg_template_id: t.id } }, 422, "msg_config_id or phone_number_id is required"],
      [{ msg_broadcast: { name: " ", msg_config_id: msgConfigId, msg_template_id: t.id } }, 422, "name must not be blank"],
      [{ msg_broadcast: { name: "x", msg_config_id: msgConfigId, msg_template_id: t.id, scheduled_at: "2020-01-01T00:00:00Z" } }, 422, "scheduled_at must be at least 1 minute and at most 30 days ahead"]
    ]
    for (const [body, status, error] of refusals) {
      const res = await host.request("POST", BROADCASTS, { body })
      assert.strictEqual(res.status, status, res.text)
      assert.strictEqual(res.body.error, error)
    }
    assert.strictEqual((await host.request("POST", BROADCASTS, { body: { name: "no envelope" } })).status, 400)
    // Another project's template is not linked to this number either.
    const other = await host.request("POST", BROADCASTS, { key: host.otherKey, body: { msg_broadcast: { name: "x", phone_number_id: pnid, msg_template_id: t.id } } })
    assert.strictEqual(other.status, 422)

    assert.deepStrictEqual((await host.request("GET", `${BROADCASTS}/${b.id}`)).body.data, b)
    const foreign = await host.request("GET", `${BROADCASTS}/${b.id}`, { key: host.otherKey })
    assert.deepStrictEqual([foreign.status, foreign.body], [404, { error: "Broadcast not found" }])

    const renamed = await host.request("PATCH", `${BROADCASTS}/${b.id}`, { body: { name: "Summer sale" } })
    assert.strictEqual(renamed.body.data.name, "Summer sale")
    const badMove = await host.request("PATCH", `${BROADCASTS}/${b.id}`, { body: { status: "sending" } })
    assert.deepStrictEqual([badMove.status, badMove.body.error], [422, "status may only be set to stopped or draft"])
    const notSending = await host.request("PATCH", `${BROADCASTS}/${b.id}`, { body: { status: "stopped" } })
    assert.deepStrictEqual([notSending.status, notSending.body.error], [422, "Only a sending broadcast can be stopped; this one is draft"])

    const listed = await host.request("GET", `${BROADCASTS}?msg_template_id=${t.id}&per_page=1`)
    assert.strictEqual(listed.status, 200, listed.text)
    assert.deepStrictEqual(listed.body.meta, { page: 1, per_page: 1, total_pages: 2, total_count: 2 })
    assert.strictEqual(listed.headers.get("x-total"), "2")
    assert.deepStrictEqual(listed.body.data.map((x: { id: string }) => x.id), [byNumber.body.data.id])
    assert.strictEqual((await host.request("GET", `${BROADCASTS}?status=sending&msg_template_id=${t.id}`)).body.data.length, 0)
    assert.strictEqual((await host.request("GET", `${BROADCASTS}?status=bogus`)).status >= 400, true)
    assert.strictEqual((await host.request("GET", `${BROADCASTS}?per_page=101`)).status, 422)

    const legacy = await host.request("GET", `/api/v1/msg_broadcasts?q[msg_template_id_eq]=${t.id}&q[msg_config_id_eq]=${msgConfigId}&page=2&per_page=1`)
    assert.strictEqual(legacy.status, 200, legacy.text)
    assert.deepStrictEqual(legacy.body.meta, { page: 2, per_page: 1, total_pages: 2, total_count: 2 })
    assert.deepStrictEqual(legacy.body.data[0], renamed.body.data)
    assert.strictEqual((await host.request("GET", `/api/v1/msg_broadcasts?q[msg_config_id_eq]=none`)).body.data.length, 0)
  })

  it("adds recipients (1 to 1,000, checked at add time, duplicates counted), lists and clears them", async () => {
    const t = await approvedTemplate("Hi {{1}}, your code is {{2}}")
    const b = await create(t.id)
    const contact = await run(host.simulator.inbound(pnid, { from: "15557770001", profile_name: "Ada", message: { type: "text", text: { body: "hi" } } }))
    assert.isDefined(contact)
    let contactId = ""
    await eventually("the contact stored", async () => {
      const found = await run(Context.get(host.context, ContactsRepo).findByWaId(host.projectA, "15557770001"))
      contactId = Option.isSome(found) ? found.value.id : ""
      return contactId !== ""
    })
    const res = await host.request("POST", `${BROADCASTS}/${b.id}/recipients`, {
      body: {
        recipients: [
          { phone_number: "+1 (555) 000-1001", template_parameters: ["Ada", "42"] },
          { phone_number: "15550001001", template_parameters: ["Ada", "42"] },
          { phone_number: "15550001002", template_parameters: { "1": "Lin", "2": "7" } },
          { phone_number: "15550001003", template_parameters: ["only one"] },
          { phone_number: "abc", template_parameters: ["a", "b"] },
          { template_parameters: ["a", "b"] },
          "not an object",
          { contact_id: "00000000-0000-4000-8000-00000000dead", template_parameters: ["a", "b"] },
          { contact_id: contactId, template_parameters: ["Ada", "1"] }
        ]
      }
    })
    assert.strictEqual(res.status, 201, res.text)
    assert.deepStrictEqual(res.body.data, {
      added: 3,
      duplicates: 1,
      errors: [
        "Recipient 3: Template parameter mismatch: the body has 2 variable(s), 1 given",
        "Recipient 4: phone_number is not a phone number",
        "Recipient 5: phone_number or contact_id is required",
        "Recipient 6: must be an object with phone_number or contact_id (strings) and template_parameters",
        "Recipient 7: contact_id does not name a contact of the project"
      ]
    })
    const again = await host.request("POST", `${BROADCASTS}/${b.id}/recipients`, { body: { recipients: [{ phone_number: "15550001002", template_parameters: ["x", "y"] }] } })
    assert.deepStrictEqual(again.body.data, { added: 0, duplicates: 1, errors: [] })
    for (const count of [0, 1001]) {
      const refused = await host.request("POST", `${BROADCASTS}/${b.id}/recipients`, { body: { recipients: Array.from({ length: count }, (_, i) => ({ phone_number: `1555100${i}`, template_parameters: ["a", "b"] })) } })
      assert.deepStrictEqual([refused.status, refused.body.error], [422, `recipients must hold 1 to 1,000 items; ${count} given`])
    }
    const thousand = await host.request("POST", `${BROADCASTS}/${b.id}/recipients`, { body: { recipients: phones(1000, "1555200").map((phone_number) => ({ phone_number, template_parameters: ["a", "b"] })) } })
    assert.deepStrictEqual(thousand.body.data, { added: 1000, duplicates: 0, errors: [] })

    const listed = await host.request("GET", `${BROADCASTS}/${b.id}/recipients?per_page=100&page=11`)
    assert.strictEqual(listed.status, 200, listed.text)
    assert.deepStrictEqual(listed.body.meta, { page: 11, per_page: 100, total_pages: 11, total_count: 1003 })
    const oldest = listed.body.data.at(-1)
    assert.deepStrictEqual(
      { phone: oldest.phone_number, status: oldest.status, message_id: oldest.message_id, params: oldest.template_parameters, contact: oldest.contact_id },
      { phone: "15550001001", status: "pending", message_id: null, params: ["Ada", "42"], contact: null }
    )
    assert.strictEqual(listed.body.data.find((r: { contact_id: string | null }) => r.contact_id !== null)?.phone_number, "15557770001")
    assert.strictEqual((await host.request("GET", `${BROADCASTS}/${b.id}/recipients?status=sent`)).body.meta.total_count, 0)
    assert.strictEqual((await get(b.id)).pending_count, 1003)

    const cleared = await host.request("DELETE", `${BROADCASTS}/${b.id}/recipients`)
    assert.strictEqual(cleared.status, 200, cleared.text)
    assert.strictEqual(cleared.body.data.total_recipients, 0)
    assert.strictEqual((await host.request("GET", `${BROADCASTS}/${b.id}/recipients`)).body.meta.total_count, 0)
    assert.strictEqual((await host.request("DELETE", `${BROADCASTS}/${b.id}/recipients`, { key: host.otherKey })).status, 404)
  })

  it("schedules, cancels and moves a schedule back to draft; refuses what 3.4 refuses", async () => {
    const t = await approvedTemplate("Hi {{1}}!")
    const b = await create(t.id)
    const soon = new Date(Date.now() + 5 * 60_000).toISOString()
    const empty = await host.request("POST", `${BROADCASTS}/${b.id}/schedule`, { body: { scheduled_at: soon } })
    assert.deepStrictEqual([empty.status, empty.body.error], [422, "The broadcast has no recipients"])
    const sendEmpty = await host.request("POST", `${BROADCASTS}/${b.id}/send`)
    assert.deepStrictEqual([sendEmpty.status, sendEmpty.body.error], [422, "The broadcast has no recipients"])
    await addAll(b.id, ["15550002001"])
    for (const at of [new Date(Date.now() + 30_000).toISOString(), new Date(Date.now() + 31 * 24 * 3_600_000).toISOString(), "tomorrow"]) {
      const res = await host.request("POST", `${BROADCASTS}/${b.id}/schedule`, { body: { scheduled_at: at } })
      assert.strictEqual(res.status, 422, res.text)
    }
    const scheduled = await host.request("POST", `${BROADCASTS}/${b.id}/schedule`, { body: { scheduled_at: soon } })
    assert.strictEqual(scheduled.status, 202, scheduled.text)
    assert.deepStrictEqual([scheduled.body.data.status, scheduled.body.data.scheduled_at], ["scheduled", soon])
    const closed = await host.request("POST", `${BROADCASTS}/${b.id}/recipients`, { body: { recipients: [{ phone_number: "15550002002", template_parameters: ["x"] }] } })
    assert.deepStrictEqual([closed.status, closed.body.error], [422, "Recipients can only be added to a draft broadcast; this one is scheduled"])
    const renameScheduled = await host.request("PATCH", `${BROADCASTS}/${b.id}`, { body: { name: "x" } })
    assert.strictEqual(renameScheduled.status, 422)
    const cancelled = await host.request("POST", `${BROADCASTS}/${b.id}/cancel`)
    assert.deepStrictEqual([cancelled.status, cancelled.body.data.status, cancelled.body.data.scheduled_at], [200, "draft", null])
    const cancelDraft = await host.request("POST", `${BROADCASTS}/${b.id}/cancel`)
    assert.deepStrictEqual([cancelDraft.status, cancelDraft.body.error], [422, "Only a scheduled broadcast can be cancelled; this one is draft"])
    await host.request("POST", `${BROADCASTS}/${b.id}/schedule`, { body: { scheduled_at: soon } })
    const back = await host.request("PATCH", `${BROADCASTS}/${b.id}`, { body: { status: "draft" } })
    assert.deepStrictEqual([back.status, back.body.data.status, back.body.data.scheduled_at], [200, "draft", null])
    // A schedule kept from the create body.
    const withTime = await create(t.id, { scheduled_at: soon })
    assert.deepStrictEqual([withTime.status, withTime.scheduled_at], ["draft", soon])
    await addAll(withTime.id, ["15550002003"])
    const kept = await host.request("POST", `${BROADCASTS}/${withTime.id}/schedule`, { body: {} })
    assert.deepStrictEqual([kept.status, kept.body.data.scheduled_at], [202, soon])
  })

  it("sends to every recipient once, paced, logs progress, and counts deliveries, reads and responses", async () => {
    const t = await approvedTemplate("Hi {{1}}, the sale is on!")
    const b = await create(t.id)
    const numbers = phones(40, "1555300")
    await addAll(b.id, numbers)
    const before = (await run(host.simulator.outbox(pnid))).length
    const started = Date.now()
    const sent = await host.request("POST", `${BROADCASTS}/${b.id}/send`)
    assert.strictEqual(sent.status, 202, sent.text)
    assert.strictEqual(sent.body.data.status, "sending")
    assert.isString(sent.body.data.started_at)
    const again = await host.request("POST", `${BROADCASTS}/${b.id}/send`)
    assert.deepStrictEqual([again.status, again.body.error], [422, "Only a draft or scheduled broadcast can be sent; this one is sending"])
    const done = await untilStatus(b.id, "completed")
    // 40 messages at under 80 a second take at least half a second.
    assert.isAtLeast(Date.now() - started, 40 * 1000 / 80 - 50)
    assert.isString(done.completed_at)
    const outbox = (await run(host.simulator.outbox(pnid))).slice(before)
    assert.deepStrictEqual(outbox.map((m) => m.to).sort(), [...numbers].sort(), "each recipient exactly once")
    assert.strictEqual(outbox[0]!.type, "template")
    assert.deepStrictEqual((outbox[0]!.envelope as { template: unknown }).template, {
      name: t.name,
      language: { code: "en_US" },
      components: [{ type: "body", parameters: [{ type: "text", text: "Ada" }] }]
    })
    assert.strictEqual(done.sent_count, 40)
    assert.strictEqual(done.pending_count, 0)
    // The simulator reports deliveries; the counters follow them.
    await eventually("deliveries counted", async () => (await get(b.id)).delivered_count === 40, 20_000)
    await run(host.simulator.inbound(pnid, { from: numbers[0]!, message: { type: "text", text: { body: "Yes please" } } }))
    await eventually("the response counted", async () => (await get(b.id)).responded_count === 1, 10_000)
    const final = await get(b.id)
    assert.strictEqual(final.response_rate, 2.5)
    assert.deepStrictEqual(final.stats, { total: 40, sent: 40, failed: 0, delivered: 40, read: final.read_count, responded: 1, pending: 0, held: 0 })
    const recipients = await host.request("GET", `${BROADCASTS}/${b.id}/recipients?per_page=100&status=sent`)
    assert.strictEqual(recipients.body.meta.total_count, 40)
    const first = recipients.body.data.find((r: { phone_number: string }) => r.phone_number === numbers[0])
    assert.isTrue(first.message_id.startsWith("wamid."), first.message_id)
    assert.isString(first.sent_at)
    assert.isString(first.delivered_at)
    assert.isString(first.responded_at)
    const progress = host.logs.filter((l) => l.includes("Broadcast progress") && l.includes(b.id))
    assert.isAbove(progress.length, 0, "a progress line while sending")
    const line = JSON.parse(progress[0]!)
    for (const key of ["sent", "total", "rate_per_second", "eta_seconds"]) assert.isTrue(key in line.annotations, `${key} in ${progress[0]}`)
    const stopDone = await host.request("PATCH", `${BROADCASTS}/${b.id}`, { body: { status: "stopped" } })
    assert.deepStrictEqual([stopDone.status, stopDone.body.error], [422, "Only a sending broadcast can be stopped; this one is completed"])
  })

  it("stops on request, leaving the rest pending", async () => {
    const t = await approvedTemplate("Hi {{1}}!")
    const b = await create(t.id)
    await addAll(b.id, phones(400, "1555400"))
    await host.request("POST", `${BROADCASTS}/${b.id}/send`)
    await eventually("some sent", async () => (await get(b.id)).sent_count > 0)
    const stopped = await host.request("PATCH", `${BROADCASTS}/${b.id}`, { body: { status: "stopped" } })
    assert.strictEqual(stopped.status, 200, stopped.text)
    assert.deepStrictEqual([stopped.body.data.status, stopped.body.data.stop_reason], ["stopped", "manual"])
    assert.isString(stopped.body.data.stopped_at)
    // Sends already handed to the network when the stop came finish (on a loaded machine, for a while); then none.
    let settled = -1
    await eventually("the sends in flight at the stop settled", async () => {
      const previous = settled
      await new Promise((resolve) => setTimeout(resolve, 500))
      settled = (await get(b.id)).sent_count
      return settled === previous
    }, 20_000)
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const after = await get(b.id)
    assert.strictEqual(after.status, "stopped")
    assert.isAbove(after.pending_count, 0)
    assert.strictEqual(after.sent_count + after.pending_count, 400)
    assert.strictEqual(after.sent_count, settled, "nothing more is sent")
  })

  it("stops by itself when the template is paused", async () => {
    const t = await approvedTemplate("Hi {{1}}!")
    const b = await create(t.id)
    await addAll(b.id, phones(3, "1555500"))
    await run(host.simulator.setTemplateStatus(t.upstreamId, "PAUSED"))
    await host.request("POST", `${BROADCASTS}/${b.id}/send`)
    const stopped = await untilStatus(b.id, "stopped")
    assert.strictEqual(stopped.stop_reason, "template_paused")
    assert.strictEqual(stopped.pending_count, 3)
  })

  it("suppresses blocked contacts and marks refused sends failed, never throttled ones", async () => {
    const t = await approvedTemplate("Hi {{1}}!")
    const blocked = "15556000001"
    await run(host.simulator.inbound(pnid, { from: blocked, message: { type: "text", text: { body: "hello" } } }))
    const block = await host.request("POST", `/proxy/${pnid}/block_users`, { raw: JSON.stringify({ messaging_product: "whatsapp", block_users: [{ user: blocked }] }) })
    assert.strictEqual(block.status, 200, block.text)
    const unreachable = "15556000002"
    await run(host.simulator.setReachable(unreachable, false))
    // The network allows far less than the sender's pace: 130429 refusals are retried with backoff.
    await run(host.simulator.updateNumber(pnid, { throughputPerSecond: 5 }))
    try {
      const b = await create(t.id)
      const others = phones(12, "1555610")
      await addAll(b.id, [blocked, unreachable, ...others])
      await host.request("POST", `${BROADCASTS}/${b.id}/send`)
      const done = await untilStatus(b.id, "completed", 40_000)
      assert.deepStrictEqual([done.sent_count, done.pending_count], [12, 0])
      await eventually("the unreachable one failed", async () => (await get(b.id)).failed_count === 2, 20_000)
      const listed = (await host.request("GET", `${BROADCASTS}/${b.id}/recipients?per_page=100`)).body.data
      const of = (phone: string) => listed.find((r: { phone_number: string }) => r.phone_number === phone)
      assert.deepStrictEqual([of(blocked).status, of(blocked).error_details], ["suppressed", { error_code: "blocked", error_subcode: null }])
      assert.strictEqual(of(unreachable).status, "failed")
      const outbox = await run(host.simulator.outbox(pnid))
      assert.strictEqual(outbox.filter((m) => m.to === blocked).length, 0, "a suppressed contact is not sent")
      for (const phone of others) assert.strictEqual(outbox.filter((m) => m.to === phone).length, 1, `${phone} once`)
    } finally {
      await run(host.simulator.updateNumber(pnid, { throughputPerSecond: 80 }))
      await run(host.simulator.setReachable(unreachable, true))
    }
  }, 90_000)
})
