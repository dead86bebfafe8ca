/**
 * The inbox embeds suite over real HTTP with the simulated network, run on memory ports (`inbox.http.test.ts`) and on
 * PostgreSQL (`inbox.http.pg.test.ts`): the Platform CRUD rules of decisions 2.17/4.7, the token's refusals, and the
 * inbox API the page calls (scope, filters, replies attributed to the embed, mark-read, handoff, ending).
 */
import { assert, describe, it } from "@effect/vitest"
import type { Effect, Layer, Scope } from "effect"
import { eventually, hostForSuite, type MessagingHost } from "./messaging.support.ts"

export const inboxOverHttp = (storage: string, ports: Effect.Effect<Layer.Layer<any, any, never>, unknown, Scope.Scope>) => {
  let host: MessagingHost
  let pnid: string
  hostForSuite(ports, (h, p) => {
    host = h
    pnid = p
  })

  const createEmbed = (inbox_embed: Record<string, unknown>, key?: string) =>
    host.request("POST", "/platform/v1/inbox_embeds", { body: { inbox_embed }, ...(key !== undefined ? { key } : {}) })

  const inbox = (token: string, method: string, path: string, body?: unknown) =>
    host.request(method, `/inbox/v1${path}`, { key: null, headers: { "x-inbox-token": token }, ...(body !== undefined ? { body } : {}) })

  const writeIn = async (from: string, text: string, profile_name = "Contact") => {
    const res = await host.request("POST", "/sandbox/inbound", {
      body: { phone_number_id: pnid, from, profile_name, message: { type: "text", text: { body: text } } }
    })
    assert.strictEqual(res.status, 202, res.text)
  }

  const conversationOf = async (token: string, search: string) => {
    let found: any
    await eventually(`a conversation matching ${search}`, async () => {
      const res = await inbox(token, "GET", `/conversations?search=${encodeURIComponent(search)}`)
      found = res.body?.data?.[0]
      return found !== undefined
    })
    return found
  }

  describe(`inbox embeds over HTTP (${storage})`, () => {
    it("creates with the token and embed_url once; later answers omit them", async () => {
      const res = await createEmbed({
        scope_type: "project",
        name: "Support desk",
        allowed_origins: ["https://app.example.com/", "http://localhost:3000"],
        language: "es",
        default_mode: "dark",
        assigned_user_id: "agent-7",
        assigned_user_name: "Ana"
      })
      assert.strictEqual(res.status, 201, res.text)
      const created = res.body.data
      assert.deepStrictEqual(Object.keys(created).sort(), [
        "allowed_origins", "assigned_user_id", "assigned_user_name", "created_at", "default_mode", "embed_url", "expires_at", "id",
        "language", "last_used_at", "name", "scope_id", "scope_name", "scope_type", "status", "token", "updated_at"
      ])
      assert.match(created.token, /^ie_[A-Za-z0-9_-]{43}$/)
      assert.strictEqual(created.embed_url, `${host.url}/embed/${created.token}`)
      assert.deepStrictEqual(created.allowed_origins, ["https://app.example.com", "http://localhost:3000"])
      assert.strictEqual(created.scope_id, null)
      assert.strictEqual(created.scope_name, "Project A")
      assert.strictEqual(created.status, "active")
      const { token: _token, embed_url: _url, ...record } = created
      assert.deepStrictEqual((await host.request("GET", `/platform/v1/inbox_embeds/${created.id}`)).body, { data: record })
      const listed = await host.request("GET", `/platform/v1/inbox_embeds?assigned_user_id=agent-7`)
      assert.deepStrictEqual(listed.body.data, [record])
      assert.deepStrictEqual(listed.body.meta, { page: 1, per_page: 20, total_pages: 1, total_count: 1 })
      const patched = await host.request("PATCH", `/platform/v1/inbox_embeds/${created.id}`, {
        body: { inbox_embed: { name: "Night desk", language: "en", allowed_origins: [], scope_type: "customer", expires_at: null } }
      })
      assert.strictEqual(patched.status, 200, patched.text)
      assert.strictEqual(patched.body.data.name, "Night desk")
      assert.strictEqual(patched.body.data.scope_type, "project")
      assert.deepStrictEqual(patched.body.data.allowed_origins, [])
      assert.isUndefined(patched.body.data.token)
    })

    it("refuses scope_id missing for customer and number scopes, given for the project scope, or not the project's (422)", async () => {
      const missing = await createEmbed({ scope_type: "customer" })
      assert.strictEqual(missing.status, 422)
      assert.deepStrictEqual(missing.body.details, [{ path: "inbox_embed.scope_id", message: "is required for scope_type customer" }])
      assert.strictEqual((await createEmbed({ scope_type: "phone_number" })).status, 422)
      const given = await createEmbed({ scope_type: "project", scope_id: "x" })
      assert.strictEqual(given.body.error, "scope_id must be absent for scope_type project")
      assert.strictEqual((await createEmbed({ scope_type: "phone_number", scope_id: pnid }, host.otherKey)).status, 422)
      assert.strictEqual((await createEmbed({ scope_type: "customer", scope_id: "00000000-0000-4000-8000-000000000000" })).status, 422)
      const origin = await createEmbed({ scope_type: "project", allowed_origins: ["https://ok.example", "https://x.example/path"] })
      assert.strictEqual(origin.status, 422)
      assert.strictEqual(origin.body.details[0].path, "inbox_embed.allowed_origins[1]")
      assert.strictEqual((await createEmbed({ scope_type: "project", expires_at: "tomorrow" })).status, 422)
      assert.strictEqual((await createEmbed({ scope_type: "project", default_mode: "sepia" })).status, 422)
      assert.strictEqual((await createEmbed({ scope_type: "project", language: "fr" })).status, 422)
      assert.strictEqual((await createEmbed({})).status, 422)
      const scoped = await createEmbed({ scope_type: "phone_number", scope_id: pnid })
      assert.strictEqual(scoped.status, 201, scoped.text)
      assert.strictEqual(scoped.body.data.scope_id, pnid)
    })

    it("keeps embeds to their project, revokes at once for good, and refuses expired tokens", async () => {
      const created = (await createEmbed({ scope_type: "project" })).body.data
      for (const [method, body] of [["GET", undefined], ["PATCH", { inbox_embed: { name: "x" } }], ["DELETE", undefined]] as const) {
        const res = await host.request(method, `/platform/v1/inbox_embeds/${created.id}`, { key: host.otherKey, ...(body ? { body } : {}) })
        assert.strictEqual(res.status, 404, method)
        assert.deepStrictEqual(res.body, { error: "Inbox embed not found" })
      }
      const session = await inbox(created.token, "GET", "/session")
      assert.strictEqual(session.status, 200, session.text)
      assert.strictEqual(session.body.data.sender_name, created.name)
      assert.isNotNull((await host.request("GET", `/platform/v1/inbox_embeds/${created.id}`)).body.data.last_used_at)

      const expired = await host.request("PATCH", `/platform/v1/inbox_embeds/${created.id}`, {
        body: { inbox_embed: { expires_at: "2020-01-01T00:00:00Z" } }
      })
      assert.strictEqual(expired.body.data.status, "active")
      assert.deepStrictEqual((await inbox(created.token, "GET", "/session")).body, { error: "Invalid inbox token" })
      await host.request("PATCH", `/platform/v1/inbox_embeds/${created.id}`, { body: { inbox_embed: { expires_at: null } } })
      assert.strictEqual((await inbox(created.token, "GET", "/session")).status, 200)

      const revoked = await host.request("DELETE", `/platform/v1/inbox_embeds/${created.id}`)
      assert.strictEqual(revoked.status, 204)
      assert.strictEqual((await host.request("GET", `/platform/v1/inbox_embeds/${created.id}`)).body.data.status, "revoked")
      assert.strictEqual((await host.request("DELETE", `/platform/v1/inbox_embeds/${created.id}`)).status, 204)
      assert.strictEqual((await inbox(created.token, "GET", "/session")).status, 401)
      assert.strictEqual((await host.request("GET", `/embed/${created.token}`, { key: null })).status, 401)
      assert.strictEqual((await inbox("ie_unknown", "GET", "/session")).status, 401)
      const listed = await host.request("GET", "/platform/v1/inbox_embeds?status=revoked")
      assert.isTrue(listed.body.data.some((e: any) => e.id === created.id))
    })

    it("serves the page only for a valid token, framed by the allowed origins only", async () => {
      const created = (await createEmbed({ scope_type: "project", allowed_origins: ["https://app.example.com", "https://b.example"] })).body.data
      const page = await host.request("GET", `/embed/${created.token}`, { key: null })
      assert.strictEqual(page.status, 200, page.text)
      const policy = page.headers.get("content-security-policy")!
      assert.include(policy, "default-src 'self'")
      assert.include(policy, "frame-ancestors https://app.example.com https://b.example")
      assert.strictEqual(page.headers.get("referrer-policy"), "no-referrer")
      assert.notInclude(page.text, created.token)
      // Relative to the page (`<prefix>/embed/<token>`), so that an application's prefix stays.
      const script = /src="(\.\.\/inbox\/assets\/[^"]+\.js)"/.exec(page.text)![1]!
      const asset = await host.request("GET", new URL(script, `http://host/embed/${created.token}`).pathname, { key: null })
      assert.strictEqual(asset.status, 200)
      assert.include(asset.headers.get("cache-control")!, "immutable")
      const open = (await createEmbed({ scope_type: "project" })).body.data
      const any = await host.request("GET", `/embed/${open.token}`, { key: null })
      assert.include(any.headers.get("content-security-policy")!, "frame-ancestors *")
      // The token is the page's credential: no log line carries it.
      await eventually("the page requests are logged", () => host.logs.some((line) => line.includes("/embed/:token")))
      assert.isFalse(host.logs.some((line) => line.includes(created.token) || line.includes(open.token)))
    })

    it("lists the scope's conversations with the inbox filters, replies as the embed, marks read, ends", async () => {
      const embed = (await createEmbed({ scope_type: "phone_number", scope_id: pnid, assigned_user_id: "agent-1", assigned_user_name: "Bea" }))
        .body.data
      await writeIn("15550001001", "Where is my order 4411?", "Olga Inbox")
      await writeIn("15550001002", "Hola", "Pablo Inbox")
      const olga = await conversationOf(embed.token, "order 4411")
      assert.strictEqual(olga.contact_name, "Olga Inbox")
      assert.strictEqual(olga.window_open, true)
      assert.strictEqual(olga.unread_count, 1)
      assert.strictEqual(olga.handoff, null)
      assert.deepStrictEqual((await inbox(embed.token, "GET", "/conversations?search=1001&status=all")).body.data.map((c: any) => c.id), [olga.id])
      assert.deepStrictEqual((await inbox(embed.token, "GET", "/conversations?status=ended")).body.data, [])
      await conversationOf(embed.token, "Pablo Inbox")
      const unread = (await inbox(embed.token, "GET", "/conversations?unread=1&search=Inbox")).body.data.map((c: any) => c.contact_name)
      assert.sameMembers(unread, ["Olga Inbox", "Pablo Inbox"])
      assert.strictEqual((await inbox(embed.token, "GET", "/conversations?msg_config_id=nope")).status, 422)

      const sent = await inbox(embed.token, "POST", `/conversations/${olga.id}/messages`, { text: "It ships today." })
      assert.strictEqual(sent.status, 201, sent.text)
      assert.deepStrictEqual(sent.body.data.sent_by, { type: "user", id: "agent-1", name: "Bea" })
      assert.strictEqual(sent.body.data.direction, "outbound")
      const platform = await host.request("GET", `/platform/v1/msg/messages?conversation_id=${olga.id}&direction=outbound`)
      assert.deepStrictEqual(platform.body.data[0].ext.sent_by, { type: "user", id: "agent-1", name: "Bea" })
      assert.strictEqual((await inbox(embed.token, "POST", `/conversations/${olga.id}/messages`, { text: "  " })).status, 422)

      const read = await inbox(embed.token, "POST", `/conversations/${olga.id}/read`)
      assert.deepStrictEqual(read.body, { data: { marked: true } })
      const thread = (await inbox(embed.token, "GET", `/conversations/${olga.id}`)).body.data
      assert.strictEqual(thread.conversation.unread_count, 0)
      assert.deepStrictEqual(thread.messages.map((m: any) => [m.direction, m.text]), [
        ["inbound", "Where is my order 4411?"],
        ["outbound", "It ships today."]
      ])
      assert.strictEqual(thread.messages[0].status, "read")
      await eventually("the reply is read", async () =>
        (await inbox(embed.token, "GET", `/conversations/${olga.id}`)).body.data.messages[1].status === "read")

      const ended = await inbox(embed.token, "POST", `/conversations/${olga.id}/end`)
      assert.strictEqual(ended.body.data.status, "ended")
      assert.deepStrictEqual((await inbox(embed.token, "GET", "/conversations?search=Olga")).body.data, [])
      assert.strictEqual((await inbox(embed.token, "GET", "/conversations?search=Olga&status=ended")).body.data.length, 1)
    })

    it("serves a thread's media to its embed only", async () => {
      const embed = (await createEmbed({ scope_type: "project" })).body.data
      const res = await host.request("POST", "/sandbox/inbound", {
        body: { phone_number_id: pnid, from: "15550001006", profile_name: "Mia Media", message: { type: "image", image: { caption: "receipt" } } }
      })
      assert.strictEqual(res.status, 202, res.text)
      const conversation = await conversationOf(embed.token, "Mia Media")
      let image: any
      await eventually("the image is kept", async () => {
        image = (await inbox(embed.token, "GET", `/conversations/${conversation.id}`)).body.data.messages.find((m: any) => m.media !== null)
        return image !== undefined
      })
      assert.strictEqual(image.type, "image")
      assert.strictEqual(image.text, "receipt")
      const media = await fetch(`${host.url}/inbox/v1/media/${image.id}`, { headers: { "x-inbox-token": embed.token } })
      assert.strictEqual(media.status, 200)
      assert.strictEqual(media.headers.get("content-type"), image.media.content_type)
      const bytes = new Uint8Array(await media.arrayBuffer())
      assert.strictEqual(bytes.byteLength, image.media.byte_size)
      // A sandbox image is a picture the inbox's <img> can draw: a PNG of its declared type, not text under image/jpeg.
      assert.strictEqual(image.media.content_type, "image/png")
      assert.deepStrictEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
      const header = new DataView(bytes.buffer, bytes.byteOffset + 16, 8)
      assert.deepStrictEqual([header.getUint32(0), header.getUint32(4)], [96, 64])
      assert.strictEqual((await fetch(`${host.url}/inbox/v1/media/${image.id}`)).status, 401)
      const customer = (await host.request("POST", "/platform/v1/customers", { body: { customer: { name: "Media Co" } } })).body.data
      const outside = (await createEmbed({ scope_type: "customer", scope_id: customer.id })).body.data
      const refused = await fetch(`${host.url}/inbox/v1/media/${image.id}`, { headers: { "x-inbox-token": outside.token } })
      assert.strictEqual(refused.status, 404)
      assert.deepStrictEqual(await refused.json(), { error: "Media not found" })
    })

    it("answers 404 for conversations outside the scope", async () => {
      await writeIn("15550001003", "scope check", "Scope Contact")
      const inScope = (await createEmbed({ scope_type: "project" })).body.data
      const conversation = await conversationOf(inScope.token, "scope check")
      const customer = (await host.request("POST", "/platform/v1/customers", { body: { customer: { name: "Other Co" } } })).body.data
      const outside = (await createEmbed({ scope_type: "customer", scope_id: customer.id })).body.data
      assert.deepStrictEqual((await inbox(outside.token, "GET", `/conversations/${conversation.id}`)).body, { error: "Conversation not found" })
      assert.strictEqual((await inbox(outside.token, "POST", `/conversations/${conversation.id}/messages`, { text: "x" })).status, 404)
      assert.deepStrictEqual((await inbox(outside.token, "GET", "/conversations?status=all")).body.data, [])
      const otherProject = (await createEmbed({ scope_type: "project" }, host.otherKey)).body.data
      assert.strictEqual((await inbox(otherProject.token, "GET", `/conversations/${conversation.id}`)).status, 404)
    })

    it("outside the 24-hour window refuses text and sends an approved template of the number", async () => {
      const embed = (await createEmbed({ scope_type: "project", name: "Templates desk" })).body.data
      const numbers = (await inbox(embed.token, "GET", "/session")).body.data.numbers
      const waba = (await host.request("GET", `/platform/v1/msg/phone_numbers`)).body.data.find((n: any) => n.phone_number_id === pnid)
        .business_account_id
      assert.deepStrictEqual(numbers.map((n: any) => n.phone_number_id), [pnid])
      const name = `inbox_followup_${Date.now()}`
      const template = await host.request("POST", `/proxy/${waba}/message_templates`, {
        raw: JSON.stringify({
          name,
          category: "UTILITY",
          language: "en_US",
          components: [{ type: "BODY", text: "Hello {{1}}, we have news.", example: { body_text: [["Ada"]] } }]
        })
      })
      assert.strictEqual(template.status, 200, template.text)
      await eventually("the template is approved", async () =>
        (await host.request("GET", `/platform/v1/msg/templates?phone_number_id=${pnid}&name=${name}&status=approved`)).body.data.length === 1, 15_000)
      // A business-initiated conversation: the contact never wrote, so the window is closed.
      const first = await host.request("POST", `/proxy/${pnid}/messages`, {
        raw: JSON.stringify({ messaging_product: "whatsapp", to: "15550001005", type: "template", template: { name, language: { code: "en_US" }, components: [{ type: "body", parameters: [{ type: "text", text: "Zoe" }] }] } })
      })
      assert.strictEqual(first.status, 200, first.text)
      const conversation = await conversationOf(embed.token, "15550001005")
      assert.strictEqual(conversation.window_open, false)
      const refused = await inbox(embed.token, "POST", `/conversations/${conversation.id}/messages`, { text: "Are you there?" })
      assert.strictEqual(refused.status, 422)
      assert.strictEqual(refused.body.error, "Only template messages can be sent outside the 24-hour window")
      const offered = (await inbox(embed.token, "GET", `/conversations/${conversation.id}/templates`)).body.data
      assert.deepStrictEqual(offered.find((t: any) => t.name === name), {
        name,
        language: "en_US",
        category: "UTILITY",
        body: "Hello {{1}}, we have news.",
        parameter_count: 1
      })
      const sent = await inbox(embed.token, "POST", `/conversations/${conversation.id}/messages`, {
        template: { name, language: "en_US", parameters: ["Zoe"] }
      })
      assert.strictEqual(sent.status, 201, sent.text)
      assert.strictEqual(sent.body.data.type, "template")
      assert.deepStrictEqual(sent.body.data.sent_by, { type: "inbox_embed", id: embed.id, name: "Templates desk" })
    })

    it("shows a handoff with its reason, lists it under handoff=1 and resumes it", async () => {
      const embed = (await createEmbed({ scope_type: "project" })).body.data
      const node = (id: string, node_type: string, config: Record<string, unknown> = {}) => ({ id, position: { x: 0, y: 0 }, data: { node_type, config } })
      const definition = {
        nodes: [node("start", "start"), node("human", "handoff", { reason: "Asked for a person", context_data: { order: "A-1009", priority: "high" } }), node("back", "send_text", { message: "Back to the bot" })],
        edges: [{ source: "start", target: "human" }, { source: "human", target: "back" }]
      }
      const workflow = (await host.request("POST", "/platform/v1/workflows", { body: { workflow: { name: "Handoff", status: "draft", definition } } }))
        .body.data
      const trigger = await host.request("POST", `/platform/v1/workflows/${workflow.id}/triggers`, {
        body: { trigger: { trigger_type: "inbound_message", phone_number_id: pnid } }
      })
      assert.strictEqual(trigger.status, 201, trigger.text)
      await host.request("PATCH", `/platform/v1/workflows/${workflow.id}`, { body: { workflow: { status: "active", message_debounce_seconds: 0 } } })
      await writeIn("15550001004", "I want a human", "Hana Handoff")
      let listed: Array<any> = []
      await eventually("the conversation is in handoff", async () => {
        listed = (await inbox(embed.token, "GET", "/conversations?handoff=1")).body.data
        return listed.some((c) => c.contact_name === "Hana Handoff")
      })
      const conversation = listed.find((c) => c.contact_name === "Hana Handoff")
      assert.strictEqual(conversation.handoff.reason, "Asked for a person")
      assert.strictEqual(conversation.handoff.source, "action_step")
      assert.deepStrictEqual(conversation.handoff.context_data, { order: "A-1009", priority: "high" })
      const executionId = conversation.handoff.execution_id
      const resumed = await inbox(embed.token, "POST", `/conversations/${conversation.id}/handoff/resume`)
      assert.strictEqual(resumed.status, 200, resumed.text)
      assert.strictEqual(resumed.body.data.handoff, null)
      await eventually("the execution ends after sending", async () =>
        (await host.request("GET", `/platform/v1/workflow_executions/${executionId}`)).body.data.status === "ended")
      const again = await inbox(embed.token, "POST", `/conversations/${conversation.id}/handoff/resume`)
      assert.deepStrictEqual(again.body, { error: "The conversation is not in handoff" })
      assert.strictEqual(again.status, 422)
      // Nothing else listens on the number after this suite's last test.
      await host.request("PATCH", `/platform/v1/workflows/${workflow.id}`, { body: { workflow: { status: "draft" } } })
    })
  })
}
