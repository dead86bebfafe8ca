/**
 * The packages as an outsider gets them: build, `npm pack` each, install the
 * tarballs into a fresh project outside the workspace (no links, no
 * TypeScript sources), type-check `src/main.ts` and the `examples/embed-http`
 * application there against the shipped declarations and run them on the
 * shipped JavaScript: the application serves its page and every part of
 * Parley under `/parley`, and SIGTERM leaves no process behind. A Node.js
 * older than the packages need, when the machine has one, gets one line.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { promisify } from "node:util"
import { checkEmbedded, startExample } from "../../embed-http/test/embedded.ts"

const run = promisify(execFile)
const root = resolve(import.meta.dirname, "../../..")
const PACKAGES = ["core", "store-pg", "http-node", "client"]

/** Node.js binaries on the PATH older than 22.19 (the machines' system Node is 20). */
const olderNodes = async () => {
  const { stdout } = await run("which", ["-a", "node"]).catch(() => ({ stdout: "" }))
  const found: Array<{ readonly path: string; readonly version: string }> = []
  // `/bin/node` and `/usr/bin/node` are often one file.
  for (const path of new Set(stdout.split("\n").filter((line) => line.length > 0).map((line) => realpathSync(line)))) {
    const version = (await run(path, ["--version"])).stdout.trim().replace(/^v/, "")
    const [major = 0, minor = 0] = version.split(".").map(Number)
    if (major < 22 || (major === 22 && minor < 19)) found.push({ path, version })
  }
  return found
}

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
      cpSync(join(root, "examples/embed-http/src"), join(app, "embed-http"), { recursive: true })
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
        files: ["src/main.ts", "embed-http/main.ts"]
      }))
      await run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline"], { cwd: app, maxBuffer: 64 * 1024 * 1024 })
      await run(join(app, "node_modules/.bin/tsc"), ["-p", "."], { cwd: app }).catch((e: { stdout: string }) => {
        throw new Error(`type errors in the installed packages:\n${e.stdout}`)
      })
      // The Node that runs this test (22.19+): the app is TypeScript, run with Node's type stripping.
      const { stdout } = await run(process.execPath, ["src/main.ts"], { cwd: app })
      assert.deepStrictEqual(JSON.parse(stdout.trim().split("\n").pop()!), { created: "From a tarball", listed: ["From a tarball"] })

      // The embedding example, from the tarballs: its page and all of Parley under /parley; SIGTERM, nothing left.
      const example = await startExample(app, ["embed-http/main.ts"])
      try {
        await checkEmbedded(example.base)
      } finally {
        const stopped = await example.stop()
        assert.strictEqual(stopped.code, 0, example.output())
        assert.deepStrictEqual(stopped.left, [], "no PostgreSQL left running")
      }

      // An older Node (the machine's own, when it has one) gets one line at import and at start, and starts nothing.
      for (const old of await olderNodes()) {
        const imported = await run(old.path, ["--input-type=module", "-e", "await import('@parley/http-node')"], { cwd: app })
          .then(() => undefined, (e: { code: number; stderr: string }) => e)
        assert.strictEqual(imported?.code, 1)
        assert.include(imported!.stderr, `Parley needs Node.js 22.19 or later; this is ${old.version}`)
        const started = await run(old.path, ["node_modules/@parley/http-node/dist/main.js"], { cwd: app })
          .then(() => undefined, (e: { code: number; stderr: string }) => e)
        assert.deepStrictEqual([started?.code, started?.stderr], [1, `Parley needs Node.js 22.19 or later; this is ${old.version}\n`])
        assert.isFalse(existsSync(join(app, ".parley")), "no database was started")
      }
    } finally {
      rmSync(work, { recursive: true, force: true })
    }
  }, 900_000)
})
