/** `GET /api/v1/voice_agents` over real HTTP (spec "Voice agent", decisions 4.13): the project's agents, read-only. */
import { assert, describe, it } from "@effect/vitest"
import { Ids, VoiceAgents } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { type MessagingHost, startMessagingHost } from "./messaging.support.ts"

let host: MessagingHost
let close: () => Promise<void>

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    host = yield* startMessagingHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer))
    const agents = Context.get(host.context, VoiceAgents)
    yield* agents.declare(host.projectA, { name: "support", provider: { type: "elevenlabs", kind: "conversational", agent_name: "Support" } })
    yield* agents.declare(host.projectA, { name: "billing", provider: { type: "vapi", kind: "assistant", agent_name: "Billing" } })
    yield* agents.declare(host.projectB, { name: "other", provider: { type: "vapi", kind: "assistant", agent_name: "Other" } })
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
}, 60_000)
afterAll(() => close())

describe("GET /api/v1/voice_agents", () => {
  it("lists the project's voice agents by name with the spec's fields, never another project's", async () => {
    const res = await host.request("GET", "/api/v1/voice_agents")
    assert.strictEqual(res.status, 200, res.text)
    assert.deepStrictEqual(res.body.data.map((a: any) => a.name), ["billing", "support"])
    const [billing] = res.body.data
    assert.deepStrictEqual(Object.keys(billing), ["id", "name", "provider", "created_at", "updated_at"])
    assert.deepStrictEqual(billing.provider, { type: "vapi", kind: "assistant", agent_name: "Billing" })
    assert.match(billing.created_at, /^\d{4}-\d\d-\d\dT/)
    const other = await host.request("GET", "/api/v1/voice_agents", { key: host.otherKey })
    assert.deepStrictEqual(other.body.data.map((a: any) => a.name), ["other"])
  })

  it("is read-only and needs a key", async () => {
    const post = await host.request("POST", "/api/v1/voice_agents", { body: { voice_agent: { name: "x" } } })
    assert.strictEqual(post.status, 405, post.text)
    const anonymous = await host.request("GET", "/api/v1/voice_agents", { key: null })
    assert.strictEqual(anonymous.status, 401, anonymous.text)
  })
})
