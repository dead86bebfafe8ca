/**
 * The workflow viewer over real HTTP (issue 31 §3): embeds through the Platform API (scope, access, origins,
 * expiry, revoke), the page's shell and headers, and the viewer's own API — the README's order bot drawn from its
 * definition, a definition checked as edited with problems naming their node or edge, a save with `lock_version`,
 * a finished run's path and events, read-only refusals, and scope and token boundaries.
 */
import { createParleyClient } from "@parley/client"
import { Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Layer } from "effect"
import { assert, describe, it } from "vitest"
import { createOrderBot, type OrderBotHost, orderBotHostForSuite, runOrderBot } from "./viewer.support.ts"

let bot: OrderBotHost
orderBotHostForSuite(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer), (h) => void (bot = h))

/** The order bot, made once: names are unique and one inbound trigger per number may be active. */
let orderBot: Promise<string> | undefined
const orderBotId = () => (orderBot ??= createOrderBot(bot))

const createEmbed = async (body: Record<string, unknown>, key?: string) =>
  bot.host.request("POST", "/platform/v1/workflow_embeds", { body: { workflow_embed: body }, ...(key !== undefined ? { key } : {}) })

const viewer = (token: string) => (method: string, path: string, body?: unknown) =>
  bot.host.request(method, `/viewer/v1${path}`, { key: null, headers: { "x-viewer-token": token }, ...(body !== undefined ? { body } : {}) })

