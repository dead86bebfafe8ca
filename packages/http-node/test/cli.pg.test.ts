/** The `parley` CLI against a real Postgres database: projects and keys, as an operator uses them. */
import { assert, describe, it, layer } from "@effect/vitest"
import { Ids, Parley, Projects, ProjectSecrets, ProviderModels, VoiceAgents } from "@parley/core"
import { layerJobQueue, layerStorage } from "@parley/store-pg"
import { Effect, Layer, Redacted, Schedule } from "effect"
import { execFile } from "node:child_process"
import { existsSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { DatabaseUrl } from "../../store-pg/src/Database.ts"
import { layerTestDatabase } from "../../store-pg/test/pg.ts"
import { SimulatedUpstream } from "@parley/core/simulators"

const cli = fileURLToPath(new URL("../src/cli.ts", import.meta.url))

const parleyWithInput = (url: string, input: string | undefined, ...args: Array<string>) =>
  Effect.callback<{ code: number; stdout: string; stderr: string }>((resume) => {
    const child = execFile(
      process.execPath,
      ["--conditions=@parley/source", cli, ...args],
      { env: { ...process.env, DATABASE_URL: url, PARLEY_LOG_LEVEL: "Warn" } },
      (error, stdout, stderr) => resume(Effect.succeed({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr }))
    )
    child.stdin?.end(input ?? "")
  })

const parley = (url: string, ...args: Array<string>) => parleyWithInput(url, undefined, ...args)

const Services = Parley.layerServices.pipe(
  Layer.provideMerge(SimulatedUpstream.layerSimulatorConfig),
    Layer.provideMerge(Layer.mergeAll(layerStorage, layerJobQueue(), Ids.layer)),
  Layer.provideMerge(layerTestDatabase)
)

layer(Services, { excludeTestServices: true, timeout: 120_000 })("parley CLI (postgres)", (it) => {
  it.effect("creates, lists, disables projects and creates, lists, revokes keys", () =>
    Effect.gen(function*() {
      const url = Redacted.value(yield* DatabaseUrl)
      const projects = yield* Projects

      const created = yield* parley(url, "projects", "create", "Acme", "--json")
      assert.strictEqual(created.code, 0, created.stderr)
      const { project, api_key } = JSON.parse(created.stdout)
      assert.strictEqual(project.name, "Acme")
      assert.match(api_key, /^pk_/)
      assert.strictEqual((yield* projects.authenticate(api_key)).project.id, project.id)

      const listed = JSON.parse((yield* parley(url, "projects", "list", "--json")).stdout)
      assert.isTrue(listed.some((p: any) => p.id === project.id && p.disabled === false))

      const second = JSON.parse((yield* parley(url, "keys", "create", project.id, "--name", "ci", "--json")).stdout)
      assert.strictEqual(second.name, "ci")
      const keys = JSON.parse((yield* parley(url, "keys", "list", project.id, "--json")).stdout)
      assert.strictEqual(keys.length, 2)
      // Secrets and hashes never leave the store.
      for (const k of keys) assert.deepStrictEqual(Object.keys(k).sort(), ["created_at", "id", "name", "prefix", "project_id", "revoked_at"])
      assert.notInclude(JSON.stringify(keys), api_key)

      // This process has the key cached; a revoke by another process reaches it through the store's signal.
      assert.strictEqual((yield* projects.authenticate(second.api_key)).apiKey.id, second.id)
      const revoked = yield* parley(url, "keys", "revoke", project.id, second.id)
      assert.strictEqual(revoked.code, 0, revoked.stderr)
      const afterRevoke = yield* projects.authenticate(second.api_key).pipe(
        Effect.flip,
        Effect.retry({ schedule: Schedule.spaced("50 millis"), times: 100 })
      )
      assert.strictEqual(afterRevoke.error, "Invalid API key")
      assert.strictEqual((yield* projects.authenticate(api_key)).project.id, project.id)

      const disabled = yield* parley(url, "projects", "disable", project.id)
      assert.strictEqual(disabled.code, 0, disabled.stderr)
      const refused = yield* projects.authenticate(api_key).pipe(
        Effect.flip,
        Effect.retry({ schedule: Schedule.spaced("50 millis"), times: 100 })
      )
      assert.strictEqual(refused.error, "Invalid API key")
      yield* parley(url, "projects", "enable", project.id)
      const again = yield* projects.authenticate(api_key).pipe(Effect.retry({ schedule: Schedule.spaced("50 millis"), times: 100 }))
      assert.strictEqual(again.project.id, project.id)

      const unknown = yield* parley(url, "keys", "list", "00000000-0000-4000-8000-000000000000")
      assert.notStrictEqual(unknown.code, 0)
      assert.include(unknown.stderr, "Project not found")
    }), { timeout: 120_000 })

  it.effect("sets project secrets from a flag or standard input, lists names only, deletes them", () =>
    Effect.gen(function*() {
      const url = Redacted.value(yield* DatabaseUrl)
      const project = yield* (yield* Projects).create("Secrets")
      const byFlag = yield* parley(url, "secrets", "set", project.id, "API_TOKEN", "--value", "flag-value-1")
      assert.strictEqual(byFlag.code, 0, byFlag.stderr)
      const byStdin = yield* parleyWithInput(url, "piped-value-2\n", "secrets", "set", project.id, "OTHER", "--json")
      assert.strictEqual(byStdin.code, 0, byStdin.stderr)
      assert.deepStrictEqual(Object.keys(JSON.parse(byStdin.stdout)).sort(), ["created_at", "name", "updated_at"])
      const listed = yield* parley(url, "secrets", "list", project.id)
      assert.include(listed.stdout, "API_TOKEN")
      assert.notInclude(listed.stdout, "flag-value-1")
      // The host (here: this process, same database and key) reads what the CLI wrote.
      const values = yield* (yield* ProjectSecrets).resolve(project.id)
      assert.deepStrictEqual([...values.entries()], [["API_TOKEN", "flag-value-1"], ["OTHER", "piped-value-2"]])
      const bad = yield* parley(url, "secrets", "set", project.id, "bad-name", "--value", "x")
      assert.notStrictEqual(bad.code, 0)
      assert.include(bad.stderr, "Secret names are 1 to 128 of A-Z, 0-9 and _")
      assert.strictEqual((yield* parley(url, "secrets", "delete", project.id, "OTHER")).code, 0)
      const missing = yield* parley(url, "secrets", "delete", project.id, "OTHER")
      assert.include(missing.stderr, "Secret OTHER not found")
      assert.deepStrictEqual([...(yield* (yield* ProjectSecrets).resolve(project.id)).keys()], ["API_TOKEN"])
    }), { timeout: 120_000 })

  it.effect("declares, lists (the key's variable, never a key), replaces and removes models", () =>
    Effect.gen(function*() {
      const url = Redacted.value(yield* DatabaseUrl)
      const name = `cli-model-${Date.now()}`
      const added = yield* parley(url, "models", "add", "--name", name, "--model", "o4-mini", "--base-url", "https://api.openai.com/v1",
        "--provider", "openai", "--api-key-env", "OPENAI_API_KEY", "--reasoning", "--efforts", "low,medium,high", "--default-effort", "medium",
        "--cache-ttls", "5m,1h", "--default-cache-ttl", "1h", "--json")
      assert.strictEqual(added.code, 0, added.stderr)
      const model = JSON.parse(added.stdout)
      assert.deepStrictEqual(model.endpoint, { base_url: "https://api.openai.com/v1", upstream_model: "o4-mini", api_key_env: "OPENAI_API_KEY" })
      assert.deepStrictEqual([model.supported_reasoning_efforts, model.default_reasoning_effort, model.default_prompt_cache_ttl], [["low", "medium", "high"], "medium", "1h"])
      // The host (here: this process, same database) sees it.
      const listedHere = yield* (yield* ProviderModels).list
      assert.isTrue(listedHere.some((m) => m.name === name && m.reasoning_model))

      const listed = yield* parley(url, "models", "list")
      assert.include(listed.stdout, `${name}  openai  o4-mini at https://api.openai.com/v1  key: OPENAI_API_KEY`)

      const again = JSON.parse((yield* parley(url, "models", "add", "--name", name, "--model", "gpt-4o-mini", "--base-url", "http://localhost:11434/v1", "--json")).stdout)
      assert.strictEqual(again.id, model.id)
      assert.strictEqual(again.reasoning_model, false)

      const bad = yield* parley(url, "models", "add", "--name", name, "--model", "x", "--base-url", "ftp://x", "--efforts", "turbo")
      assert.notStrictEqual(bad.code, 0)
      assert.include(bad.stderr, "base_url must be an http or https URL")

      assert.strictEqual((yield* parley(url, "models", "remove", name)).code, 0)
      const missing = yield* parley(url, "models", "remove", name)
      assert.notStrictEqual(missing.code, 0)
      assert.include(missing.stderr, `Model ${name} not found`)
    }), { timeout: 120_000 })

  it.effect("declares, lists, replaces and removes a project's voice agents", () =>
    Effect.gen(function*() {
      const url = Redacted.value(yield* DatabaseUrl)
      const project = yield* (yield* Projects).create("Voice")
      const added = yield* parley(url, "voice-agents", "add", project.id, "--name", "front-desk", "--type", "elevenlabs",
        "--kind", "conversational", "--agent-name", "Front Desk", "--json")
      assert.strictEqual(added.code, 0, added.stderr)
      const agent = JSON.parse(added.stdout)
      assert.deepStrictEqual(Object.keys(agent), ["id", "name", "provider", "created_at", "updated_at"])
      assert.deepStrictEqual(agent.provider, { type: "elevenlabs", kind: "conversational", agent_name: "Front Desk" })
      // The host (here: this process, same database) lists it.
      assert.deepStrictEqual((yield* (yield* VoiceAgents).list(project.id)).map((a) => a.id), [agent.id])

      const again = JSON.parse((yield* parley(url, "voice-agents", "add", project.id, "--name", "front-desk", "--type", "vapi",
        "--kind", "assistant", "--agent-name", "Night", "--json")).stdout)
      assert.strictEqual(again.id, agent.id)
      const listed = yield* parley(url, "voice-agents", "list", project.id)
      assert.include(listed.stdout, `front-desk  vapi/assistant  Night  ${agent.id}`)

      const bad = yield* parley(url, "voice-agents", "add", project.id, "--name", " ", "--type", "x", "--kind", "y", "--agent-name", "z")
      assert.notStrictEqual(bad.code, 0)
      assert.include(bad.stderr, "name must not be empty")

      assert.strictEqual((yield* parley(url, "voice-agents", "remove", project.id, "front-desk")).code, 0)
      const missing = yield* parley(url, "voice-agents", "remove", project.id, "front-desk")
      assert.notStrictEqual(missing.code, 0)
      assert.include(missing.stderr, "Voice agent front-desk not found")
    }), { timeout: 120_000 })
})

describe("parley CLI failures", () => {
  const run = (args: ReadonlyArray<string>, env: Record<string, string>) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const { DATABASE_URL: _, ...rest } = process.env
      execFile(process.execPath, ["--conditions=@parley/source", cli, ...args], { env: { ...rest, PARLEY_LOG_LEVEL: "Warn", ...env } }, (error, stdout, stderr) =>
        resolve({ code: error === null ? 0 : Number(error.code ?? 1), stdout, stderr }))
    })

  it("refuses to create an empty database where the host never ran, in one line", async () => {
    const dir = mkdtempSync(join(tmpdir(), "parley-cli-"))
    try {
      const dataDir = join(dir, ".parley")
      const result = await run(["projects", "list"], { PARLEY_DATA_DIR: dataDir })
      assert.strictEqual(result.code, 1)
      assert.strictEqual(result.stderr.trim(), `parley: No Parley database in ${dataDir}: run this where the host runs, or set PARLEY_DATA_DIR or DATABASE_URL`)
      assert.isFalse(existsSync(dataDir), "nothing was created")
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("answers a usage error with the help and status 1, no stack trace", async () => {
    const result = await run(["projects", "nope"], { PARLEY_DATA_DIR: "/nonexistent" })
    assert.strictEqual(result.code, 1)
    assert.include(result.stderr + result.stdout, "Unknown subcommand \"nope\"")
    assert.notMatch(result.stderr, /^\s+at /m)
  })
})
