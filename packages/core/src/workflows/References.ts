/**
 * Lookups of the records a workflow definition may reference (decisions 2.2
 * rule 10). Each capability answers for its own kind; the definition
 * validator asks here whether an id exists in the project and what its
 * display name is (read-only name fields are filled on read). `Parley.ts`
 * answers it from the stores of the capabilities that own each kind.
 */
import { Context, type Effect, type Option } from "effect"
import type { ProviderModel } from "../ai/ProviderModel.ts"

export type ReferenceKind =
  | "function"
  | "workflow"
  | "template"
  | "provider_model"
  | "phone_number"
  | "msg_config"
  | "event_definition"

export class DefinitionReferences extends Context.Service<DefinitionReferences, {
  /** The referenced record's display name, or None when the project has no such record. */
  readonly lookup: (projectId: string, kind: ReferenceKind, id: string) => Effect.Effect<Option.Option<string>>
  /** A declared model by id, else by name (models are global: every project sees them), for its 2.3.9 rules. */
  readonly providerModel: (idOrName: string) => Effect.Effect<Option.Option<ProviderModel>>
}>()("@parley/core/workflows/DefinitionReferences") {}
