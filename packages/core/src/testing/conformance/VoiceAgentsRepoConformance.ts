/** The behaviour every `VoiceAgentsRepo` adapter owes, written once. */
import { assert, layer } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import { VoiceAgentsRepo } from "../../voice/VoiceAgentsRepo.ts"
import type { VoiceAgentRecord } from "../../voice/VoiceAgent.ts"
import { at, givenProject, uniqueId } from "./fixtures.ts"

const makeAgent = (projectId: string, overrides: Partial<VoiceAgentRecord> = {}): VoiceAgentRecord => ({
  id: crypto.randomUUID(),
  project_id: projectId,
  name: uniqueId("agent"),
  provider: { type: "elevenlabs", kind: "conversational", agent_name: "Front desk" },
  created_at: at(0),
  updated_at: at(0),
  ...overrides
})

export const voiceAgentsRepoConformance = <E>(name: string, storage: Layer.Layer<VoiceAgentsRepo | ProjectsRepo, E>): void =>
  layer(storage, { excludeTestServices: true })(name, (it) => {
    it.effect("declares and lists a project's agents by name, never another project's", () =>
      Effect.gen(function*() {
        const repo = yield* VoiceAgentsRepo
        const project = yield* givenProject()
        const other = yield* givenProject()
        const b = makeAgent(project.id, { name: "b-agent" })
        const a = makeAgent(project.id, { name: "a-agent" })
        assert.deepStrictEqual(yield* repo.declare(b), b)
        yield* repo.declare(a)
        yield* repo.declare(makeAgent(other.id, { name: "a-agent" }))
        assert.deepStrictEqual(yield* repo.list(project.id), [a, b])
        assert.strictEqual((yield* repo.list(other.id)).length, 1)
      }))

    it.effect("a second declaration of a name replaces its provider and updated_at, keeping id and created_at", () =>
      Effect.gen(function*() {
        const repo = yield* VoiceAgentsRepo
        const project = yield* givenProject()
        const first = yield* repo.declare(makeAgent(project.id))
        const again = makeAgent(project.id, {
          name: first.name,
          provider: { type: "vapi", kind: "assistant", agent_name: "Night line" },
          created_at: at(9),
          updated_at: at(9)
        })
        const stored = yield* repo.declare(again)
        assert.deepStrictEqual(stored, { ...again, id: first.id, created_at: first.created_at })
        assert.deepStrictEqual(yield* repo.list(project.id), [stored])
      }))

    it.effect("removes by project and name", () =>
      Effect.gen(function*() {
        const repo = yield* VoiceAgentsRepo
        const project = yield* givenProject()
        const other = yield* givenProject()
        const agent = yield* repo.declare(makeAgent(project.id))
        assert.isFalse(yield* repo.remove(other.id, agent.name))
        assert.isFalse(yield* repo.remove(project.id, uniqueId("missing")))
        assert.isTrue(yield* repo.remove(project.id, agent.name))
        assert.deepStrictEqual(yield* repo.list(project.id), [])
      }))
  })
