/**
 * The storage ports' conformance suites, one function per port. Each takes a
 * name and a layer providing the ports (and whatever they need) and registers
 * its tests; the memory and Postgres adapters run the same assertions.
 */
import { describe } from "@effect/vitest"
import type { Layer } from "effect"
import type { CustomersRepo } from "../../tenancy/CustomersRepo.ts"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import type { Transactor } from "../../ports/Transactor.ts"
import type { TriggersRepo, WorkflowsRepo } from "../../workflows/WorkflowsRepo.ts"
import { customersRepoConformance } from "./CustomersRepoConformance.ts"
import { projectsRepoConformance } from "./ProjectsRepoConformance.ts"
import { transactorConformance } from "./TransactorConformance.ts"
import { triggersRepoConformance } from "./TriggersRepoConformance.ts"
import { workflowsRepoConformance } from "./WorkflowsRepoConformance.ts"

export {
  customersRepoConformance,
  projectsRepoConformance,
  transactorConformance,
  triggersRepoConformance,
  workflowsRepoConformance
}

export type StoragePorts = Transactor | ProjectsRepo | WorkflowsRepo | TriggersRepo | CustomersRepo

/** Every storage suite; each builds its own instance of `storage`. */
export const storageConformance = <E>(name: string, storage: Layer.Layer<StoragePorts, E>): void => {
  describe(name, () => {
    projectsRepoConformance("ProjectsRepo", storage)
    workflowsRepoConformance("WorkflowsRepo", storage)
    triggersRepoConformance("TriggersRepo", storage)
    transactorConformance("Transactor", storage)
    customersRepoConformance("CustomersRepo", storage)
  })
}
