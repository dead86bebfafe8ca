/**
 * `parley test-export` against a host (memory ports, real HTTP): a contact's
 * run is read through the API with a project key and written as a workflow
 * file and a script; `parley test` replays it (holds), and after a change of
 * the workflow's message names the node that now says something else.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Effect, Layer } from "effect"
import { execFile } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { eventually, hostForSuite, type MessagingHost } from "./messaging.support.ts"

const cli = resolve(import.meta.dirname, "../src/cli.ts")
const parley = (args: ReadonlyArray<string>) =>
  new Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }>((done) => {
    const { PARLEY_API_KEY: _key, PARLEY_URL: _url, ...env } = process.env
    execFile(process.execPath, ["--conditions=@parley/source", cli, ...args], { env }, (error, stdout, stderr) =>
      done({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, stdout, stderr }))
  })

let host: MessagingHost
let pnid: string
hostForSuite(Effect.succeed(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)), (h, p) => {
  host = h
  pnid = p
})

const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({
  id,
  position: { x: 0, y: 0 },
  data: { node_type, config }
})

describe("parley test-export", () => {
  it("records a host's run as a script that replays it, and names the node a change affects", async () => {
    const created = await host.request("POST", "/platform/v1/workflows", {
      body: {
        workflow: {
          name: "Greeting",
          message_debounce_seconds: 0,
          definition: {
            nodes: [
              node("start", "start"),
              node("hello", "send_text", { message: "Hi! What should we call you?" }),
              node("ask", "wait_for_response", { save_response_to: "nickname" }),
              node("confirm", "send_text", { message: "Nice to meet you, {{vars.nickname}}." })
            ],
            edges: [{ source: "start", target: "hello" }, { source: "hello", target: "ask" }, { source: "ask", target: "confirm" }]
          }
        }
      }
    })
    assert.strictEqual(created.status, 201, created.text)
    const workflowId = created.body.data.id as string
    const trigger = await host.request("POST", `/platform/v1/workflows/${workflowId}/triggers`, {
      body: { trigger: { trigger_type: "inbound_message", phone_number_id: pnid } }
    })
    assert.strictEqual(trigger.status, 201, trigger.text)
    assert.strictEqual((await host.request("PATCH", `/platform/v1/workflows/${workflowId}`, { body: { workflow: { status: "active" } } })).status, 200)

    const say = async (text: string) => {
      const res = await host.request("POST", "/sandbox/inbound", {
        body: { phone_number_id: pnid, from: "+15553330001", profile_name: "Ada", message: { type: "text", text: { body: text } } }
      })
      assert.strictEqual(res.status, 202, res.text)
    }
    const run = async () => (await host.request("GET", `/platform/v1/workflows/${workflowId}/executions`)).body.data[0]
    await say("hi")
    await eventually("the run waits", async () => (await run())?.status === "waiting")
    await say("Addie")
    await eventually("the run ends", async () => (await run())?.status === "ended")
    const executionId = (await run()).id as string

    const out = mkdtempSync(join(tmpdir(), "parley-export-"))
    try {
      const exported = await parley(["test-export", executionId, "--url", host.url, "--key", host.key, "--out", out])
      assert.strictEqual(exported.code, 0, exported.stdout + exported.stderr)
      const files = readdirSync(out).sort()
      const scriptFile = files.find((f) => f.endsWith(".flow.json"))!
      assert.sameMembers(files, ["greeting.workflow.json", scriptFile])
      const script = JSON.parse(readFileSync(join(out, scriptFile), "utf8"))
      assert.deepStrictEqual(script.steps, [{ say: "hi" }, { say: "Addie" }])
      assert.deepStrictEqual(script.contact, { phone: "+15553330001", name: "Ada" })
      assert.deepStrictEqual(script.recorded.confirm, ["entered", "sent text \"Nice to meet you, Addie.\"", "edge next", "ended"])

      const replay = await parley(["test", join(out, scriptFile)])
      assert.strictEqual(replay.code, 0, replay.stdout + replay.stderr)

      const workflowFile = join(out, "greeting.workflow.json")
      writeFileSync(workflowFile, readFileSync(workflowFile, "utf8").replace("Nice to meet you", "Welcome"))
      const changed = await parley(["test", join(out, scriptFile)])
      assert.strictEqual(changed.code, 1, changed.stdout + changed.stderr)
      assert.include(
        changed.stdout,
        "step 3 (compare with the recording): node confirm: recorded sent text \"Nice to meet you, Addie.\", replay sent text \"Welcome, Addie.\""
      )
    } finally {
      rmSync(out, { recursive: true, force: true })
    }
  })

  it("says why when the host refuses the key", async () => {
    const { code, stderr } = await parley(["test-export", "00000000-0000-4000-8000-000000000000", "--url", host.url, "--key", "pk_wrong"])
    assert.strictEqual(code, 1)
    assert.include(stderr, "parley test-export:")
  })
})
