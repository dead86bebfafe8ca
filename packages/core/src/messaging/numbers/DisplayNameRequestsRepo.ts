/** Storage of display name requests (decisions 2.15, 3.6), scoped by project. */
import { Context, type Effect, type Option } from "effect"
import type { DisplayNameRequestRecord } from "./DisplayNameRequest.ts"
import type { ListSlice, ListWindow } from "../../shared/Pagination.ts"
import type { Duplicate } from "../../ports/StorageError.ts"

export class DisplayNameRequestsRepo extends Context.Service<DisplayNameRequestsRepo, {
  /** Duplicate("msg_config_id") when the config already has an open (non-final) request: one per number. */
  readonly insert: (request: DisplayNameRequestRecord) => Effect.Effect<void, Duplicate>
  /** Replaces the request's mutable fields (status, times, upstream error); None when it is not the project's. */
  readonly update: (request: DisplayNameRequestRecord) => Effect.Effect<Option.Option<DisplayNameRequestRecord>>
  readonly findById: (projectId: string, id: string) => Effect.Effect<Option.Option<DisplayNameRequestRecord>>
  /** The config's open request, if any. */
  readonly findOpen: (msgConfigId: string) => Effect.Effect<Option.Option<DisplayNameRequestRecord>>
  /** A config's requests, newest first by (created_at, id). */
  readonly list: (
    projectId: string,
    msgConfigId: string,
    window: ListWindow
  ) => Effect.Effect<ListSlice<DisplayNameRequestRecord>>
}>()("@parley/core/ports/DisplayNameRequestsRepo") {}
