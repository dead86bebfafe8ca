/** `ProviderModelsRepo` on PostgreSQL (migration 0015). */
import { ProviderModel, type ProviderModelRecord, ProviderModelsRepo } from "@parley/core"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { decodeRows, IsoFromDate, jsonb } from "./Rows.ts"

/** A row of `provider_models`: the public record's columns, the endpoint's, ISO time. */
const ModelRow = Schema.Struct({
  ...ProviderModel.fields,
  base_url: Schema.String,
  upstream_model: Schema.String,
  api_key_env: Schema.NullOr(Schema.String),
  created_at: IsoFromDate
})
const decodeModels = decodeRows("provider_models", ModelRow)
const toModels = (rows: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<ProviderModelRecord>> =>
  Effect.map(decodeModels(rows), (models) =>
    models.map(({ api_key_env, base_url, upstream_model, ...model }) => ({
      ...model,
      endpoint: { base_url, upstream_model, api_key_env }
    })))

export const layerProviderModelsRepo = Layer.effect(
  ProviderModelsRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return ProviderModelsRepo.of({
      declare: Effect.fnUntraced(function*(m: ProviderModelRecord) {
        const rows = yield* sql`
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
        return (yield* toModels(rows))[0]!
      }, Effect.orDie),
      remove: Effect.fnUntraced(function*(name: string) {
        const rows = yield* sql`DELETE FROM provider_models WHERE name = ${name} RETURNING id`
        return rows.length > 0
      }, Effect.orDie),
      list: Effect.flatMap(sql`SELECT * FROM provider_models ORDER BY provider, name`, toModels).pipe(Effect.orDie),
      findById: Effect.fnUntraced(function*(id: string) {
        return Option.fromNullishOr((yield* toModels(yield* sql`SELECT * FROM provider_models WHERE id = ${id}`))[0])
      }, Effect.orDie),
      findByName: Effect.fnUntraced(function*(name: string) {
        return Option.fromNullishOr((yield* toModels(yield* sql`SELECT * FROM provider_models WHERE name = ${name}`))[0])
      }, Effect.orDie)
    })
  })
)
