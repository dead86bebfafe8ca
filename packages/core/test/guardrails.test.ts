/**
 * Guardrails end to end on memory ports, the network simulator and the test clock (issue 32 §1, §2): a contact's
 * STOP is honoured by a broadcast, a workflow template send and an agent send, each with its reason; START undoes it;
 * erasure removes it. A broadcast to contacts in two time zones sends to the one outside quiet hours and holds the
 * other until its window opens. A capped marketing send is skipped with its reason.
 */
import { assert, describe, it } from "@effect/vitest"
import { Clock, Effect, Layer, Option } from "effect"
import { TestClock } from "effect/testing"
import { ProviderModels } from "../src/ai/ProviderModels.ts"
import { Broadcasts } from "../src/broadcasts/Broadcasts.ts"
import { ContactErasures } from "../src/erasure/ContactErasures.ts"
import { Executions } from "../src/executions/Executions.ts"
import { DEFAULT_OPT_IN_CONFIRMATION, DEFAULT_OPT_OUT_CONFIRMATION } from "../src/guardrails/Guardrail.ts"
import { Guardrails } from "../src/guardrails/Guardrails.ts"
import { OptOuts } from "../src/guardrails/OptOuts.ts"
import { SendPolicy, sendRequest, SNAPSHOT_FRESH_MS } from "../src/guardrails/SendPolicy.ts"
import { MessageConfigsRepo } from "../src/messaging/numbers/MessageConfigsRepo.ts"
import { Messaging } from "../src/messaging/Messaging.ts"
import { Outbound } from "../src/messaging/Outbound.ts"
import { Templates } from "../src/messaging/templates/Templates.ts"
import { MessagingNetwork } from "../src/network/MessagingNetwork.ts"
import { Simulator } from "../src/simulators/index.ts"
import { ModelSimulator } from "../src/simulators/model/ModelSimulator.ts"
import { memoryModelEndpoint } from "../src/testing/MemoryLanguageModels.ts"
import { layerMemoryParley, sandboxProject, settle, simulatedContact } from "../src/testing/MemoryParley.ts"
import { Triggers } from "../src/workflows/Triggers.ts"
import { Workflows } from "../src/workflows/Workflows.ts"

const steps = Effect.yieldNow.pipe(Effect.repeat({ times: 50 }))
/** Lets `ms` of test time pass in 10 ms steps, everything due running as it goes. */
const pass = (ms: number) =>
  Effect.gen(function*() {
    for (let t = 0; t < ms; t += 10) yield* Effect.andThen(TestClock.adjust("10 millis"), steps)
  })

const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({
  id,
  type: "flow-node",
  position: { x: 0, y: 0 },
  data: { node_type, config }
})
const edge = (source: string, target: string) => ({ id: `${source}-${target}`, source, target, label: "next" })
const page = { mode: "page", page: 1, perPage: 50 } as const
const MODEL = "sim-agent"

const given = Effect.gen(function*() {
  const project = yield* sandboxProject("Acme")
  const { principal, phoneNumberId, msgConfigId } = project
  const config = Option.getOrThrow(yield* (yield* MessageConfigsRepo).findById(principal.project.id, msgConfigId))
  const created = yield* (yield* MessagingNetwork).createTemplate({ accessToken: config.access_token }, config.business_account_id, {
    name: "spring_sale",
    language: "en_US",
    category: "MARKETING",
    components: [{ type: "BODY", text: "Hi {{1}}, the sale is on!", example: { body_text: [["Ada"]] } }]
  })
  yield* (yield* Simulator.running).setTemplateStatus(created.value.id, "APPROVED")
  const listed = yield* (yield* Templates).list(principal, { phone_number_id: phoneNumberId, name: "spring_sale" }, page)
  const templateId = listed.items[0]!.id
  const broadcasts = yield* Broadcasts
  const broadcast = (phones: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const { broadcast } = yield* broadcasts.create(principal, { name: "Sale", msg_config_id: msgConfigId, msg_template_id: templateId })
      yield* broadcasts.addRecipients(principal, broadcast.id, phones.map((phone_number) => ({ phone_number, template_parameters: ["Ada"] })))
      yield* broadcasts.send(principal, broadcast.id)
      return broadcast.id
    })
  const recipients = (id: string) =>
    Effect.map(broadcasts.listRecipients(principal, id, undefined, page), (slice) =>
      Object.fromEntries(slice.items.map((r) => [r.phone_number, [r.effective_status, r.error_details?.error_code ?? null]])))
  return { ...project, config, templateId, broadcasts, broadcast, recipients }
})

