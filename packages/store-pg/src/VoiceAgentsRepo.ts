/** `VoiceAgentsRepo` on PostgreSQL (migration 0024). */
import { type VoiceAgentRecord, VoiceAgentsRepo } from "@parley/core"
import { Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { decodeRows, IsoFromDate } from "./Rows.ts"

/** A row of `voice_agents`: the provider's three columns, ISO times. */
const AgentRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  name: Schema.String,
  provider_type: Schema.String,
  provider_kind: Schema.String,
  provider_agent_name: Schema.String,
  created_at: IsoFromDate,
  updated_at: IsoFromDate
})
const decodeAgents = decodeRows("voice_agents", AgentRow)
const toAgents = (rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<VoiceAgentRecord>> =>
  Effect.map(decodeAgents(rows), (agents) =>
    agents.map((row) => ({
      id: row.id,
      project_id: row.project_id,
      name: row.name,
      provider: { type: row.provider_type, kind: row.provider_kind, agent_name: row.provider_agent_name },
      created_at: row.created_at,
      updated_at: row.updated_at
    })))

export const layerVoiceAgentsRepo = Layer.effect(
  VoiceAgentsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return VoiceAgentsRepo.of({
      declare: Effect.fnUntraced(function*(a: VoiceAgentRecord) {
        const rows = yield* sql`
          INSERT INTO voice_agents (id, project_id, name, provider_type, provider_kind, provider_agent_name, created_at, updated_at)
          VALUES (${a.id}, ${a.project_id}, ${a.name}, ${a.provider.type}, ${a.provider.kind}, ${a.provider.agent_name},
            ${a.created_at}, ${a.updated_at})
          ON CONFLICT (project_id, name) DO UPDATE SET
            provider_type = EXCLUDED.provider_type, provider_kind = EXCLUDED.provider_kind,
            provider_agent_name = EXCLUDED.provider_agent_name, updated_at = EXCLUDED.updated_at
          RETURNING *`
        return (yield* toAgents(rows))[0]!
      }, Effect.orDie),
      remove: Effect.fnUntraced(function*(projectId: string, name: string) {
        const rows = yield* sql`DELETE FROM voice_agents WHERE project_id = ${projectId} AND name = ${name} RETURNING id`
        return rows.length > 0
      }, Effect.orDie),
      list: Effect.fnUntraced(function*(projectId: string) {
        return yield* toAgents(yield* sql`SELECT * FROM voice_agents WHERE project_id = ${projectId} ORDER BY name`)
      }, Effect.orDie)
    })
  })
)
