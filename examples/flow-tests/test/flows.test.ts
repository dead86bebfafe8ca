/**
 * `parley test` as CI runs it: a process over the example's conversation
 * scripts. It passes on the files as they are, and fails (exit 1, the script
 * and step named) on a copy where a workflow's message changed.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"

const root = resolve(import.meta.dirname, "../../..")
const cli = join(root, "packages/http-node/src/cli.ts")
const flows = resolve(import.meta.dirname, "../flows")
const scripts = (dir: string) => readdirSync(dir).filter((f) => /\.flow\.(json|ya?ml)$/.test(f)).sort().map((f) => join(dir, f))

const parleyTest = (files: ReadonlyArray<string>) =>
  new Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>((done) => {
    execFile(process.execPath, ["--conditions=@parley/source", cli, "test", ...files], { cwd: root }, (error, stdout, stderr) =>
      done({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, stdout, stderr }))
  })

describe("parley test", () => {
  it("passes on the example's scripts", async () => {
    const files = scripts(flows)
    assert.isAtLeast(files.length, 3)
    const { code, stderr, stdout } = await parleyTest(files)
    assert.strictEqual(code, 0, stdout + stderr)
    for (const file of files) assert.include(stdout, `✓ ${file}:`)
    assert.include(stdout, `${files.length} scripts passed`)
  })

  it("fails, naming the script and the step, when a workflow's message changes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "parley-flows-"))
    try {
      cpSync(flows, dir, { recursive: true })
      const workflow = join(dir, "greeting.workflow.json")
      const original = readFileSync(workflow, "utf8")
      const changed = original.replace("Nice to meet you, {{vars.nickname}}.", "Welcome, {{vars.nickname}}!")
      assert.notStrictEqual(changed, original)
      writeFileSync(workflow, changed)

      const { code, stdout } = await parleyTest(scripts(dir))
      assert.strictEqual(code, 1, stdout)
      assert.include(
        stdout,
        `✗ ${join(dir, "greeting.flow.yaml")}: greets and confirms the nickname\n` +
          "  step 5 (expect text \"Nice to meet you, Addie.\"): " +
          "Expected the bot to send text \"Nice to meet you, Addie.\"; it sent text \"Welcome, Addie!\""
      )
      // The other scripts still hold: only the changed path fails.
      assert.include(stdout, `✓ ${join(dir, "greeting-silent.flow.json")}:`)
      assert.include(stdout, `✓ ${join(dir, "order-desk.flow.yaml")}:`)
      assert.include(stdout, "1 of 3 scripts failed")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
