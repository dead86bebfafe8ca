/**
 * Messaging's services as one layer, over the storage ports, the job queue, the network of the host's choice
 * (`MessagingNetwork` and `UpstreamSettings`: the simulator or the Cloud API, see `@parley/core/simulators`) and
 * what goes with a disconnected number (`NumberDependents`, which `Parley.ts` answers).
 */
import { Layer } from "effect"
import { MessageConfigs } from "./numbers/MessageConfigs.ts"
import { UpstreamIngestion } from "./Ingestion.ts"
import { Messaging } from "./Messaging.ts"
import { Outbound } from "./Outbound.ts"
import { SendPace } from "./numbers/SendPace.ts"
import { ConversationalSends } from "./ConversationalSends.ts"
import { Sandbox } from "./Sandbox.ts"
import { Customers } from "../tenancy/Customers.ts"
import { LiveNumbers } from "./numbers/LiveNumbers.ts"
import { Templates } from "./templates/Templates.ts"
import { Onboarding, SignupSettings } from "./numbers/Onboarding.ts"
import { SetupLinks } from "../tenancy/SetupLinks.ts"
import { LogRecorder } from "../logs/LogRecorder.ts"
import { DisplayNames } from "./numbers/DisplayNames.ts"
import { NumberHealth } from "./numbers/NumberHealth.ts"
import { layerCustomerNumbers } from "./numbers/CustomerNumbers.ts"
import { InboundRouter } from "./InboundRouter.ts"

// The health check's test message is a send like any other: recorded, through `Outbound`.
export const layerMessagingServices = Layer.mergeAll(UpstreamIngestion.layer, Sandbox.layer, Onboarding.layer, DisplayNames.layer, NumberHealth.layer).pipe(
  Layer.provideMerge(Outbound.layer),
  // One pace per number shared by broadcasts and replies (BroadcastSender takes it from here).
  Layer.provideMerge(SendPace.layer),
  // Conversational sends in flight, which broadcasts yield to (BroadcastSender takes it from here too).
  Layer.provideMerge(ConversationalSends.layer),
  Layer.provideMerge(Layer.mergeAll(MessageConfigs.layer, Messaging.layer, Templates.layer, SetupLinks.layer, SignupSettings.layerConfig)),
  Layer.provideMerge(Customers.layer),
  // Customers and setup links ask messaging for a customer's numbers through a port of theirs.
  Layer.provideMerge(layerCustomerNumbers),
  Layer.provideMerge(LiveNumbers.layer),
  // Recorded messages are routed where they are recorded, once executions registered its router (`Parley.ts`).
  Layer.provideMerge(InboundRouter.layer),
  // Upstream changes are logged for search; the same (memoized) recorder as `Parley.layerServices`'.
  Layer.provideMerge(LogRecorder.layer)
)
