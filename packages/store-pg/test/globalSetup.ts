/**
 * One throwaway PostgreSQL for the whole test run (unless `DATABASE_URL`
 * names one), handed to test files as the admin URL; `pg.ts` makes a database
 * per test file in it.
 */
import { Effect, Exit, Redacted, Scope } from "effect"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import type { TestProject } from "vitest/node"
import * as EmbeddedPostgres from "../src/EmbeddedPostgres.ts"

export default async function setup(project: TestProject) {
  const external = process.env.DATABASE_URL
  if (external !== undefined && external !== "") {
    project.provide("parleyPgAdminUrl", external)
    return
  }
  const dataDir = await Fs.mkdtemp(Path.join(Os.tmpdir(), "parley-test-pg-"))
  const scope = Scope.makeUnsafe()
  const server = await Effect.runPromise(
    EmbeddedPostgres.start({ dataDir, throwaway: true, maxConnections: 300 }).pipe(Scope.provide(scope))
  )
  const url = Redacted.value(server.url)
  project.provide("parleyPgAdminUrl", url)
  // For child processes a test may spawn.
  process.env.PARLEY_TEST_ADMIN_URL = url
  return async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await Fs.rm(dataDir, { recursive: true, force: true })
  }
}
