/** Storage of setup links, scoped by project and customer; at most one `active` link per customer. */
import { Context, type Effect, type Option } from "effect"
import type { ListSlice, ListWindow } from "../shared/Pagination.ts"
import type { SetupLinkRecord } from "./SetupLink.ts"
import type { Duplicate } from "../ports/StorageError.ts"

export class SetupLinksRepo extends Context.Service<SetupLinksRepo, {
  /** Duplicate("customer_id") when the customer has an `active` link already. */
  readonly insert: (link: SetupLinkRecord) => Effect.Effect<void, Duplicate>
  readonly findById: (projectId: string, customerId: string, id: string) => Effect.Effect<Option.Option<SetupLinkRecord>>
  /** The link a page token opens, whatever its project. */
  readonly findByTokenHash: (tokenHash: string) => Effect.Effect<Option.Option<SetupLinkRecord>>
  /** The customer's links, newest first by (created_at, id). */
  readonly list: (projectId: string, customerId: string, window: ListWindow) => Effect.Effect<ListSlice<SetupLinkRecord>>
  /**
   * Replaces every changeable field of a link that is still stored `active`
   * (a compare-and-set: of two completions, one wins); None otherwise.
   */
  readonly updateActive: (link: SetupLinkRecord) => Effect.Effect<Option.Option<SetupLinkRecord>>
  /**
   * Ends the customer's `active` link, if any: `revoked` (with `revoked_at`)
   * when it had not expired at `now`, else `expired`. Answers how many changed.
   */
  readonly endActive: (projectId: string, customerId: string, now: string) => Effect.Effect<number>
}>()("@parley/core/ports/SetupLinksRepo") {}
