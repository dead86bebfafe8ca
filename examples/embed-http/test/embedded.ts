/**
 * What the embedding examples' tests share: start an example as a real process (its `npm start` command line, a
 * fresh data directory for its embedded PostgreSQL), check the application's own routes and every part of Parley
 * under `/parley` (the URLs Parley hands out included), then stop it with SIGTERM and find no process left.
 */
import { assert } from "@effect/vitest"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"

export const KEY = "pk_embedded_example_0123456789abcdef"

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = Net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as Net.AddressInfo
      server.close(() => resolve(port))
    })
  })

/** Retries `attempt` until it answers a value (not `undefined`), for asynchronous effects (inbound recording). */
const eventually = async <A>(what: string, attempt: () => Promise<A | undefined>, timeoutMs = 30_000): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await attempt()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(100)
  }
}

export interface RunningExample {
  readonly base: string
  readonly dataDir: string
  readonly output: () => string
  /** SIGTERM, then the exit code and the processes still using the data directory (none, when it stopped well). */
  readonly stop: () => Promise<{ readonly code: number | null; readonly left: ReadonlyArray<string> }>
}

const processesUsing = (dataDir: string) =>
  ChildProcess.execFileSync("ps", ["-eo", "pid,args"], { encoding: "utf8" }).split("\n").filter((line) => line.includes(dataDir))

/**
 * Starts the example in `dir` as `npm start` would (`node` with the start script's arguments, so the signal reaches
 * the application itself) and waits until `/parley/readyz` answers 200. `command` runs it in another way (the
 * installed-packages test runs it from tarballs).
 */
export const startExample = async (dir: string, command?: ReadonlyArray<string>): Promise<RunningExample> => {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "parley-embed-"))
  const args = command ??
    (JSON.parse(Fs.readFileSync(Path.join(dir, "package.json"), "utf8")) as { scripts: { start: string } }).scripts.start
      .split(/\s+/).slice(1)
  const child = ChildProcess.spawn(process.execPath, [...args], {
    cwd: dir,
    env: { ...process.env, DATABASE_URL: "", PORT: String(port), PARLEY_API_KEY: KEY, PARLEY_DATA_DIR: dataDir, PARLEY_LOG_LEVEL: "Warn" },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM")
    const code = await Promise.race([exited, sleep(30_000).then(() => "timeout" as const)])
    if (code === "timeout") child.kill("SIGKILL")
    const left = processesUsing(dataDir)
    Fs.rmSync(dataDir, { recursive: true, force: true })
    return { code: code === "timeout" ? null : code, left }
  }
  try {
    await eventually(`the example to be ready (output: ${output})`, async () => {
      if (child.exitCode !== null) throw new Error(`the example exited (${child.exitCode}):\n${output}`)
      const ok = await fetch(`${base}/parley/readyz`, { signal: AbortSignal.timeout(2_000) }).then((r) => r.ok, () => false)
      return ok || undefined
    }, 120_000)
  } catch (error) {
    await stop()
    throw error
  }
  return { base, dataDir, output: () => output, stop }
}

interface Answer {
  readonly status: number
  readonly type: string
  readonly text: string
  readonly json: any
}

const call = async (url: string, init: RequestInit & { readonly key?: boolean } = {}): Promise<Answer> => {
  const { key = true, ...rest } = init
  const res = await fetch(url, {
    ...rest,
    headers: {
      ...(key ? { "x-api-key": KEY } : {}),
      ...(rest.body !== undefined ? { "content-type": "application/json" } : {}),
      ...rest.headers
    },
    signal: AbortSignal.timeout(20_000)
  })
  const text = await res.text()
  const type = res.headers.get("content-type") ?? ""
  return { status: res.status, type, text, json: type.includes("json") && text.length > 0 ? JSON.parse(text) : undefined }
}

