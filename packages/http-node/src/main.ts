/**
 * `npm start`: the standalone host (`Standalone.ts`), loaded here so that a Node.js it cannot run on gets one line
 * and exit status 1 before anything starts (`@parley/core` refuses such a Node as it is imported), after the process
 * has capped glibc's malloc arenas (`MallocArenas.ts`: it executes itself again, before anything is opened).
 */
import { capMallocArenas } from "./MallocArenas.ts"

capMallocArenas()
await import("./Standalone.ts").catch((error: unknown) => {
  if (!(error instanceof Error && error.name === "UnsupportedNodeError")) throw error
  console.error(error.message)
  process.exit(1)
})
