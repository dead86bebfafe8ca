/**
 * The README's order bot on a messaging host (its tour, "A workflow that answers"): a function that reads the
 * answer, an approved template, the graph with every position at (0,0), an inbound trigger; and one run of it
 * driven to its end by a contact who says hello, then yes.
 */
import { Effect, Exit, Scope } from "effect"
import { afterAll, assert, beforeAll } from "vitest"
import { connectSimulatedNumber, eventually, type MessagingHost, startMessagingHost } from "./messaging.support.ts"

export interface OrderBotHost {
  readonly host: MessagingHost
  readonly pnid: string
  readonly waba: string
}

/** A host over `ports` for the suite, the simulated number connected with its webhooks reaching ingestion. */
export const orderBotHostForSuite = (ports: Parameters<typeof startMessagingHost>[0], ready: (h: OrderBotHost) => void) => {
  let close: () => Promise<void> = () => Promise.resolve()
  beforeAll(async () => {
    const scope = Effect.runSync(Scope.make())
    await Effect.runPromise(Effect.gen(function*() {
      const host = yield* startMessagingHost(ports)
      const number = yield* connectSimulatedNumber(host, { sink: true })
      ready({ host, pnid: number.phoneNumberId, waba: number.businessAccountId })
    }).pipe(Effect.provideService(Scope.Scope, scope)))
    close = () => Effect.runPromise(Scope.close(scope, Exit.void))
  }, 120_000)
  afterAll(() => close())
}

const ok = (answer: { status: number; text: string }, status: number, what: string) => assert.strictEqual(answer.status, status, `${what}: ${answer.text}`)

/** Creates and activates the order bot; answers its id. */
export const createOrderBot = async ({ host, pnid, waba }: OrderBotHost): Promise<string> => {
  const fn = await host.request("POST", "/platform/v1/functions", {
    body: {
      function: {
        name: "Yes or no",
        code: "async function handler(request) { const { execution_context } = await request.json(); return Response.json({ next_edge: /^y/i.test(String(execution_context.vars.answer)) ? \"yes\" : \"no\" }) }"
      }
    }
  })
  ok(fn, 201, "function")
  ok(await host.request("POST", `/platform/v1/functions/${fn.body.data.id}/deploy`), 202, "deploy")
  await eventually("the function is deployed", async () =>
    (await host.request("GET", `/platform/v1/functions/${fn.body.data.id}`)).body.data.status === "deployed", 60_000)
  const name = `order_update_${Date.now()}`
  const template = await host.request("POST", `/proxy/v24.0/${waba}/message_templates`, {
    body: { name, language: "en_US", category: "UTILITY", components: [{ type: "BODY", text: "Your order {{1}} is on its way", example: { body_text: [["42"]] } }] }
  })
  ok(template, 200, "template")
  await Effect.runPromise(host.simulator.setTemplateStatus(template.body.id, "APPROVED"))
  const mirrored = await host.request("GET", `/platform/v1/msg/templates?phone_number_id=${pnid}&name=${name}`)
  const tpl: string = mirrored.body.data[0].id
  const n = (id: string, node_type: string, config: Record<string, unknown>) => ({ id, position: { x: 0, y: 0 }, data: { node_type, config } })
  const definition = {
    nodes: [
      n("start", "start", {}),
      n("hi", "send_text", { message: "Hi {{context.contact.name}}! Your order status? (yes/no)" }),
      n("ask", "wait_for_response", { save_response_to: "answer", has_timeout: true, timeout_seconds: 3600 }),
      n("route", "decide", { decision_type: "function", function_id: fn.body.data.id, conditions: [{ label: "yes" }, { label: "no" }] }),
      n("status", "send_template", { template_id: tpl, parameters: ["42"] }),
      n("human", "handoff", { reason: "Wants a person" })
    ],
    edges: [
      { source: "start", target: "hi" },
      { source: "hi", target: "ask" },
      { source: "ask", target: "route" },
      { source: "route", target: "status", label: "yes" },
      { source: "route", target: "human", label: "no" }
    ]
  }
  const workflow = await host.request("POST", "/platform/v1/workflows", {
    body: { workflow: { name: "Order bot", message_debounce_seconds: 0, definition } }
  })
  ok(workflow, 201, "workflow")
  const id: string = workflow.body.data.id
  ok(await host.request("POST", `/platform/v1/workflows/${id}/triggers`, { body: { trigger: { trigger_type: "inbound_message", phone_number_id: pnid } } }), 201, "trigger")
  ok(await host.request("PATCH", `/platform/v1/workflows/${id}`, { body: { workflow: { status: "active" } } }), 200, "activate")
  return id
}

/** A contact says hello, then "yes please": the run sends the template and ends. Answers the execution's id. */
export const runOrderBot = async ({ host, pnid }: OrderBotHost, workflowId: string, from: string): Promise<string> => {
  const say = async (body: string) =>
    ok(await host.request("POST", "/sandbox/inbound", {
      body: { phone_number_id: pnid, from, profile_name: "Bo", message: { type: "text", text: { body } } }
    }), 202, "inbound")
  const latest = async () => (await host.request("GET", `/platform/v1/workflows/${workflowId}/executions?limit=1`)).body.data[0]
  await say("hello")
  await eventually("the run waits for the answer", async () => (await latest())?.waiting_reason === "wait_for_response", 20_000)
  await say("yes please")
  await eventually("the run ends", async () => (await latest())?.status === "ended", 30_000)
  return (await latest()).id
}
