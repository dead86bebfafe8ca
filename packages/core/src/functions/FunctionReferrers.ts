/**
 * The workflows that call a function, which functions may not know of: a function in use is not deleted. Functions
 * own this port; workflows answer it (`workflows/FunctionReferrers.ts`), wired in `Parley.ts`.
 */
import { Context, type Effect, type Option } from "effect"

export class FunctionReferrers extends Context.Service<FunctionReferrers, {
  /** The first workflow (any status) with a node or agent tool calling the function. */
  readonly first: (
    projectId: string,
    functionId: string
  ) => Effect.Effect<Option.Option<{ readonly id: string; readonly name: string }>>
}>()("@parley/core/functions/FunctionReferrers") {}
