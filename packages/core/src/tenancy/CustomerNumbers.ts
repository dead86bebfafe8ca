/**
 * A customer's numbers, which messaging keeps: a customer with a number is not deleted, and a setup link may
 * reconnect one of its production numbers. Tenancy owns this port so that it needs nothing of messaging; messaging
 * answers it (`messaging/numbers/CustomerNumbers.ts`).
 */
import { Context, type Effect, type Option } from "effect"
import type { ConnectionType } from "./SetupLink.ts"

export class CustomerNumbers extends Context.Service<CustomerNumbers, {
  /** Whether any message config (deleted ones included: their history stays the customer's) names the customer. */
  readonly anyConnected: (projectId: string, customerId: string) => Effect.Effect<boolean>
  /** The connection type of the customer's live production number with these digits, when it has one. */
  readonly productionConnection: (
    projectId: string,
    customerId: string,
    digits: string
  ) => Effect.Effect<Option.Option<ConnectionType>>
}>()("@parley/core/tenancy/CustomerNumbers") {}
