#!/usr/bin/env node
// The `parley` command. In a workspace checkout it runs the TypeScript
// sources with Node's type stripping and the `@parley/source` export
// condition; an installed package (sources are not published) runs its build.
import { spawnSync } from "node:child_process"
import { existsSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

// Effect 4 needs Node.js 22.19 or later (package.json `engines`); older ones crash deep inside a dependency.
const [major, minor] = process.versions.node.split(".").map(Number)
if (major < 22 || (major === 22 && minor < 19)) {
  console.error(`Parley needs Node.js 22.19 or later; this is ${process.versions.node}.`)
  process.exit(1)
}

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
