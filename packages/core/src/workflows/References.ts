/**
 * Lookups of the records a workflow definition may reference (decisions 2.2
 * rule 10). Each capability answers for its own kind; the definition
 * validator asks here whether an id exists in the project and what its
 * display name is (read-only name fields are filled on read).
 */
import { Context, Effect, Layer, Option } from "effect"
import { WorkflowsRepo } from "./WorkflowsRepo.ts"
import { EventDefinitionsRepo } from "../events/EventsRepo.ts"
import { MessageConfigsRepo } from "../messaging/numbers/MessageConfigsRepo.ts"
import { FunctionsRepo } from "../functions/FunctionsRepo.ts"
import { TemplatesRepo } from "../messaging/templates/TemplatesRepo.ts"
import { ProviderModelsRepo } from "../ai/ProviderModelsRepo.ts"
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

/**
 * References answered from the stores that exist: workflows. Capabilities that
 * own other kinds (functions, templates, numbers, ...) answer for them once
 * they are wired here; until then the project has no such records.
 */
export const layerDefinitionReferences = Layer.effect(
  DefinitionReferences,
  Effect.gen(function*() {
    const workflows = yield* WorkflowsRepo
    const eventDefinitions = yield* EventDefinitionsRepo
    const numbers = yield* MessageConfigsRepo
    const functions = yield* FunctionsRepo
    const templates = yield* TemplatesRepo
    const models = yield* ProviderModelsRepo
    // `provider_model_name` is checked as a reference too: an id first, else a name.
    const providerModel = (idOrName: string) =>
      Effect.flatMap(models.findById(idOrName), (byId) => Option.isSome(byId) ? Effect.succeed(byId) : models.findByName(idOrName))
    return DefinitionReferences.of({
      providerModel,
      lookup: (projectId, kind, id) =>
        kind === "workflow"
          ? Effect.map(workflows.findById(projectId, id), Option.map((w) => w.name))
          : kind === "function"
          ? Effect.map(functions.findById(projectId, id), Option.map((f) => f.name))
          : kind === "event_definition"
          // A definition pending deletion is already gone for its project.
          ? Effect.map(eventDefinitions.findById(projectId, id), Option.flatMap((d) =>
            d.deletion_requested_at === null ? Option.some(d.name) : Option.none()))
          : kind === "phone_number"
          // A number of the project (network id), by the name contacts see.
          ? Effect.map(numbers.findByPhoneNumberId(id), Option.flatMap((c) =>
            c.project_id === projectId ? Option.some(c.display_name) : Option.none()))
          : kind === "msg_config"
          ? Effect.map(numbers.findById(projectId, id), Option.map((c) => c.name))
          : kind === "template"
          // The service's mirror (decisions 4.8.1); approval is checked at run time.
          ? Effect.map(templates.findById(projectId, id), Option.map((t) => t.name))
          : kind === "provider_model"
          ? Effect.map(providerModel(id), Option.map((m) => m.name))
          : Effect.succeed(Option.none())
    })
  })
)
