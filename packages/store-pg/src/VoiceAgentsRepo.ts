/** `VoiceAgentsRepo` on PostgreSQL (migration 0024). */
import { type VoiceAgentRecord, VoiceAgentsRepo } from "@parley/core"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { iso } from "./Rows.ts"

interface AgentRow {
  readonly id: string
  readonly project_id: string
  readonly name: string
  readonly provider_type: string
  readonly provider_kind: string
  readonly provider_agent_name: string
  readonly created_at: Date
  readonly updated_at: Date
}

const toAgent = (row: AgentRow): VoiceAgentRecord => ({
  id: row.id,
  project_id: row.project_id,
  name: row.name,
  provider: { type: row.provider_type, kind: row.provider_kind, agent_name: row.provider_agent_name },
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at)
})

export const layerVoiceAgentsRepo = Layer.effect(
  VoiceAgentsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return VoiceAgentsRepo.of({
      declare: Effect.fnUntraced(function*(a: VoiceAgentRecord) {
        const rows = yield* sql<AgentRow>`
          INSERT INTO voice_agents (id, project_id, name, provider_type, provider_kind, provider_agent_name, created_at, updated_at)
          VALUES (${a.id}, ${a.project_id}, ${a.name}, ${a.provider.type}, ${a.provider.kind}, ${a.provider.agent_name},
            ${a.created_at}, ${a.updated_at})
          ON CONFLICT (project_id, name) DO UPDATE SET
            provider_type = EXCLUDED.provider_type, provider_kind = EXCLUDED.provider_kind,
            provider_agent_name = EXCLUDED.provider_agent_name, updated_at = EXCLUDED.updated_at
          RETURNING *`
        return toAgent(rows[0]!)
      }, Effect.orDie),
      remove: Effect.fnUntraced(function*(projectId: string, name: string) {
        const rows = yield* sql`DELETE FROM voice_agents WHERE project_id = ${projectId} AND name = ${name} RETURNING id`
        return rows.length > 0
      }, Effect.orDie),
      list: Effect.fnUntraced(function*(projectId: string) {
        const rows = yield* sql<AgentRow>`SELECT * FROM voice_agents WHERE project_id = ${projectId} ORDER BY name`
        return rows.map(toAgent)
      }, Effect.orDie)
    })
  })
)
