/** `VoiceAgentsRepo` in memory, keyed by (project, name) as the Postgres schema is. */
import { Effect, Layer } from "effect"
import { VoiceAgentsRepo } from "./VoiceAgentsRepo.ts"
import type { VoiceAgentRecord } from "./VoiceAgent.ts"
import { byteOrder, json, timestamp } from "../ports/MemoryRows.ts"
import { MemoryStore, memoryTable } from "../ports/MemoryStore.ts"

const Agents = memoryTable<VoiceAgentRecord>("voice_agents")
const keyOf = (projectId: string, name: string) => `${projectId}\u0000${name}`

export const layerMemoryVoiceAgentsRepo = Layer.effect(
  VoiceAgentsRepo,
  Effect.gen(function*() {
    const store = yield* MemoryStore
    return VoiceAgentsRepo.of({
      declare: Effect.fn("VoiceAgentsRepo.declare")((agent: VoiceAgentRecord) =>
        store.run((db) => {
          const key = keyOf(agent.project_id, agent.name)
          const current = db.get(Agents, key)
          const row: VoiceAgentRecord = json({
            ...agent,
            id: current?.id ?? agent.id,
            created_at: timestamp(current?.created_at ?? agent.created_at),
            updated_at: timestamp(agent.updated_at)
          })
          db.put(Agents, key, row)
          return row
        })
      ),
      remove: Effect.fn("VoiceAgentsRepo.remove")((projectId: string, name: string) =>
        store.run((db) => db.remove(Agents, keyOf(projectId, name)))
      ),
      list: Effect.fn("VoiceAgentsRepo.list")((projectId: string) =>
        store.run((db) => db.all(Agents).filter((a) => a.project_id === projectId).sort((a, b) => byteOrder(a.name, b.name)))
      )
    })
  })
)
