/**
 * A `call` node in the real host, on memory ports and on PostgreSQL with
 * pg-boss: the child is created in its parent's checkpoint, the parent waits
 * while the child waits, a resume of the parent reaches the child, and the
 * child's end resumes the parent in the same transaction.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { layerFromUrl, layerJobQueue, layerStorage } from "@parley/store-pg"
import { Effect, Exit, Layer, Scope } from "effect"
import { freshDatabase } from "../../store-pg/test/pg.ts"
import { eventually, hostForSuite, type MessagingHost } from "./messaging.support.ts"

const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({ id, position: { x: 0, y: 0 }, data: { node_type, config } })

const suite = (storage: string, ports: Effect.Effect<Layer.Layer<any, any, never>, unknown, Scope.Scope>) => {
  let host: MessagingHost
  let pnid: string
  hostForSuite(ports, (h, p) => {
    host = h
    pnid = p
  })

  const create = async (definition: unknown) => {
    const res = await host.request("POST", "/platform/v1/workflows", { body: { workflow: { name: `W ${Math.random()}`, status: "active", definition } } })
    assert.strictEqual(res.status, 201, res.text)
    return res.body.data.id as string
  }
  const get = async (id: string) => (await host.request("GET", `/platform/v1/workflow_executions/${id}`)).body.data

  describe(`call node (${storage})`, () => {
    it("waits on its waiting child, is resumed through it and goes on with the child's vars", async () => {
      const child = await create({
        nodes: [node("start", "start"), node("ask", "wait_for_response", { save_response_to: "answer" })],
        edges: [{ source: "start", target: "ask" }]
      })
      const parent = await create({
        nodes: [
          node("start", "start"),
          node("call", "call", { workflow_id: child }),
          node("after", "set_variable", { variable_name: "got", variable_value: "{{vars.answer}}!" })
        ],
        edges: [{ source: "start", target: "call" }, { source: "call", target: "after" }]
      })
      const ack = await host.request("POST", `/platform/v1/workflows/${parent}/executions`, {
        body: { workflow_execution: { phone_number: "+15557770099", phone_number_id: pnid, variables: { name: "Ada" } } }
      })
      assert.strictEqual(ack.status, 202, ack.text)
      const id = ack.body.data.id as string
      await eventually("the parent waits on its child", async () => (await get(id)).status === "waiting")
      const waiting = await get(id)
      assert.strictEqual(waiting.waiting_reason, "call")
      const childId = waiting.resumable_execution_id as string
      assert.notStrictEqual(childId, id)
      const c = await get(childId)
      assert.strictEqual(c.parent_execution_id, id)
      assert.strictEqual(c.execution_context.vars.name, "Ada")

      const resumed = await host.request("POST", `/platform/v1/workflow_executions/${id}/resume`, { body: { message: { kind: "text", data: "blue" } } })
      assert.strictEqual(resumed.status, 200, resumed.text)
      assert.strictEqual(resumed.body.data.id, childId)
      await eventually("the parent ends", async () => (await get(id)).status === "ended")
      const done = await get(id)
      assert.strictEqual(done.execution_context.vars.got, "blue!")
      assert.strictEqual((await get(childId)).status, "ended")
    })
  })
}

suite("memory", Effect.succeed(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)))
suite(
  "PostgreSQL",
  Effect.map(freshDatabase, (url) =>
    Layer.mergeAll(layerStorage, layerJobQueue({ pollingIntervalSeconds: 0.5 }), Ids.layer).pipe(Layer.provideMerge(layerFromUrl(url))))
)
