/**
 * The simulated network outlives the host (`npm start`'s ports): a contact
 * writes in, the host answers, the host stops; a host started again over the
 * same database can still answer that contact (the window is open, not
 * 131047), and the simulator's outbox, in memory and in `sim_outbox`, lists
 * exactly what contacts received.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids, layerMessagingServices, MessagingNetwork, type NetworkAnswer, type NetworkObjects, UpstreamSettings } from "@parley/core"
import { ConfigProvider, Context, Effect, Exit, Layer, Option, Scope } from "effect"
import { SqlClient } from "effect/sql"
import { layerPorts } from "../src/Ports.ts"
import { freshDatabase } from "../../store-pg/test/pg.ts"
import { Simulator, SimulatedUpstream } from "@parley/core/simulators"

const CONTACT = "15550104242"

/** What `npm start` builds for messaging: the production ports from `DATABASE_URL`, the network of the configuration. */
const host = (url: string) =>
  layerMessagingServices.pipe(
  Layer.provideMerge(SimulatedUpstream.layerSimulatorConfig),
      Layer.provideMerge(Layer.mergeAll(layerPorts, Ids.layer)),
    Layer.provide(ConfigProvider.layerAdd(ConfigProvider.fromUnknown({ DATABASE_URL: url }), { asPrimary: true }))
  )

const idOf = (answer: NetworkAnswer<NetworkObjects.SendAnswer>) => ("messages" in answer.value ? answer.value.messages[0]!.id : "")

const text = (body: string) => ({ messaging_product: "whatsapp", to: CONTACT, type: "text", text: { body } })

describe("the simulated network across a host restart (postgres)", () => {
  it.live("answers a contact who wrote before the restart, and counts what contacts received", () =>
    Effect.scoped(Effect.gen(function*() {
      const url = yield* freshDatabase

      const firstScope = yield* Scope.make()
      const first = yield* Layer.buildWithScope(host(url), firstScope)
      const settings = Context.get(first, UpstreamSettings)
      const simulator = Option.getOrThrow(Context.getOption(first, Simulator.NetworkSimulator))
      const number = Option.getOrThrow(settings.simulatedNumber)
      const access = { accessToken: number.accessToken }
      yield* simulator.inbound(number.phoneNumberId, { from: CONTACT, message: { type: "text", text: { body: "hi" } } })
      const sent = yield* Context.get(first, MessagingNetwork).send(access, number.phoneNumberId, text("hello"))
      const firstId = idOf(sent)
      // The host stops (the network's answer was stored before the host heard it).
      yield* Scope.close(firstScope, Exit.void)

      const second = yield* Layer.build(host(url))
      const restarted = Option.getOrThrow(Context.getOption(second, Simulator.NetworkSimulator))
      assert.notStrictEqual(restarted, simulator)
      const again = yield* Context.get(second, MessagingNetwork).send(access, number.phoneNumberId, text("still here"))
      const outbox = yield* restarted.outbox(number.phoneNumberId)
      assert.deepStrictEqual(outbox.map((m) => m.id), [firstId, idOf(again)])
      const sql = Context.get(second, SqlClient.SqlClient)
      const [{ count }] = yield* sql<{ readonly count: number }>`SELECT count(*)::int AS count FROM sim_outbox`
      assert.strictEqual(count, 2)
    })))
})
