/**
 * The proxy's media routes over real HTTP with the network simulator behind
 * them (decisions 4.10, 8.3): upload (multipart), the media URL result with
 * a service-hosted `download_url` (own token, 4 minutes, no API key), the
 * download itself, and delete.
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids, UpstreamSettings } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Context, Effect, Exit, Layer, Option, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { connectSimulatedNumber, eventually, type MessagingHost, startMessagingHost } from "./messaging.support.ts"
import { Simulator } from "@parley/core/simulators"

let host: MessagingHost
let pnid: string
let close: () => Promise<void>

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    const ports = Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)
    host = yield* startMessagingHost(ports, { PARLEY_UPSTREAM_VERIFY_TOKEN: "proxy-media-verify-token-0123" })
    const number = yield* connectSimulatedNumber(host)
    pnid = number.phoneNumberId
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
}, 60_000)
afterAll(() => close())

const upload = async (bytes: Uint8Array, type: string, options: { readonly key?: string; readonly product?: boolean } = {}) => {
  const form = new FormData()
  if (options.product !== false) form.set("messaging_product", "whatsapp")
  form.set("file", new Blob([bytes as BlobPart], { type }), "photo.png")
  const res = await fetch(`${host.url}/proxy/v24.0/${pnid}/media`, {
    method: "POST",
    headers: { "x-api-key": options.key ?? host.key },
    body: form
  })
  const text = await res.text()
  return { status: res.status, text, body: text.length > 0 ? JSON.parse(text) : undefined }
}

describe("proxy media", () => {
  it("uploads, answers the media URL result with a working download_url, then deletes", async () => {
    const bytes = crypto.getRandomValues(new Uint8Array(20_000))
    bytes.set([0x89, 0x50, 0x4e, 0x47], 0)
    const up = await upload(bytes, "image/png")
    assert.strictEqual(up.status, 200, up.text)
    assert.deepStrictEqual(Object.keys(up.body), ["id"])
    const id: string = up.body.id

    const before = Date.now()
    const info = await host.request("GET", `/proxy/${id}?phone_number_id=${pnid}`)
    assert.strictEqual(info.status, 200, info.text)
    for (const k of ["id", "url", "mime_type", "file_size", "sha256", "download_url", "download_url_expires_at"]) {
      assert.property(info.body, k)
    }
    assert.strictEqual(info.body.id, id)
    assert.strictEqual(info.body.mime_type, "image/png")
    assert.strictEqual(info.body.file_size, "20000")
    const expires = Date.parse(info.body.download_url_expires_at)
    assert.isTrue(expires >= before + 4 * 60_000 - 1000 && expires <= Date.now() + 4 * 60_000 + 1000)
    assert.isTrue(info.body.download_url.startsWith(`${host.url}/proxy/media_download/`))

    const download = await fetch(info.body.download_url)
    assert.strictEqual(download.status, 200)
    assert.strictEqual(download.headers.get("content-type"), "image/png")
    assert.isTrue(Buffer.from(await download.arrayBuffer()).equals(Buffer.from(bytes)), "byte-identical")
    // A tampered token is refused.
    const tampered = await fetch(info.body.download_url.slice(0, -2) + "xx")
    assert.strictEqual(tampered.status, 404)

    const other = await host.request("GET", `/proxy/${id}?phone_number_id=${pnid}`, { key: host.otherKey })
    assert.strictEqual(other.status, 404)
    assert.strictEqual(other.body.error.code, 100)
    const missing = await host.request("GET", `/proxy/${id}`)
    assert.strictEqual(missing.status, 400)

    const deleted = await host.request("DELETE", `/proxy/${id}?phone_number_id=${pnid}`)
    assert.strictEqual(deleted.status, 200, deleted.text)
    assert.deepStrictEqual(deleted.body, { success: true })
    const gone = await host.request("GET", `/proxy/${id}?phone_number_id=${pnid}`)
    assert.notStrictEqual(gone.status, 200)
    assert.property(gone.body, "error")
  })

  it("refuses files outside the network's limits with 131053 before uploading", async () => {
    const big = new Uint8Array(5 * 1024 * 1024 + 1)
    const res = await upload(big, "image/jpeg")
    assert.strictEqual(res.status, 400, res.text)
    assert.strictEqual(res.body.error.code, 131053)
    assert.strictEqual(res.body.error.type, "MessageError")
    const gif = await upload(new Uint8Array(10), "image/gif")
    assert.strictEqual(gif.status, 400)
    assert.strictEqual(gif.body.error.code, 131053)
  })

  it("needs messaging_product and the project's number", async () => {
    const res = await upload(new Uint8Array(10), "application/pdf", { product: false })
    assert.strictEqual(res.status, 400)
    assert.strictEqual(res.body.error.code, 100)
    const other = await upload(new Uint8Array(10), "application/pdf", { key: host.otherKey })
    assert.strictEqual(other.status, 404)
    assert.strictEqual(other.body.error.code, 100)
  })

  it("refuses a send of media uploaded through another business account's number (decisions 7.4)", async () => {
    // A second number of the project, on another business account; the contact writes to it first.
    const simulator = Option.getOrThrow(Context.getOption(host.context, Simulator.NetworkSimulator))
    const other = { phoneNumberId: "100000000000777", businessAccountId: "200000000000777", accessToken: "other-account-token" }
    await Effect.runPromise(simulator.registerNumber({ ...other, displayPhoneNumber: "+1 555-010-0777", verifiedName: "Other" }))
    const connected = await host.request("POST", "/platform/v1/msg/phone_numbers", {
      body: {
        msg_config: {
          phone_number_id: other.phoneNumberId,
          business_account_id: other.businessAccountId,
          access_token: other.accessToken
        }
      }
    })
    assert.strictEqual(connected.status, 201, connected.text)
    const contact = "15550107070"
    await Effect.runPromise(simulator.inbound(other.phoneNumberId, { from: contact, message: { type: "text", text: { body: "hi" } } }))
    await Effect.runPromise(simulator.inbound(pnid, { from: contact, message: { type: "text", text: { body: "hi" } } }))
    await eventually("both windows open", async () => {
      const a = await host.request("GET", `/proxy/${pnid}/messages?direction=inbound`)
      const b = await host.request("GET", `/proxy/${other.phoneNumberId}/messages?direction=inbound`)
      return a.body.data.some((m: any) => m.from === contact) && b.body.data.length > 0
    })

    const png = new Uint8Array(64)
    png.set([0x89, 0x50, 0x4e, 0x47], 0)
    const up = await upload(png, "image/png")
    assert.strictEqual(up.status, 200, up.text)
    const send = (number: string) =>
      host.request("POST", `/proxy/v24.0/${number}/messages`, {
        body: { messaging_product: "whatsapp", to: contact, type: "image", image: { id: up.body.id, caption: "x" } }
      })
    const refused = await send(other.phoneNumberId)
    assert.strictEqual(refused.status, 422, refused.text)
    assert.deepStrictEqual(refused.body, {
      error: `Media ${up.body.id} was uploaded through another business account than the sending number's`,
      code: "messaging_account_mismatch"
    })
    const stored = await host.request("GET", `/proxy/${other.phoneNumberId}/messages?direction=outbound`)
    assert.deepStrictEqual(stored.body.data, [], "a refused send is not recorded")
    const sent = await send(pnid)
    assert.strictEqual(sent.status, 200, sent.text)
  })
})
