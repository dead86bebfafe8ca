/**
 * Messaging's services as one layer, over the storage ports, the job queue
 * and the network of the configuration (`Upstream.layerConfig`: the
 * simulator by default), which it also exposes (`MessagingNetwork`,
 * `UpstreamSettings`) for the workers and routes built beside it.
 */
import { Layer } from "effect"
import { MessageConfigs } from "./numbers/MessageConfigs.ts"
import { UpstreamIngestion } from "./Ingestion.ts"
import { Messaging } from "./Messaging.ts"
import { Outbound } from "./Outbound.ts"
import { Sandbox } from "./Sandbox.ts"
import * as Upstream from "./Upstream.ts"
import { Customers } from "../tenancy/Customers.ts"
import { LiveNumbers } from "./numbers/LiveNumbers.ts"
import { Templates } from "./templates/Templates.ts"
import { Onboarding, SignupSettings } from "./numbers/Onboarding.ts"
import { SetupLinks } from "../tenancy/SetupLinks.ts"
import { LogRecorder } from "../logs/LogRecorder.ts"
import { DisplayNames } from "./numbers/DisplayNames.ts"
import { NumberHealth } from "./numbers/NumberHealth.ts"

// The health check's test message is a send like any other: recorded, through `Outbound`.
export const layerMessagingServices = Layer.mergeAll(UpstreamIngestion.layer, Sandbox.layer, Onboarding.layer, DisplayNames.layer, NumberHealth.layer).pipe(
  Layer.provideMerge(Outbound.layer),
  Layer.provideMerge(Layer.mergeAll(MessageConfigs.layer, Messaging.layer, Templates.layer, SetupLinks.layer, SignupSettings.layerConfig)),
  Layer.provideMerge(Customers.layer),
  Layer.provideMerge(LiveNumbers.layer),
  Layer.provideMerge(Upstream.layerConfig),
  // Upstream changes are logged for search; the same (memoized) recorder as `Parley.layerServices`'.
  Layer.provideMerge(LogRecorder.layer)
)
