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

const References = layerDefinitionReferences

export const layerServices = Layer.mergeAll(
  Projects.layer,
  Workflows.layer.pipe(Layer.provide(Triggers.layer), Layer.provideMerge(References)),
  Triggers.layer.pipe(Layer.provide(References))
)
