/**
 * The executions suite over real HTTP with the simulated network, run on memory ports
 * (`executions.http.test.ts`) and on PostgreSQL (`executions.http.pg.test.ts`): an API start sends its greeting (in
 * the sandbox outbox once), waits, is resumed; the record, its step events, the older surface's read, variables
 * discovery, status moves and the error answers of decisions 4.2.
 */
import { createParleyClient } from "@parley/client"
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, type Layer, Scope } from "effect"
import { eventually, hostForSuite, type MessagingHost } from "./messaging.support.ts"

/** The suite over a host built on `ports` (made inside the suite's scope). */
export const executionsOverHttp = (storage: string, ports: Effect.Effect<Layer.Layer<any, any, never>, unknown, Scope.Scope>) => {
  let host: MessagingHost
  let pnid: string
  hostForSuite(ports, (h, p) => {
    host = h
    pnid = p
  })

  const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({
    id,
    position: { x: 0, y: 0 },
    data: { node_type, config }
  })
  const edge = (source: string, target: string) => ({ source, target })

  const greeter = {
    nodes: [
      node("start", "start"),
      node("hi", "send_text", { message: "Hi {{vars.name}}" }),
      node("ask", "wait_for_response", { save_response_to: "answer", has_timeout: true, timeout_seconds: 600 }),
      node("thanks", "send_text", { message: "Thanks, {{answer}}" })
    ],
    edges: [edge("start", "hi"), edge("hi", "ask"), edge("ask", "thanks")]
  }

  const createWorkflow = async (status: string, definition: unknown = greeter) => {
    const res = await host.request("POST", "/platform/v1/workflows", { body: { workflow: { name: `W ${Math.random()}`, status, definition } } })
    assert.strictEqual(res.status, 201, res.text)
    return res.body.data.id as string
  }

  /** A contact writes in first, so the 24-hour window is open for free-form replies. */
  const writeIn = async (from: string) => {
    const res = await host.request("POST", "/sandbox/inbound", { body: { phone_number_id: pnid, from, message: { type: "text", text: { body: "hello" } } } })
    assert.strictEqual(res.status, 202, res.text)
    await eventually("the inbound message is stored", async () => {
      const conversations = await host.request("GET", `/platform/v1/msg/conversations?phone_number=${from}`)
      return conversations.body?.data?.length === 1
    })
  }

  const texts = async (to: string) => {
    const res = await host.request("GET", `/sandbox/outbox?phone_number_id=${pnid}`)
    return (res.body.data as Array<{ to: string; type: string; envelope: { text?: { body: string } } }>)
      .filter((m) => m.to === to && m.type === "text")
      .map((m) => m.envelope.text!.body)
  }

  const start = (workflowId: string, body: Record<string, unknown>, key?: string) =>
    host.request("POST", `/platform/v1/workflows/${workflowId}/executions`, { body: { workflow_execution: body }, ...(key ? { key } : {}) })

  describe(`executions over HTTP (${storage})`, () => {
    it("starts (202, readable at once), greets once, waits, is resumed and ends, with its step events", async () => {
      const phone = "15557770001"
      await writeIn(phone)
      const workflowId = await createWorkflow("active")
      const ack = await start(workflowId, { phone_number: `+${phone}`, phone_number_id: pnid, variables: { name: "Ada" } })
      assert.strictEqual(ack.status, 202, ack.text)
      assert.deepStrictEqual(Object.keys(ack.body.data).sort(), ["id", "message", "tracking_id", "workflow_id"])
      assert.strictEqual(ack.body.data.message, "Workflow execution started")
      const id = ack.body.data.id as string
      const first = await host.request("GET", `/platform/v1/workflow_executions/${id}`)
      assert.strictEqual(first.status, 200)

      await eventually("the run waits for the reply", async () =>
        (await host.request("GET", `/platform/v1/workflow_executions/${ack.body.data.tracking_id}`)).body.data.status === "waiting")
      assert.deepStrictEqual(await texts(phone), ["Hi Ada"])

      const resumed = await host.request("POST", `/platform/v1/workflow_executions/${id}/resume`, { body: { message: { kind: "text", data: "Fine" } } })
      assert.strictEqual(resumed.status, 200, resumed.text)
      assert.strictEqual(resumed.body.data.requested_execution_id, id)
      assert.isNull(resumed.body.data.parent_flow_execution_id)
      await eventually("the run ends", async () => (await host.request("GET", `/platform/v1/workflow_executions/${id}`)).body.data.status === "ended")
      assert.deepStrictEqual(await texts(phone), ["Hi Ada", "Thanks, Fine"])

      const detail = (await host.request("GET", `/platform/v1/workflow_executions/${id}`)).body.data
      assert.strictEqual(detail.execution_context.vars.answer, "Fine")
      assert.isNotNull(detail.msg_conversation_id)
      const events = await host.request("GET", `/platform/v1/workflow_executions/${id}/events?event_type=action_performed,execution_ended`)
      assert.strictEqual(events.status, 200)
      assert.deepStrictEqual(events.body.data.map((e: { event_type: string }) => e.event_type), ["execution_ended", "action_performed", "action_performed"])
      const one = await host.request("GET", `/platform/v1/workflow_events/${events.body.data[1].id}`)
      assert.strictEqual(one.body.data.payload.action, "send_text")

      const listed = await host.request("GET", `/platform/v1/workflows/${workflowId}/executions?status=ended`)
      assert.deepStrictEqual(listed.body.data.map((e: { id: string }) => e.id), [id])
      const byConversation = await host.request("GET", `/platform/v1/msg/conversations/${detail.msg_conversation_id}/flow_executions`)
      assert.deepStrictEqual(byConversation.body.data.map((e: { id: string }) => e.id), [id])

      const legacy = await host.request("GET", `/api/v1/flow_executions/${id}`)
      assert.strictEqual(legacy.status, 200, legacy.text)
      assert.strictEqual(legacy.body.data.flow_id, workflowId)
      assert.strictEqual(legacy.body.data.variables.answer, "Fine")
      assert.strictEqual(legacy.body.data.flow.id, workflowId)

      const workflow = (await host.request("GET", `/platform/v1/workflows/${workflowId}`)).body.data
      assert.strictEqual(workflow.execution_count, 1)
      assert.isNotNull(workflow.last_executed_at)

      const variables = await host.request("GET", `/platform/v1/workflows/${workflowId}/variables`)
      assert.strictEqual(variables.status, 200)
      assert.strictEqual(variables.body.data.fixed.system["system.flow_id"].always_available, true)
      const answer = variables.body.data.discovered.vars.find((v: { path: string }) => v.path === "vars.answer")
      assert.deepStrictEqual(answer, { path: "vars.answer", name: "answer", type: "string", sample_values: ["Fine"], usage_count: 1, last_seen_at: answer.last_seen_at, reference: "{{vars.answer}}" })
    })

    it("answers 404, 422 and 409 as decisions 4.2 says", async () => {
      const draft = await createWorkflow("draft")
      const notActive = await start(draft, { phone_number: "+15557770002" })
      assert.strictEqual(notActive.status, 422)
      assert.deepStrictEqual(notActive.body, { error: "Workflow is not active" })
      const active = await createWorkflow("active")
      assert.strictEqual((await start(active, { phone_number: "+15557770002" }, host.otherKey)).status, 404)
      assert.strictEqual((await start(active, {})).status, 422)
      assert.strictEqual((await host.request("GET", "/platform/v1/workflow_executions/00000000-0000-4000-8000-000000000000")).status, 404)
      assert.strictEqual((await host.request("GET", "/api/v1/flow_executions/nope")).status, 404)
      assert.strictEqual((await host.request("GET", "/platform/v1/msg/conversations/nope/flow_executions")).status, 404)

      await writeIn("15557770003")
      const ack = await start(active, { phone_number: "+15557770003", variables: { name: "Bo" } })
      const id = ack.body.data.id as string
      await eventually("waiting", async () => (await host.request("GET", `/platform/v1/workflow_executions/${id}`)).body.data.status === "waiting")
      const other = await host.request("GET", `/platform/v1/workflow_executions/${id}`, { key: host.otherKey })
      assert.strictEqual(other.status, 404, "another project's key sees nothing")
      const missing = await host.request("POST", `/platform/v1/workflow_executions/${id}/resume`, { body: { message: { kind: "payload" } } })
      assert.deepStrictEqual([missing.status, missing.body], [422, { error: "message.data is required" }])
      const badMove = await host.request("PATCH", `/platform/v1/workflow_executions/${id}`, { body: { workflow_execution: { status: "running" } } })
      assert.strictEqual(badMove.status, 422)
      const noBody = await host.request("PATCH", `/platform/v1/workflow_executions/${id}`, { body: {} })
      assert.strictEqual(noBody.status, 400)
      const handoff = await host.request("PATCH", `/platform/v1/workflow_executions/${id}`, { body: { workflow_execution: { status: "handoff" } } })
      assert.strictEqual(handoff.body.data.status, "handoff")
      const ended = await host.request("PATCH", `/platform/v1/workflow_executions/${id}`, { body: { workflow_execution: { status: "ended" } } })
      assert.strictEqual(ended.body.data.status, "ended")
      const late = await host.request("POST", `/platform/v1/workflow_executions/${id}/resume`, { body: { message: { data: "x" } } })
      assert.deepStrictEqual([late.status, late.body], [422, { error: "Execution is not waiting" }])
    })

    it("starts on an inbound message through the number's trigger, and the contact's reply resumes it", async () => {
      const phone = "15557770009"
      const workflowId = await createWorkflow("draft", {
        nodes: [
          node("start", "start"),
          node("hi", "send_text", { message: "Hi {{context.contact.name}}, you said {{last_user_input}}" }),
          node("ask", "wait_for_response", { save_response_to: "answer", has_timeout: true, timeout_seconds: 600 }),
          node("thanks", "send_text", { message: "Noted: {{answer}}" })
        ],
        edges: [edge("start", "hi"), edge("hi", "ask"), edge("ask", "thanks")]
      })
      const trigger = await host.request("POST", `/platform/v1/workflows/${workflowId}/triggers`, {
        body: { trigger: { trigger_type: "inbound_message", phone_number_id: pnid } }
      })
      assert.strictEqual(trigger.status, 201, trigger.text)
      const patched = await host.request("PATCH", `/platform/v1/workflows/${workflowId}`, { body: { workflow: { status: "active", message_debounce_seconds: 0 } } })
      assert.strictEqual(patched.status, 200, patched.text)
      const say = async (text: string) => {
        const res = await host.request("POST", "/sandbox/inbound", {
          body: { phone_number_id: pnid, from: phone, profile_name: "Ada", message: { type: "text", text: { body: text } } }
        })
        assert.strictEqual(res.status, 202, res.text)
      }
      await say("hello")
      await eventually("the greeting", async () => (await texts(phone)).length === 1)
      assert.deepStrictEqual(await texts(phone), ["Hi Ada, you said hello"])
      // Only this contact's runs: a message of an earlier test routed late may meet the new trigger too.
      const conversation = (await host.request("GET", `/platform/v1/msg/conversations?phone_number=${phone}`)).body.data[0].id
      const ours = `/platform/v1/workflows/${workflowId}/executions?msg_conversation_id=${conversation}`
      const runs = await host.request("GET", ours)
      assert.strictEqual(runs.body.data.length, 1)
      assert.strictEqual(runs.body.data[0].trigger_type, "inbound_message")
      await eventually("waiting", async () =>
        (await host.request("GET", `/platform/v1/workflow_executions/${runs.body.data[0].id}`)).body.data.status === "waiting")
      await say("all good")
      await eventually("the reply's answer", async () => (await texts(phone)).length === 2)
      assert.deepStrictEqual(await texts(phone), ["Hi Ada, you said hello", "Noted: all good"])
      // The reply reaches the network before the run's last checkpoint (the send's outcome, then the end) is written.
      await eventually("ended", async () =>
        (await host.request("GET", `/platform/v1/workflow_executions/${runs.body.data[0].id}`)).body.data.status === "ended")
      assert.strictEqual((await host.request("GET", ours)).body.data.length, 1, "the reply started nothing new")
    })

    it("closing the conversation ends its handoff run, and the contact's next message is not blocked", async () => {
      const phone = "15557770011"
      await writeIn(phone)
      const workflowId = await createWorkflow("active", {
        nodes: [node("start", "start"), node("human", "handoff", { reason: "needs a person" })],
        edges: [edge("start", "human")]
      })
      const ack = await start(workflowId, { phone_number: `+${phone}`, phone_number_id: pnid })
      assert.strictEqual(ack.status, 202, ack.text)
      const id = ack.body.data.id as string
      await eventually("handoff", async () => (await host.request("GET", `/platform/v1/workflow_executions/${id}`)).body.data.status === "handoff")
      const run = (await host.request("GET", `/platform/v1/workflow_executions/${id}`)).body.data
      assert.isString(run.msg_conversation_id, "attached to the conversation at start")
      const closed = await host.request("PATCH", `/platform/v1/msg/conversations/${run.msg_conversation_id}`, {
        body: { msg_conversation: { status: "ended" } }
      })
      assert.strictEqual(closed.status, 200, closed.text)
      const after = (await host.request("GET", `/platform/v1/workflow_executions/${id}`)).body.data
      assert.strictEqual(after.status, "ended", "the handoff ended with the conversation")
      const res = await host.request("POST", "/sandbox/inbound", { body: { phone_number_id: pnid, from: phone, message: { type: "text", text: { body: "back" } } } })
      assert.strictEqual(res.status, 202, res.text)
      await eventually("a new conversation", async () => {
        const active = await host.request("GET", `/platform/v1/msg/conversations?phone_number=${phone}&status=active`)
        return active.body.data.length === 1 && active.body.data[0].id !== run.msg_conversation_id
      })
      await eventually("the message is routed, not blocked", async () => {
        const messages = await host.request("GET", `/platform/v1/msg/messages?phone_number=${phone}&direction=inbound`)
        const latest = messages.body.data[0]
        return latest?.ext?.processing_status === "completed"
      })
    })

    it("PUT triggers keeps the ids of identical items of every type", async () => {
      const workflowId = await createWorkflow("draft")
      const items = [
        { trigger_type: "api_call" },
        { trigger_type: "msg_event", event: "msg.message.failed", phone_number_id: pnid },
        { trigger_type: "project_event", event_name: "order.paid" },
        { trigger_type: "project_event", event_name: "order.paid", property_key: "amount", operator: "gte", property_value: 100 }
      ]
      const first = await host.request("PUT", `/platform/v1/workflows/${workflowId}/triggers`, { body: { triggers: items } })
      assert.strictEqual(first.status, 200, first.text)
      const again = await host.request("PUT", `/platform/v1/workflows/${workflowId}/triggers`, { body: { triggers: items } })
      assert.strictEqual(again.status, 200, again.text)
      const ids = (res: typeof first) => res.body.data.map((t: { trigger_type: string; id: string }) => `${t.trigger_type}:${t.id}`)
      assert.deepStrictEqual(ids(again), ids(first))
    })

    it("logged no failure while it ran", () => {
      const failures = host.logs.filter((line) => line.includes("\"level\":\"ERROR\""))
      assert.deepStrictEqual(failures, [])
    })

    it("is reachable through the typed client", async () => {
      await writeIn("15557770004")
      const workflowId = await createWorkflow("active")
      const client = createParleyClient({ baseUrl: host.url, apiKey: host.key })
      try {
        const ack = await client.executions.start({ params: { id: workflowId }, payload: { workflow_execution: { phone_number: "+15557770004", variables: { name: "Cy" } } } })
        await eventually("waiting", async () => (await client.executions.get({ params: { id: ack.data.id } })).data.status === "waiting")
        const events = await client.executions.events({ params: { id: ack.data.id }, query: {} })
        assert.include(events.body.data.map((e) => e.event_type), "action_performed")
        const legacy = await client.flowExecutions.get({ params: { id: ack.data.id } })
        assert.strictEqual(legacy.data.variables["name"], "Cy")
      } finally {
        await client.close()
      }
    })
  })
}
