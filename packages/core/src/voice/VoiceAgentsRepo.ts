/** Storage of the voice agents operators declare, per project (spec "Voice agent"). */
import { Context, type Effect } from "effect"
import type { VoiceAgentRecord } from "./VoiceAgent.ts"

export class VoiceAgentsRepo extends Context.Service<VoiceAgentsRepo, {
  /**
   * Inserts the agent, or replaces the provider and `updated_at` of the
   * project's agent of that name, whose `id` and `created_at` stay; answers
   * the stored record.
   */
  readonly declare: (agent: VoiceAgentRecord) => Effect.Effect<VoiceAgentRecord>
  /** False when the project had no agent of that name. */
  readonly remove: (projectId: string, name: string) => Effect.Effect<boolean>
  /** By name (byte order). */
  readonly list: (projectId: string) => Effect.Effect<ReadonlyArray<VoiceAgentRecord>>
}>()("@parley/core/ports/VoiceAgentsRepo") {}
