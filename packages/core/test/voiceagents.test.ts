/** The rules of declaring voice agents (spec "Voice agent"): fields checked and trimmed, the project must exist. */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Projects } from "../src/projects/Projects.ts"
import { Ids } from "../src/shared/Ids.ts"
import { givenProject } from "../src/testing/conformance/index.ts"
import { layerMemoryStorage } from "../src/testing/index.ts"
import { MaxVoiceAgentFieldLength, VoiceAgents } from "../src/voice/VoiceAgent.ts"

const Env = VoiceAgents.layer.pipe(Layer.provide(Projects.layer), Layer.provideMerge(Ids.layerSequential), Layer.provideMerge(Layer.fresh(layerMemoryStorage)))

describe("VoiceAgents", () => {
  layer(Env)("declare", (it) => {
    it.effect("stores the trimmed fields and lists them by name", () =>
      Effect.gen(function*() {
        const agents = yield* VoiceAgents
        const project = yield* givenProject()
        const agent = yield* agents.declare(project.id, { name: " desk ", provider: { type: " vapi", kind: "assistant ", agent_name: " Desk " } })
        assert.deepStrictEqual([agent.name, agent.provider], ["desk", { type: "vapi", kind: "assistant", agent_name: "Desk" }])
        assert.deepStrictEqual(yield* agents.list(project.id), [agent])
      }))

    it.effect("answers 422 naming every empty or too long field, 404 for an unknown project", () =>
      Effect.gen(function*() {
        const agents = yield* VoiceAgents
        const project = yield* givenProject()
        const bad = yield* Effect.flip(agents.declare(project.id, {
          name: "",
          provider: { type: "x".repeat(MaxVoiceAgentFieldLength + 1), kind: " ", agent_name: "ok" }
        }))
        assert.strictEqual(bad._tag, "Unprocessable")
        assert.deepStrictEqual(bad.error, "name must not be empty")
        if (bad._tag === "Unprocessable") {
          assert.deepStrictEqual(bad.details?.map((d) => d.path), ["name", "provider.type", "provider.kind"])
        }
        const unknown = yield* Effect.flip(agents.declare("no-such-project", { name: "a", provider: { type: "x", kind: "y", agent_name: "z" } }))
        assert.deepStrictEqual([unknown._tag, unknown.error], ["NotFound", "Project no-such-project not found"])
        assert.deepStrictEqual(yield* agents.list(project.id), [])
      }))
  })
})
