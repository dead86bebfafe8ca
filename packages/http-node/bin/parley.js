#!/usr/bin/env node
// The `parley` command. In a workspace checkout (no build) it runs the
// TypeScript sources with Node's type stripping and the `@parley/source`
// export condition; an installed package runs its built files.
import { spawnSync } from "node:child_process"
import { existsSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const here = dirname(fileURLToPath(import.meta.url))
const built = join(here, "..", "dist", "cli.js")
if (existsSync(built)) {
  await import(pathToFileURL(built).href)
} else {
  const source = join(here, "..", "src", "cli.ts")
  const result = spawnSync(process.execPath, ["--conditions=@parley/source", source, ...process.argv.slice(2)], {
    stdio: "inherit"
  })
  process.exit(result.status ?? 1)
}