describe("guardrails", () => {
  it.effect("a STOP is honoured by a broadcast, a workflow template send and an agent send; START undoes it; erasure removes it", () =>
    Effect.gen(function*() {
      const g = yield* given
      const optOuts = yield* OptOuts
      const ada = yield* simulatedContact(g.phoneNumberId, "+15550001111", "Ada")
      const bob = yield* simulatedContact(g.phoneNumberId, "+15550002222", "Bob")

      // "stop sending me the bill" is not a keyword: only a whole message is.
      yield* ada.say("stop sending me the bill")
      yield* settle
      assert.strictEqual((yield* optOuts.list(g.principal.project.id, {}, page)).total, 0)
      yield* ada.say(" Stop! ")
      yield* settle
      yield* pass(500)
      const listed = yield* optOuts.list(g.principal.project.id, { phone_number: "+1 555 000 1111" }, page)
      assert.deepStrictEqual(listed.items.map((o) => [o.msg_config_id, o.source, o.keyword]), [[g.msgConfigId, "keyword", "STOP"]])
      // A filter that names no recipient matches none: not a refusal of a parameter the contract types as a string.
      assert.strictEqual((yield* optOuts.list(g.principal.project.id, { phone_number: "call me" }, page)).total, 0)
      assert.deepStrictEqual(yield* ada.received, [DEFAULT_OPT_OUT_CONFIRMATION])

      // A broadcast: Ada suppressed with the reason, Bob sent.
      const first = yield* g.broadcast([ada.phone, bob.phone])
      yield* pass(3000)
      assert.deepStrictEqual(yield* g.recipients(first), { [ada.phone]: ["suppressed", "opted_out"], [bob.phone]: ["sent", null] })

      // A workflow's template send: skipped with its reason, the run goes on.
      const workflows = yield* Workflows
      const executions = yield* Executions
      const promo = yield* workflows.create(g.principal, {
        name: "Promo",
        status: "active",
        definition: {
          nodes: [node("start", "start"), node("promo", "send_template", { template_id: g.templateId, parameters: ["Ada"] })],
          edges: [edge("start", "promo")]
        }
      })
      const run = yield* executions.start(g.principal, promo.id, { phone_number: ada.phone }, { ip: null, user_agent: null })
      yield* settle
      const promoRun = yield* executions.get(g.principal, run.id)
      const skipped = promoRun.events.filter((e) => e.event_type === "action_skipped")
      assert.deepStrictEqual(skipped.map((e) => (e.payload["error"] as { code: string }).code), ["opted_out"])
      assert.strictEqual(promoRun.status, "ended")

      // An agent's send: refused with the reason, which the agent's step events carry.
      const endpoint = memoryModelEndpoint()
      yield* (yield* ProviderModels).declare({ name: MODEL, model: endpoint.upstream_model, base_url: endpoint.base_url })
      yield* (yield* ModelSimulator).script([{ text: "Ada, a new offer just for you!" }])
      const helper = yield* workflows.create(g.principal, {
        name: "Agent",
        status: "active",
        definition: {
          nodes: [node("start", "start"), node("agent", "agent", { provider_model_name: MODEL, system_prompt: "You sell." })],
          edges: [edge("start", "agent")]
        }
      })
      const agentRun = yield* executions.start(g.principal, helper.id, { phone_number: ada.phone }, { ip: null, user_agent: null })
      yield* settle
      const agentEvents = (yield* executions.get(g.principal, agentRun.id)).events
      const refused = agentEvents.filter((e) => e.event_type === "action_failed").map((e) => (e.payload["error"] as { code?: string }).code)
      assert.include(refused, "opted_out")
      assert.deepStrictEqual(yield* ada.received, [DEFAULT_OPT_OUT_CONFIRMATION])

      // A send through the API (the proxy's path) is refused with the reason too.
      const direct = yield* (yield* Outbound).send(g.config, {
        messaging_product: "whatsapp",
        to: ada.phone,
        type: "template",
        template: { name: "spring_sale", language: { code: "en_US" }, components: [{ type: "body", parameters: [{ type: "text", text: "Ada" }] }] }
      }, { origin: "api" })
      assert.deepStrictEqual(direct._tag === "Withheld" ? direct.withheld.reason : direct._tag, "opted_out")

      // START undoes it: confirmed, and the next broadcast reaches Ada.
      yield* ada.say("start")
      yield* settle
      yield* pass(500)
      assert.strictEqual((yield* optOuts.list(g.principal.project.id, {}, page)).total, 0)
      assert.deepStrictEqual(yield* ada.received, [DEFAULT_OPT_OUT_CONFIRMATION, DEFAULT_OPT_IN_CONFIRMATION])
      const second = yield* g.broadcast([ada.phone])
      yield* pass(3000)
      assert.deepStrictEqual(yield* g.recipients(second), { [ada.phone]: ["sent", null] })

      // Erasure removes the opt-out with the contact.
      yield* ada.say("STOP")
      yield* settle
      assert.strictEqual((yield* optOuts.list(g.principal.project.id, {}, page)).total, 1)
      const erasures = yield* ContactErasures
      const erasure = yield* erasures.request(g.principal.project.id, ada.phone)
      yield* erasures.run(erasure.id)
      assert.strictEqual((yield* optOuts.list(g.principal.project.id, {}, page)).total, 0)
    }).pipe(Effect.provide(Layer.fresh(layerMemoryParley))), 120_000)

  it.effect("a broadcast sends to the contact outside quiet hours and holds the other until its window opens", () =>
    Effect.gen(function*() {
      const g = yield* given
      // The test clock starts at 1970-01-01T00:00Z: about 09:00 in Tokyo (UTC+9) and 19:00 in New York (UTC-5). Quiet
      // hours from 22:00 to three minutes after Tokyo's present time hold Tokyo and not New York.
      const startedAt = yield* Clock.currentTimeMillis
      const tokyoMinutes = Math.floor(startedAt / 60_000 + 9 * 60) % 1440
      const opens = tokyoMinutes + 3
      const hhmm = (m: number) => `${String(Math.floor(m / 60)).padStart(2, "0")}:${String(m % 60).padStart(2, "0")}`
      yield* (yield* Guardrails).putSettings(g.principal.project.id, null, {
        opt_out_keywords: null,
        opt_in_keywords: null,
        opt_out_confirmation: null,
        opt_in_confirmation: null,
        quiet_hours: { start: "22:00", end: hhmm(opens), days: [] },
        frequency_caps: null
      })
      const tokyo = "81312345678"
      const newYork = "12125550100"
      const id = yield* g.broadcast([tokyo, newYork])
      yield* pass(3000)
      assert.deepStrictEqual(yield* g.recipients(id), { [tokyo]: ["pending", null], [newYork]: ["sent", null] })
      const held = yield* g.broadcasts.get(g.principal, id)
      assert.deepStrictEqual([held.broadcast.status, held.counts.sent, held.counts.pending, held.counts.held], ["sending", 1, 1, 1])

      // Still held until Tokyo's window opens; sent once it does.
      const openAt = (Math.floor(startedAt / 60_000) + 3) * 60_000
      yield* TestClock.adjust(openAt - (yield* Clock.currentTimeMillis) - 5_000)
      yield* pass(2000)
      assert.strictEqual((yield* g.broadcasts.get(g.principal, id)).counts.held, 1)
      yield* TestClock.adjust("5 seconds")
      yield* pass(3000)
      const done = yield* g.broadcasts.get(g.principal, id)
      assert.deepStrictEqual([done.broadcast.status, done.counts.sent, done.counts.held], ["completed", 2, 0])
    }).pipe(Effect.provide(Layer.fresh(layerMemoryParley))), 120_000)

  it.effect("a workflow's template send waits for the end of quiet hours; a reply to a contact who just wrote is not held", () =>
    Effect.gen(function*() {
      const g = yield* given
      const startedAt = yield* Clock.currentTimeMillis
      const tokyoMinutes = Math.floor(startedAt / 60_000 + 9 * 60) % 1440
      const hhmm = (m: number) => `${String(Math.floor(m / 60)).padStart(2, "0")}:${String(m % 60).padStart(2, "0")}`
      yield* (yield* Guardrails).putSettings(g.principal.project.id, null, {
        opt_out_keywords: null,
        opt_in_keywords: null,
        opt_out_confirmation: null,
        opt_in_confirmation: null,
        quiet_hours: { start: "22:00", end: hhmm(tokyoMinutes + 3), days: [] },
        frequency_caps: null
      })
      const kenji = yield* simulatedContact(g.phoneNumberId, "+81312345678", "Kenji")
      const workflows = yield* Workflows
      const executions = yield* Executions

      // A reply: the contact writes, the workflow it starts answers at once.
      const replies = yield* workflows.create(g.principal, {
        name: "Replies",
        status: "draft",
        message_debounce_seconds: 0,
        definition: { nodes: [node("start", "start"), node("hi", "send_text", { message: "Hello Kenji" })], edges: [edge("start", "hi")] }
      })
      yield* (yield* Triggers).create(g.principal, replies.id, { trigger_type: "inbound_message", phone_number_id: g.phoneNumberId })
      yield* workflows.update(g.principal, replies.id, { status: "active" })
      yield* kenji.say("hi")
      yield* settle
      assert.deepStrictEqual(yield* kenji.received, ["Hello Kenji"])
      yield* workflows.update(g.principal, replies.id, { status: "draft" })

      // Twenty minutes later he is no longer being answered: a template send of an API-started run waits.
      yield* TestClock.adjust("20 minutes")
      const quietHours = { start: "22:00", end: hhmm(tokyoMinutes + 25), days: [] }
      yield* (yield* Guardrails).putSettings(g.principal.project.id, null, {
        opt_out_keywords: null,
        opt_in_keywords: null,
        opt_out_confirmation: null,
        opt_in_confirmation: null,
        quiet_hours: quietHours,
        frequency_caps: null
      })
      const promo = yield* workflows.create(g.principal, {
        name: "Promo",
        status: "active",
        definition: {
          nodes: [node("start", "start"), node("promo", "send_template", { template_id: g.templateId, parameters: ["Kenji"] })],
          edges: [edge("start", "promo")]
        }
      })
      const run = yield* executions.start(g.principal, promo.id, { phone_number: kenji.phone }, { ip: null, user_agent: null })
      yield* settle
      const waiting = yield* executions.get(g.principal, run.id)
      assert.strictEqual(waiting.status, "running")
      assert.strictEqual((yield* kenji.envelopes).length, 1)
      const opensAt = (Math.floor(startedAt / 60_000) + 25) * 60_000
      yield* TestClock.adjust(opensAt - (yield* Clock.currentTimeMillis) + 1000)
      yield* settle
      yield* pass(1000)
      const sent = yield* executions.get(g.principal, run.id)
      assert.strictEqual(sent.status, "ended", JSON.stringify(sent.error_details))
      assert.deepStrictEqual((yield* kenji.envelopes).map((e) => e["type"]), ["text", "template"])
    }).pipe(Effect.provide(Layer.fresh(layerMemoryParley))), 120_000)

  it.effect("the network's 131050 refusal records the recipient's opt-out of the number", () =>
    Effect.gen(function*() {
      const g = yield* given
      const policy = yield* SendPolicy
      const request = sendRequest(g.config, { messaging_product: "whatsapp", to: "15550004444", type: "template", template: { name: "spring_sale" } }, { origin: "broadcast" }, {
        waId: "15550004444",
        userId: undefined
      })
      yield* policy.refused(request, 131026)
      assert.strictEqual((yield* (yield* OptOuts).list(g.principal.project.id, {}, page)).total, 0)
      yield* policy.refused(request, 131050)
      yield* policy.refused(request, 131050)
      const listed = yield* (yield* OptOuts).list(g.principal.project.id, {}, page)
      assert.deepStrictEqual(listed.items.map((o) => [o.recipient, o.msg_config_id, o.source]), [["15550004444", g.msgConfigId, "network"]])
      const withheld = yield* policy.check(request)
      assert.deepStrictEqual(Option.map(withheld, (w) => w.reason), Option.some("opted_out"))
    }).pipe(Effect.provide(Layer.fresh(layerMemoryParley))), 120_000)

  it.effect("a batch's read of its recipients decides their sends while fresh, and is read again as it ages: an opt-out committed before the read, or SNAPSHOT_FRESH_MS before the check, withholds", () =>
    Effect.gen(function*() {
      const g = yield* given
      const policy = yield* SendPolicy
      const optOuts = yield* OptOuts
      const projectId = g.principal.project.id
      const check = (to: string, snapshot: Parameters<typeof sendRequest>[2]["guardrailFacts"]) => {
        const envelope = { messaging_product: "whatsapp", to, type: "template", template: { name: "spring_sale", language: { code: "en_US" } } }
        const request = sendRequest(g.config, envelope, { origin: "broadcast", guardrailFacts: snapshot }, { waId: to, userId: undefined })
        return Effect.map(policy.check(request), (withheld) => Option.getOrNull(Option.map(withheld, (w) => w.reason)))
      }
      yield* optOuts.add(projectId, { phone_number: "15550000001" })
      const batch = yield* policy.batchFacts({ projectId, msgConfigId: g.msgConfigId }, ["15550000001", "15550000002"])
      const snapshot = yield* batch.current
      assert.deepStrictEqual([...snapshot.facts.keys()], ["15550000001"])
      yield* optOuts.add(projectId, { phone_number: "15550000002" })
      yield* optOuts.add(projectId, { phone_number: "15550000003" })

      // Before the read: withheld from the read.
      assert.strictEqual(yield* check("15550000001", snapshot), "opted_out")
      // After the read, inside the bound: the batch's read decides (that is what spares a read per send).
      yield* TestClock.adjust(SNAPSHOT_FRESH_MS - 1)
      assert.strictEqual(yield* check("15550000002", snapshot), null)
      // A recipient the read did not cover is read on its own.
      assert.strictEqual(yield* check("15550000003", snapshot), "opted_out")
      // SNAPSHOT_FRESH_MS after the read began, every check reads again: the opt-out withholds.
      yield* TestClock.adjust(1)
      assert.strictEqual(yield* check("15550000002", snapshot), "opted_out")
      // The batch's read, asked for again once half the bound passed, is read again: it sees the later opt-out.
      const renewed = yield* batch.current
      assert.isTrue(renewed !== snapshot)
      assert.deepStrictEqual([...renewed.facts.keys()].sort(), ["15550000001", "15550000002"])
      assert.strictEqual(yield* batch.current, renewed)
      assert.strictEqual(yield* check("15550000002", renewed), "opted_out")
      // Without a batch's read, a send reads its recipient when it is checked.
      assert.strictEqual(yield* check("15550000002", undefined), "opted_out")
      assert.strictEqual(yield* check("15550000004", undefined), null)
    }).pipe(Effect.provide(Layer.fresh(layerMemoryParley))), 120_000)

  it.effect("a late 131050 in a failed status report records the opt-out once, as the synchronous refusal does", () =>
    Effect.gen(function*() {
      const g = yield* given
      const to = "15550006666"
      const envelope = {
        messaging_product: "whatsapp",
        to,
        type: "template",
        template: { name: "spring_sale", language: { code: "en_US" }, components: [{ type: "body", parameters: [{ type: "text", text: "Ada" }] }] }
      }
      const sent = yield* (yield* Outbound).send(g.config, envelope, { origin: "api" })
      assert.strictEqual(sent._tag, "Accepted", JSON.stringify(sent))
      const networkId = (sent as { readonly networkId: string | undefined }).networkId!
      const stored = yield* OptOuts
      const optOuts = () => Effect.map(stored.list(g.principal.project.id, {}, page), (l) => l.items.map((o) => [o.recipient, o.msg_config_id, o.source]))
      assert.deepStrictEqual(yield* optOuts(), [])

      // The network accepted the send, then reports it failed: the user stopped marketing messages.
      const seconds = String(Math.floor((yield* Clock.currentTimeMillis) / 1000))
      const report = (code: number) => ({
        id: networkId,
        status: "failed",
        timestamp: seconds,
        recipient_id: to,
        errors: [{ code, title: "Message failed", message: "Message failed" }]
      })
      const messaging = yield* Messaging
      yield* messaging.applyStatuses(g.config, [report(131050)])
      yield* settle
      yield* pass(500)
      assert.deepStrictEqual(yield* optOuts(), [[to, g.msgConfigId, "network"]])

      // The same report again, and the synchronous refusal of a later send: still one opt-out.
      yield* messaging.applyStatuses(g.config, [report(131050)])
      yield* (yield* SendPolicy).refused(sendRequest(g.config, envelope, { origin: "api" }, { waId: to, userId: undefined }), 131050)
      yield* settle
      yield* pass(500)
      assert.deepStrictEqual(yield* optOuts(), [[to, g.msgConfigId, "network"]])
    }).pipe(Effect.provide(Layer.fresh(layerMemoryParley))), 120_000)

  it.effect("a number's own keywords and confirmation replace the project's; a weekly project-wide cap skips the third marketing send", () =>
    Effect.gen(function*() {
      const g = yield* given
      const guardrails = yield* Guardrails
      const none = { opt_out_keywords: null, opt_in_keywords: null, opt_out_confirmation: null, opt_in_confirmation: null, quiet_hours: null, frequency_caps: null }
      yield* guardrails.putSettings(g.principal.project.id, null, { ...none, frequency_caps: { marketing_per_day: null, marketing_per_week: 2, scope: "project" } })
      yield* guardrails.putSettings(g.principal.project.id, g.msgConfigId, { ...none, opt_out_keywords: ["Basta ya"], opt_out_confirmation: "Hecho." })
      const eva = yield* simulatedContact(g.phoneNumberId, "+34600111222", "Eva")
      yield* eva.say("STOP")
      yield* settle
      assert.strictEqual((yield* (yield* OptOuts).list(g.principal.project.id, {}, page)).total, 0)
      yield* eva.say("¡basta   YA!")
      yield* settle
      yield* pass(500)
      const listed = yield* (yield* OptOuts).list(g.principal.project.id, {}, page)
      assert.deepStrictEqual(listed.items.map((o) => [o.recipient, o.keyword]), [["34600111222", "BASTA YA"]])
      assert.deepStrictEqual(yield* eva.received, ["Hecho."])

      const sends = [yield* g.broadcast(["15550005555"])]
      yield* pass(3000)
      sends.push(yield* g.broadcast(["15550005555"]))
      yield* pass(3000)
      sends.push(yield* g.broadcast(["15550005555"]))
      yield* pass(3000)
      const outcomes = yield* Effect.forEach(sends, (id) => Effect.map(g.recipients(id), (r) => r["15550005555"]))
      assert.deepStrictEqual(outcomes, [["sent", null], ["sent", null], ["suppressed", "frequency_cap"]])
    }).pipe(Effect.provide(Layer.fresh(layerMemoryParley))), 120_000)

  it.effect("a marketing template past the contact's daily cap is skipped with its reason", () =>
    Effect.gen(function*() {
      const g = yield* given
      yield* (yield* Guardrails).putSettings(g.principal.project.id, g.msgConfigId, {
        opt_out_keywords: null,
        opt_in_keywords: null,
        opt_out_confirmation: null,
        opt_in_confirmation: null,
        quiet_hours: null,
        frequency_caps: { marketing_per_day: 1, marketing_per_week: null, scope: "number" }
      })
      const first = yield* g.broadcast(["15550003333"])
      yield* pass(3000)
      const second = yield* g.broadcast(["15550003333"])
      yield* pass(3000)
      assert.deepStrictEqual(yield* g.recipients(first), { "15550003333": ["sent", null] })
      assert.deepStrictEqual(yield* g.recipients(second), { "15550003333": ["suppressed", "frequency_cap"] })
      // A day later the allowance is back.
      yield* TestClock.adjust("25 hours")
      const third = yield* g.broadcast(["15550003333"])
      yield* pass(3000)
      assert.deepStrictEqual(yield* g.recipients(third), { "15550003333": ["sent", null] })
    }).pipe(Effect.provide(Layer.fresh(layerMemoryParley))), 120_000)
})
