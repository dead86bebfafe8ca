#!/usr/bin/env node
// The `parley` command. In a workspace checkout it runs the TypeScript
// sources with Node's type stripping and the `@parley/source` export
// condition; an installed package (sources are not published) runs its build.
import { spawnSync } from "node:child_process"
import { existsSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const here = dirname(fileURLToPath(import.meta.url))
const source = join(here, "..", "src", "cli.ts")
if (!existsSync(source)) {
  await import(pathToFileURL(join(here, "..", "dist", "cli.js")).href)
} else {
  const result = spawnSync(process.execPath, ["--conditions=@parley/source", source, ...process.argv.slice(2)], {
    stdio: "inherit"
  })
  process.exit(result.status ?? 1)
}
