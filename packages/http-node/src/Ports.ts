/**
 * The production ports of the standalone host and the CLI: Postgres storage
 * (from `DATABASE_URL`, or embedded) and the pg-boss job queue on it.
 */
import * as Pg from "@parley/store-pg"
import { Layer } from "effect"

/** Storage only, joining the embedded database of a running host: what the CLI needs. */
export const layerCliStorage = Pg.layerStorage.pipe(Layer.provideMerge(Pg.layerShared))

/** Storage and the job queue: what the host needs. */
export const layerPorts = Layer.mergeAll(Pg.layerStorage, Pg.layerJobQueue()).pipe(Layer.provideMerge(Pg.layer))
