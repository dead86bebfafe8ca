/** `ProviderModelsRepo` on PostgreSQL (migration 0015). */
import { type ProviderModelRecord, ProviderModelsRepo } from "@parley/core"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { first, iso, jsonb } from "./Rows.ts"

interface ModelRow {
  readonly id: string
  readonly name: string
  readonly provider: string
  readonly reasoning_model: boolean
  readonly thinking_mode: ProviderModelRecord["thinking_mode"]
  readonly supports_custom_sampling: boolean
  readonly supported_reasoning_efforts: ProviderModelRecord["supported_reasoning_efforts"]
  readonly default_reasoning_effort: ProviderModelRecord["default_reasoning_effort"]
  readonly supported_prompt_cache_ttls: ProviderModelRecord["supported_prompt_cache_ttls"]
  readonly default_prompt_cache_ttl: ProviderModelRecord["default_prompt_cache_ttl"]
  readonly api_surface: ProviderModelRecord["api_surface"]
  readonly base_url: string
  readonly upstream_model: string
  readonly api_key_env: string | null
  readonly created_at: Date
}

const toModel = (row: ModelRow): ProviderModelRecord => ({
  id: row.id,
  name: row.name,
  provider: row.provider,
  reasoning_model: row.reasoning_model,
  thinking_mode: row.thinking_mode,
  supports_custom_sampling: row.supports_custom_sampling,
  supported_reasoning_efforts: row.supported_reasoning_efforts,
  default_reasoning_effort: row.default_reasoning_effort,
  supported_prompt_cache_ttls: row.supported_prompt_cache_ttls,
  default_prompt_cache_ttl: row.default_prompt_cache_ttl,
  api_surface: row.api_surface,
  endpoint: { base_url: row.base_url, upstream_model: row.upstream_model, api_key_env: row.api_key_env },
  created_at: iso(row.created_at)
})

export const layerProviderModelsRepo = Layer.effect(
  ProviderModelsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return ProviderModelsRepo.of({
      declare: Effect.fnUntraced(function*(m: ProviderModelRecord) {
        const rows = yield* sql<ModelRow>`
          INSERT INTO provider_models (id, name, provider, reasoning_model, thinking_mode, supports_custom_sampling,
            supported_reasoning_efforts, default_reasoning_effort, supported_prompt_cache_ttls, default_prompt_cache_ttl,
            api_surface, base_url, upstream_model, api_key_env, created_at)
          VALUES (${m.id}, ${m.name}, ${m.provider}, ${m.reasoning_model}, ${m.thinking_mode}, ${m.supports_custom_sampling},
            ${jsonb(m.supported_reasoning_efforts)}::jsonb, ${m.default_reasoning_effort}, ${jsonb(m.supported_prompt_cache_ttls)}::jsonb,
            ${m.default_prompt_cache_ttl}, ${m.api_surface}, ${m.endpoint.base_url}, ${m.endpoint.upstream_model},
            ${m.endpoint.api_key_env}, ${m.created_at})
          ON CONFLICT (name) DO UPDATE SET
            provider = EXCLUDED.provider, reasoning_model = EXCLUDED.reasoning_model, thinking_mode = EXCLUDED.thinking_mode,
            supports_custom_sampling = EXCLUDED.supports_custom_sampling,
            supported_reasoning_efforts = EXCLUDED.supported_reasoning_efforts,
            default_reasoning_effort = EXCLUDED.default_reasoning_effort,
            supported_prompt_cache_ttls = EXCLUDED.supported_prompt_cache_ttls,
            default_prompt_cache_ttl = EXCLUDED.default_prompt_cache_ttl, api_surface = EXCLUDED.api_surface,
            base_url = EXCLUDED.base_url, upstream_model = EXCLUDED.upstream_model, api_key_env = EXCLUDED.api_key_env
          RETURNING *`
        return toModel(rows[0]!)
      }, Effect.orDie),
      remove: Effect.fnUntraced(function*(name: string) {
        const rows = yield* sql`DELETE FROM provider_models WHERE name = ${name} RETURNING id`
        return rows.length > 0
      }, Effect.orDie),
      list: Effect.map(sql<ModelRow>`SELECT * FROM provider_models ORDER BY provider, name`, (rows) => rows.map(toModel)).pipe(Effect.orDie),
      findById: Effect.fnUntraced(function*(id: string) {
        return first(yield* sql<ModelRow>`SELECT * FROM provider_models WHERE id = ${id}`, toModel)
      }, Effect.orDie),
      findByName: Effect.fnUntraced(function*(name: string) {
        return first(yield* sql<ModelRow>`SELECT * FROM provider_models WHERE name = ${name}`, toModel)
      }, Effect.orDie)
    })
  })
)
