/** Storage of the template mirror (decisions 4.8.1), scoped by project. */
import { Context, type Effect, type Option } from "effect"
import type { TemplateFilter, TemplateRecord } from "./Template.ts"
import type { ListSlice, ListWindow } from "../../shared/Pagination.ts"

export class TemplatesRepo extends Context.Service<TemplatesRepo, {
  /**
   * Makes the mirror of one business account of a project what the network listed: inserts new templates, replaces
   * the fields of known ones (keeping their `created_at`), removes the ones the list no longer has.
   */
  readonly replaceAccount: (
    projectId: string,
    businessAccountId: string,
    templates: ReadonlyArray<TemplateRecord>
  ) => Effect.Effect<void>
  /** Inserts or replaces one template (keeping a known one's `created_at`); answers the stored record. */
  readonly upsert: (template: TemplateRecord) => Effect.Effect<TemplateRecord>
  readonly findById: (projectId: string, id: string) => Effect.Effect<Option.Option<TemplateRecord>>
  /** Newest first by (created_at, id). */
  readonly list: (projectId: string, filter: TemplateFilter, window: ListWindow) => Effect.Effect<ListSlice<TemplateRecord>>
  readonly remove: (projectId: string, id: string) => Effect.Effect<boolean>
}>()("@parley/core/ports/TemplatesRepo") {}
