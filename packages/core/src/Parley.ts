/**
 * The domain of Parley as one layer: every capability's service, built over
 * the ports. A host provides the ports (Postgres, or memory in tests) and
 * gets the services.
 */
import { Layer } from "effect"
import { Projects } from "./projects/Projects.ts"
import { layerDefinitionReferences } from "./workflows/References.ts"
import { Triggers } from "./workflows/Triggers.ts"
import { Workflows } from "./workflows/Workflows.ts"
import { layerConversationLookup } from "./events/Conversations.ts"
import { EventPlans } from "./events/EventPlans.ts"
import { Events } from "./events/Events.ts"
import { layerEventsWorkers } from "./events/EventsJobs.ts"

const References = layerDefinitionReferences

export const layerServices = Layer.mergeAll(
  Projects.layer,
  Workflows.layer.pipe(Layer.provide(Triggers.layer), Layer.provideMerge(References)),
  Triggers.layer.pipe(Layer.provide(References)),
  Events.layer.pipe(Layer.provide(layerConversationLookup), Layer.provideMerge(EventPlans.layer))
)

/**
 * The background workers of every capability (job queue consumers, daily
 * maintenance), for as long as the layer lives. A host runs them next to
 * `layerServices`; short-lived tools (the CLI) do not.
 */
export const layerWorkers = Layer.mergeAll(
  layerEventsWorkers.pipe(Layer.provide(EventPlans.layer))
)
