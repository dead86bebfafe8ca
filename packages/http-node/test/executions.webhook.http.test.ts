/**
 * A workflow's webhook node in the real host: the request goes out through
 * the Node `WebhookHttp` to a loopback receiver (`PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS=true`
 * for this host), once, and its JSON answer lands in the execution's vars.
 */
import { assert, describe, it } from "@effect/vitest"
import { Executions, Ids, Projects } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { connectSimulatedNumber, type MessagingHost, startMessagingHost } from "./messaging.support.ts"
import { type Receiver, startReceiver } from "./receiver.ts"

let host: MessagingHost
let receiver: Receiver
let close: () => Promise<void>

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    host = yield* startMessagingHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer), {
      PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS: "true"
    })
    yield* connectSimulatedNumber(host)
    receiver = yield* startReceiver
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
}, 60_000)
afterAll(() => close())

const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({
  id,
  type: "flow-node",
  position: { x: 0, y: 0 },
  data: { node_type, config }
})

describe("webhook node (Node host)", () => {
  it("posts the interpolated body to a real receiver and saves its JSON answer", async () => {
    receiver.answer((r) => ({ status: 200, body: JSON.stringify({ echoed: JSON.parse(r.raw.toString()).name }), headers: { "content-type": "application/json" } }))
    const created = await host.request("POST", "/platform/v1/workflows", {
      body: {
        workflow: {
          name: "Hook",
          status: "active",
          definition: {
            nodes: [
              node("start", "start"),
              node("hook", "webhook", {
                url: `${receiver.url}/orders/{{vars.order}}`,
                method: "POST",
                headers: { Authorization: "Bearer t-{{vars.order}}" },
                body_template: { name: "{{vars.name}}" },
                save_response_to: "answer"
              })
            ],
            edges: [{ id: "e1", source: "start", target: "hook", label: "next" }]
          }
        }
      }
    })
    assert.strictEqual(created.status, 201, created.text)
    const detail = await Effect.runPromise(Effect.gen(function*() {
      const principal = yield* Context.get(host.context, Projects).authenticate(host.key)
      const executions = Context.get(host.context, Executions)
      const ack = yield* executions.start(principal, created.body.data.id, { phone_number: "+15551234567", variables: { name: "Ada", order: 7 } }, {
        ip: null,
        user_agent: null
      })
      for (let i = 0; i < 100; i++) {
        const e = yield* executions.get(principal, ack.id)
        if (e.status !== "running") return e
        yield* Effect.sleep("50 millis")
      }
      return yield* executions.get(principal, ack.id)
    }))
    assert.strictEqual(detail.status, "ended", JSON.stringify(detail.error_details))
    assert.deepStrictEqual(detail.execution_context.vars.answer, { echoed: "Ada" })
    const got = receiver.requests.filter((r) => r.path === "/orders/7")
    assert.strictEqual(got.length, 1)
    assert.deepStrictEqual([got[0]!.method, got[0]!.headers["authorization"], got[0]!.headers["content-type"]], [
      "POST",
      "Bearer t-7",
      "application/json"
    ])
  })
})