/** The application's routes, and every part of Parley under `/parley` with the URLs it hands out. */
export const checkEmbedded = async (base: string) => {
  const parley = `${base}/parley`
  const post = (path: string, body: unknown) => call(`${parley}${path}`, { method: "POST", body: JSON.stringify(body) })

  // The application keeps its own page and its own 404; Parley is not at the root.
  const page = await call(`${base}/`, { key: false })
  assert.strictEqual(page.status, 200)
  assert.include(page.text, "Acme support")
  for (const path of ["/nope", "/docs", "/platform/v1/workflows"]) {
    const missing = await call(`${base}${path}`, { key: false })
    assert.deepStrictEqual([missing.status, missing.text], [404, "Not found (the application's own 404)"], path)
  }

  // Health.
  assert.deepStrictEqual((await call(`${parley}/healthz`, { key: false })).json, { status: "ok" })
  assert.deepStrictEqual((await call(`${parley}/readyz`, { key: false })).json, { status: "ready" })

  // Upstream ingestion is reached (an unsigned webhook is Parley's 401, not the application's 404).
  const ingestion = await call(`${parley}/platform/v1/msg/upstream/webhook`, { key: false, method: "POST", body: "{}" })
  assert.strictEqual(ingestion.status, 401, ingestion.text)
  assert.isObject(ingestion.json)

  // Platform API: a list whose paging link carries the prefix, and opens.
  for (const name of ["First", "Second"]) assert.strictEqual((await post("/platform/v1/workflows", { workflow: { name } })).status, 201)
  const list = await call(`${parley}/platform/v1/workflows?limit=1`)
  assert.strictEqual(list.status, 200, list.text)
  const next: string = list.json.paging.next
  assert.isTrue(next.startsWith(`${parley}/platform/v1/workflows?`), next)
  const second = await call(next)
  assert.strictEqual(second.status, 200)
  assert.strictEqual(second.json.data[0].name, "First")

  // The older surface.
  const flows = await call(`${parley}/api/v1/flows`)
  assert.strictEqual(flows.status, 200, flows.text)
  assert.strictEqual(flows.json.data.length, 2)

  // Sandbox inbound, then a proxied send inside the window it opened, delivered to the sandbox outbox.
  const numbers = await call(`${parley}/platform/v1/msg/phone_numbers`)
  const pnid: string = numbers.json.data[0].phone_number_id
  const inbound = await post("/sandbox/inbound", {
    phone_number_id: pnid,
    from: "+15551234567",
    profile_name: "Ada",
    message: { type: "text", text: { body: "hi" } }
  })
  assert.strictEqual(inbound.status, 202, inbound.text)
  const sent = await eventually("the proxied send inside the contact's window", async () => {
    const answer = await post(`/proxy/v24.0/${pnid}/messages`, {
      messaging_product: "whatsapp",
      to: "+15551234567",
      type: "text",
      text: { body: "hello" }
    })
    return answer.status === 200 ? answer : undefined
  })
  assert.isString(sent.json.messages[0].id)
  const outbox = await call(`${parley}/sandbox/outbox?phone_number_id=${pnid}`)
  assert.strictEqual(outbox.status, 200)
  assert.isAbove(outbox.json.data.length, 0)

  // A setup link's `url` (and the simulated signup it leads to) under the prefix, and they open.
  const customer = await post("/platform/v1/customers", { customer: { name: "Acme" } })
  const link = await post(`/platform/v1/customers/${customer.json.data.id}/setup_links`, { setup_link: {} })
  assert.strictEqual(link.status, 201, link.text)
  const linkUrl: string = link.json.data.url
  assert.isTrue(linkUrl.startsWith(`${parley}/setup/`), linkUrl)
  const setupPage = await call(linkUrl, { key: false })
  assert.strictEqual(setupPage.status, 200)
  const dialog = /href="([^"]+)"/.exec(setupPage.text)![1]!.replaceAll("&amp;", "&")
  assert.isTrue(dialog.startsWith(`${parley}/simulator/signup?`), dialog)
  assert.strictEqual((await call(dialog, { key: false })).status, 200)

  // An inbox `embed_url` under the prefix: the page, its script and its API open there.
  const embed = await post("/platform/v1/inbox_embeds", { inbox_embed: { scope_type: "project", name: "Support" } })
  assert.strictEqual(embed.status, 201, embed.text)
  const embedUrl: string = embed.json.data.embed_url
  assert.isTrue(embedUrl.startsWith(`${parley}/embed/`), embedUrl)
  const inboxPage = await call(embedUrl, { key: false })
  assert.strictEqual(inboxPage.status, 200)
  const script = new URL(/src="([^"]+\.js)"/.exec(inboxPage.text)![1]!, embedUrl).toString()
  assert.isTrue(script.startsWith(`${parley}/inbox/assets/`), script)
  assert.strictEqual((await call(script, { key: false })).status, 200)
  const session = await call(`${parley}/inbox/v1/session`, { key: false, headers: { "x-inbox-token": embed.json.data.token } })
  assert.strictEqual(session.status, 200, session.text)

  // A function's `endpoint_url`.
  const fn = await post("/platform/v1/functions", {
    function: { name: "Hello", code: "async function handler() { return Response.json({ hello: true }) }" }
  })
  assert.strictEqual(fn.status, 201, fn.text)
  assert.strictEqual(fn.json.data.endpoint_url, `${parley}/platform/v1/functions/${fn.json.data.id}/invoke`)

  // The model simulator (simulator mode): declared, and answering under the prefix.
  const models = await call(`${parley}/platform/v1/provider_models`)
  assert.include((models.json.data as Array<{ name: string }>).map((m) => m.name), "parley-sim")
  const completion = await call(`${parley}/model-simulator/v1/chat/completions`, {
    key: false,
    method: "POST",
    body: JSON.stringify({ model: "parley-sim", messages: [{ role: "user", content: "hi" }] })
  })
  assert.strictEqual(completion.status, 200, completion.text)

  // MCP.
  const mcp = await call(`${parley}/mcp`, {
    method: "POST",
    headers: { accept: "application/json, text/event-stream" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "embed-test", version: "1" } }
    })
  })
  assert.strictEqual(mcp.status, 200, mcp.text)
  assert.include(mcp.text, "serverInfo")

  // The reference and the document name the prefixed server.
  const docs = await call(`${parley}/docs`, { key: false })
  assert.strictEqual(docs.status, 200)
  assert.include(docs.text, parley)
  const openapi = await call(`${parley}/openapi.json`, { key: false })
  assert.deepStrictEqual(openapi.json.servers, [{ url: parley }])
}
