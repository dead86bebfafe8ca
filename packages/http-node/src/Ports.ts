/**
 * The production ports of the standalone host and the CLI: Postgres storage
 * (from `DATABASE_URL`, or embedded), the pg-boss job queue and the network
 * simulator's store on it.
 */
import * as Pg from "@parley/store-pg"
import { Layer } from "effect"

/** Storage only, joining the embedded database of a running host: what the CLI needs. */
export const layerCliStorage = Pg.layerStorage.pipe(Layer.provideMerge(Pg.layerShared))

/**
 * Storage, the job queue and the simulator's store: what the host needs. The
 * simulated network (`PARLEY_UPSTREAM=simulator`) keeps its state in the same
 * database, so a restarted host finds it as it left it. The CLI's does not:
 * a short-lived tool must not start a second copy of the network over it.
 */
export const layerPorts = Layer.mergeAll(Pg.layerStorage, Pg.layerJobQueue(), Pg.layerSimulatorStore).pipe(
  Layer.provideMerge(Pg.layer)
)
