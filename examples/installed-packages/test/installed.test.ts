/**
 * The packages as an outsider gets them: build, `npm pack` each, install the
 * tarballs into a fresh project outside the workspace (no links, no
 * TypeScript sources), type-check `src/main.ts` there against the shipped
 * declarations and run it on the shipped JavaScript.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { promisify } from "node:util"

const run = promisify(execFile)
const root = resolve(import.meta.dirname, "../../..")
const PACKAGES = ["core", "store-pg", "http-node", "client"]

describe("the published packages", () => {
  it("install into a project outside the workspace, type-check and run there", async () => {
    const work = mkdtempSync(join(tmpdir(), "parley-installed-"))
    try {
      await run("npm", ["run", "build"], { cwd: root, maxBuffer: 64 * 1024 * 1024 })
      const packs = join(work, "packs")
      mkdirSync(packs)
      for (const name of PACKAGES) {
        await run("npm", ["pack", "--pack-destination", packs], { cwd: join(root, "packages", name) })
      }
      const tarballs = readdirSync(packs)
      const app = join(work, "app")
      cpSync(join(import.meta.dirname, "../src"), join(app, "src"), { recursive: true })
      // The same compiler and Node types as the workspace, installed in the app like any other dependency.
      const tools = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).devDependencies as Record<string, string>
      const dependency = (name: string) => `file:${join(packs, tarballs.find((t) => t.startsWith(`parley-${name}-`))!)}`
      writeFileSync(join(app, "package.json"), JSON.stringify({
        name: "installed-app",
        private: true,
        type: "module",
        dependencies: {
          ...Object.fromEntries(PACKAGES.map((name) => [`@parley/${name}`, dependency(name)])),
          effect: "4.1.0"
        },
        devDependencies: { typescript: tools["typescript"], "@types/node": tools["@types/node"] }
      }))
      writeFileSync(join(app, "tsconfig.json"), JSON.stringify({
        compilerOptions: {
          target: "ES2023",
          lib: ["ES2023", "DOM"],
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          noEmit: true,
          // The shipped declarations are checked too, not skipped.
          skipLibCheck: false,
          types: ["node"]
        },
        files: ["src/main.ts"]
      }))
      await run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline"], { cwd: app, maxBuffer: 64 * 1024 * 1024 })
      await run(join(app, "node_modules/.bin/tsc"), ["-p", "."], { cwd: app }).catch((e: { stdout: string }) => {
        throw new Error(`type errors in the installed packages:\n${e.stdout}`)
      })
      // The Node that runs this test (22.19+): the app is TypeScript, run with Node's type stripping.
      const { stdout } = await run(process.execPath, ["src/main.ts"], { cwd: app })
      assert.deepStrictEqual(JSON.parse(stdout.trim().split("\n").pop()!), { created: "From a tarball", listed: ["From a tarball"] })
    } finally {
      rmSync(work, { recursive: true, force: true })
    }
  }, 900_000)
})