describe("workflow viewer embeds", () => {
  it("creates, lists, reads, updates and revokes; checks scope, origins and expiry; the token opens only the viewer", async () => {
    const workflowId = await orderBotId()
    const created = await createEmbed({ scope_type: "workflow", scope_id: workflowId, allowed_origins: ["https://app.example.com/"], access: "edit" })
    assert.strictEqual(created.status, 201, created.text)
    const embed = created.body.data
    assert.match(embed.token, /^we_[A-Za-z0-9_-]{43}$/)
    assert.strictEqual(embed.embed_url, `${bot.host.url}/viewer/${embed.token}`)
    assert.deepStrictEqual([embed.scope_type, embed.scope_id, embed.scope_name, embed.name, embed.access], ["workflow", workflowId, "Order bot", "Order bot", "edit"])
    assert.deepStrictEqual(embed.allowed_origins, ["https://app.example.com"])
    assert.notProperty(embed, "token_hash")

    const got = await bot.host.request("GET", `/platform/v1/workflow_embeds/${embed.id}`)
    assert.strictEqual(got.status, 200)
    assert.notProperty(got.body.data, "token")
    const listed = await bot.host.request("GET", `/platform/v1/workflow_embeds?scope_type=workflow&scope_id=${workflowId}`)
    assert.deepStrictEqual(listed.body.data.map((e: { id: string }) => e.id), [embed.id])
    assert.strictEqual((await bot.host.request("GET", `/platform/v1/workflow_embeds/${embed.id}`, { key: bot.host.otherKey })).status, 404)

    for (const [body, path] of [
      [{ scope_type: "workflow" }, "workflow_embed.scope_id"],
      [{ scope_type: "workflow", scope_id: "nope" }, "workflow_embed.scope_id"],
      [{ scope_type: "project", scope_id: workflowId }, "workflow_embed.scope_id"],
      [{ scope_type: "project", allowed_origins: ["https://x.example/path"] }, "workflow_embed.allowed_origins[0]"],
      [{ scope_type: "project", expires_at: "tomorrow" }, "workflow_embed.expires_at"],
      [{ scope_type: "project", name: " " }, "workflow_embed.name"]
    ] as const) {
      const refused = await createEmbed(body)
      assert.strictEqual(refused.status, 422, JSON.stringify(body))
      assert.strictEqual(refused.body.details[0].path, path)
    }
    // Another project's workflow is not a scope of this one.
    assert.strictEqual((await createEmbed({ scope_type: "workflow", scope_id: workflowId }, bot.host.otherKey)).status, 422)

    // The shell: only for a valid token, framed only by the allowed origins, nothing loaded from elsewhere.
    const page = await fetch(embed.embed_url)
    assert.strictEqual(page.status, 200)
    const csp = page.headers.get("content-security-policy") ?? ""
    assert.include(csp, "default-src 'self'")
    assert.include(csp, "frame-ancestors https://app.example.com")
    assert.strictEqual(page.headers.get("referrer-policy"), "no-referrer")
    const html = await page.text()
    const assets = [...html.matchAll(/(?:href|src)="(assets\/[^"]+)"/g)].map((m) => m[1]!)
    assert.strictEqual(assets.length, 2, html)
    for (const asset of assets) {
      const answer = await fetch(new URL(asset, embed.embed_url))
      assert.strictEqual(answer.status, 200, asset)
    }
    assert.notMatch(html, /https?:\/\/(?!127\.0\.0\.1)/)

    // An inbox token does not open the viewer, nor a viewer token the inbox.
    const inbox = await bot.host.request("POST", "/platform/v1/inbox_embeds", { body: { inbox_embed: { scope_type: "project" } } })
    assert.strictEqual((await viewer(inbox.body.data.token)("GET", "/session")).status, 401)
    assert.strictEqual((await fetch(`${bot.host.url}/viewer/${inbox.body.data.token}`)).status, 401)
    assert.strictEqual((await bot.host.request("GET", "/inbox/v1/session", { key: null, headers: { "x-inbox-token": embed.token } })).status, 401)

    // Updated; then expired; then revoked for good.
    const patched = await bot.host.request("PATCH", `/platform/v1/workflow_embeds/${embed.id}`, {
      body: { workflow_embed: { name: "Bot board", access: "view", language: "es", default_mode: "dark", scope_id: "ignored" } }
    })
    assert.strictEqual(patched.status, 200, patched.text)
    assert.deepStrictEqual([patched.body.data.name, patched.body.data.access, patched.body.data.language, patched.body.data.scope_id], ["Bot board", "view", "es", workflowId])
    const session = await viewer(embed.token)("GET", "/session")
    assert.strictEqual(session.status, 200, session.text)
    assert.deepStrictEqual([session.body.data.name, session.body.data.access, session.body.data.language], ["Bot board", "view", "es"])
    assert.include(session.body.data.node_types, "decide")
    assert.strictEqual(session.body.data.sandbox.phone_number_id, bot.pnid)

    await bot.host.request("PATCH", `/platform/v1/workflow_embeds/${embed.id}`, { body: { workflow_embed: { expires_at: "2001-01-01T00:00:00Z" } } })
    assert.deepStrictEqual((await viewer(embed.token)("GET", "/session")).body, { error: "Invalid viewer token" })
    await bot.host.request("PATCH", `/platform/v1/workflow_embeds/${embed.id}`, { body: { workflow_embed: { expires_at: null } } })
    assert.strictEqual((await viewer(embed.token)("GET", "/session")).status, 200)
    assert.strictEqual((await bot.host.request("DELETE", `/platform/v1/workflow_embeds/${embed.id}`)).status, 204)
    assert.strictEqual((await viewer(embed.token)("GET", "/session")).status, 401)
    assert.strictEqual((await fetch(embed.embed_url)).status, 401)
    assert.strictEqual((await bot.host.request("GET", `/platform/v1/workflow_embeds/${embed.id}`)).body.data.status, "revoked")

    // The typed client follows the contract: embeds made and read through it.
    const client = createParleyClient({ baseUrl: bot.host.url, apiKey: bot.host.key })
    const made = await client.workflowEmbeds.create({ payload: { workflow_embed: { scope_type: "project", language: "es" } } })
    assert.match(made.data.embed_url, /\/viewer\/we_/)
    const read = await client.workflowEmbeds.get({ params: { id: made.data.id } })
    assert.strictEqual(read.data.language, "es")
    const listedByClient = await client.workflowEmbeds.list({ query: { status: "active" } })
    assert.include(listedByClient.body.data.map((e) => e.id), made.data.id)
  }, 120_000)

  it("draws the order bot, checks an edited definition, saves with lock_version, and shows a finished run's path and events", async () => {
    const workflowId = await orderBotId()
    const other = (await bot.host.request("POST", "/platform/v1/workflows", { body: { workflow: { name: "Other" } } })).body.data.id as string
    const executionId = await runOrderBot(bot, workflowId, "15557654321")
    const edit = viewer((await createEmbed({ scope_type: "workflow", scope_id: workflowId, access: "edit" })).body.data.token)
    const look = viewer((await createEmbed({ scope_type: "project" })).body.data.token)

    // The scope: one workflow, or the project's.
    assert.deepStrictEqual((await edit("GET", "/workflows")).body.data.map((w: { id: string }) => w.id), [workflowId])
    assert.includeMembers((await look("GET", "/workflows")).body.data.map((w: { id: string }) => w.id), [workflowId, other])
    assert.strictEqual((await edit("GET", `/workflows/${other}`)).status, 404)
    assert.strictEqual((await look("GET", `/workflows/${other}`)).status, 200)

    const graph = await edit("GET", `/workflows/${workflowId}`)
    assert.strictEqual(graph.status, 200, graph.text)
    const definition = graph.body.data.definition
    assert.deepStrictEqual(definition.nodes.map((n: { id: string }) => n.id), ["start", "hi", "ask", "route", "status", "human"])
    assert.deepStrictEqual(definition.edges.map((e: { label: string }) => e.label), ["next", "next", "next", "yes", "no"])
    assert.strictEqual(definition.nodes[3].data.display_name, "Decide")

    // Checked as edited: the stored graph is valid; a broken one names its node and edge.
    assert.deepStrictEqual((await edit("POST", `/workflows/${workflowId}/validate`, { definition })).body.data, { valid: true, problems: [] })
    const broken = {
      nodes: definition.nodes.map((n: any) => (n.id === "hi" ? { ...n, data: { ...n.data, config: {} } } : n)),
      edges: [...definition.edges, { source: "status", target: "ghost" }]
    }
    const checked = await edit("POST", `/workflows/${workflowId}/validate`, { definition: broken })
    assert.strictEqual(checked.status, 200, checked.text)
    assert.isFalse(checked.body.data.valid)
    const paths: Array<string> = checked.body.data.problems.map((p: { path: string }) => p.path)
    assert.isTrue(paths.some((p) => p.startsWith("nodes.hi.")), paths.join())
    assert.include(paths, "edges[5].target")
    assert.strictEqual((await edit("POST", `/workflows/${other}/validate`, { definition })).status, 404)

    // Saved with the version it was read at; a stale version is refused; a read-only viewer may not save.
    const renamed = { ...definition, nodes: definition.nodes.map((n: any) => (n.id === "hi" ? { ...n, data: { ...n.data, display_name: "Greet" } } : n)) }
    assert.strictEqual((await look("PATCH", `/workflows/${workflowId}`, { definition: renamed, lock_version: graph.body.data.lock_version })).status, 403)
    const saved = await edit("PATCH", `/workflows/${workflowId}`, { definition: renamed, lock_version: graph.body.data.lock_version })
    assert.strictEqual(saved.status, 200, saved.text)
    assert.strictEqual(saved.body.data.lock_version, graph.body.data.lock_version + 1)
    assert.strictEqual(saved.body.data.definition.nodes[1].data.display_name, "Greet")
    const stale = await edit("PATCH", `/workflows/${workflowId}`, { definition: renamed, lock_version: graph.body.data.lock_version })
    assert.strictEqual(stale.status, 409, stale.text)
    assert.strictEqual((await edit("PATCH", `/workflows/${workflowId}`, { definition: broken, lock_version: saved.body.data.lock_version })).status, 422)

    // The executions, filtered; the finished run over its revision's graph (the name before the save).
    const runs = await edit("GET", `/workflows/${workflowId}/executions?status=ended`)
    assert.strictEqual(runs.status, 200, runs.text)
    assert.deepStrictEqual(runs.body.data.map((e: { id: string }) => e.id), [executionId])
    assert.deepStrictEqual((await edit("GET", `/workflows/${workflowId}/executions?status=failed`)).body.data, [])
    const run = await edit("GET", `/executions/${executionId}`)
    assert.strictEqual(run.status, 200, run.text)
    const { execution, path, events } = run.body.data
    assert.strictEqual(execution.status, "ended")
    assert.strictEqual(execution.execution_context.vars.answer, "yes please")
    assert.strictEqual(run.body.data.definition.nodes[1].data.display_name, "Send text")
    assert.deepStrictEqual(path.nodes.map((n: { id: string }) => n.id), ["start", "hi", "ask", "route", "status"])
    const edgeIds = new Map<string, string>(run.body.data.definition.edges.map((e: { id: string; source: string; target: string }) => [e.id, `${e.source}>${e.target}`]))
    assert.deepStrictEqual(path.edges.map((id: string) => edgeIds.get(id)), ["start>hi", "hi>ask", "ask>route", "route>status"])
    assert.isNull(path.failed_node)
    const types: Array<string> = events.map((e: { event_type: string }) => e.event_type)
    assert.strictEqual(types[0], "execution_started")
    assert.includeMembers(types, ["step_entered", "step_completed", "user_input_received", "decision_evaluated", "execution_ended"])
    assert.isFalse(run.body.data.events_truncated)
    assert.strictEqual((await viewer((await createEmbed({ scope_type: "workflow", scope_id: other })).body.data.token)("GET", `/executions/${executionId}`)).status, 404)

    // Actions need edit access and a live run.
    assert.strictEqual((await look("POST", `/executions/${executionId}/end`)).status, 403)
    assert.strictEqual((await edit("POST", `/executions/${executionId}/resume`)).status, 422)
    assert.strictEqual((await look("POST", `/workflows/${workflowId}/test_runs`, { phone_number: "15550001111" })).status, 403)
  }, 120_000)

  it("starts test runs on the sandbox number: one fails where the network refuses, one waits and is ended", async () => {
    const workflowId = await orderBotId()
    const edit = viewer((await createEmbed({ scope_type: "workflow", scope_id: workflowId, access: "edit" })).body.data.token)
    const start = async (phone_number: string) => {
      const started = await edit("POST", `/workflows/${workflowId}/test_runs`, { phone_number })
      assert.strictEqual(started.status, 202, started.text)
      return started.body.data.id as string
    }
    const settled = async (id: string, check: (run: any) => boolean) => {
      for (let i = 0; i < 200; i++) {
        const run = (await edit("GET", `/executions/${id}`)).body.data
        if (check(run)) return run
        await new Promise((r) => setTimeout(r, 50))
      }
      throw new Error(`run ${id} did not settle`)
    }

    // A contact who never wrote: the greeting is outside the 24-hour window, the run fails on it.
    const failed = await settled(await start("15550003333"), (r) => r.execution.status === "failed")
    assert.strictEqual(failed.path.failed_node, "hi")
    assert.strictEqual(failed.execution.error_details.code, "131047")
    assert.deepStrictEqual(failed.path.nodes.map((n: { id: string }) => n.id), ["start", "hi"])

    // A contact who just wrote: the run greets and waits for the answer, then is ended from the viewer.
    await runOrderBot(bot, workflowId, "15557650003")
    const id = await start("15557650003")
    const waiting = await settled(id, (r) => r.execution.waiting_reason === "wait_for_response")
    assert.strictEqual(waiting.execution.current_step.identifier, "ask")
    const ended = await edit("POST", `/executions/${id}/end`)
    assert.strictEqual(ended.status, 200, ended.text)
    assert.strictEqual(ended.body.data.status, "ended")
    assert.strictEqual((await edit("GET", `/executions/${id}`)).body.data.execution.status, "ended")
  }, 120_000)
})
