/**
 * Test support for the outside Cloud API SDK suites (issue 29 §2): a Parley
 * host on a loopback port with the network simulator behind it, the simulated
 * number connected to project A with the simulator's webhooks reaching
 * ingestion over HTTP, a contact who wrote first (the 24-hour window is open),
 * an approved template, and what each suite needs to point its SDK at
 * `{proxy_url}` and its webhook receiver at a number webhook of kind
 * `upstream`.
 */
import { Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Effect, Exit, Layer, Scope } from "effect"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll } from "vitest"
import { connectSimulatedNumber, type MessagingHost, startMessagingHost, storedMessage } from "./messaging.support.ts"

export interface SdkSuite {
  readonly host: MessagingHost
  /** `{proxy_url}`: the host's `/proxy`. */
  readonly proxyUrl: string
  readonly pnid: string
  readonly waba: string
  /** The contact who wrote first, and the network id of that message. */
  readonly contact: string
  readonly inboundId: string
  /** An approved template of the account: body `Order {{1}} is ready.`, `en_US`. */
  readonly template: { readonly id: string; readonly name: string }
}

/** A PNG the network takes (the signature bytes, then anything). */
export const PNG = (() => {
  const bytes = new Uint8Array(256)
  bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 0)
  return bytes
})()

/** The host for a suite, ready before its tests (handed to `ready`) and closed after them. */
export const sdkSuite = (name: string, ready: (suite: SdkSuite) => void) => {
  let close: () => Promise<void> = () => Promise.resolve()
  beforeAll(async () => {
    const scope = Effect.runSync(Scope.make())
    close = () => Effect.runPromise(Scope.close(scope, Exit.void))
    const { host, number } = await Effect.runPromise(Effect.gen(function*() {
      const host = yield* startMessagingHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer), {
        // The SDKs' webhook receivers listen on loopback.
        PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS: "true"
      })
      return { host, number: yield* connectSimulatedNumber(host, { sink: true }) }
    }).pipe(Effect.provideService(Scope.Scope, scope)))
    const contact = "15550202002"
    const written = await Effect.runPromise(host.simulator.inbound(number.phoneNumberId, {
      from: contact,
      profile_name: "Ada",
      message: { type: "text", text: { body: "hi" } }
    }))
    await storedMessage(host, number.phoneNumberId, written.id)
    const templateName = `order_ready_${name.replace(/[^a-z0-9]/gi, "_").toLowerCase()}`
    const created = await host.request("POST", `/proxy/v24.0/${number.businessAccountId}/message_templates`, {
      raw: JSON.stringify({
        name: templateName,
        category: "UTILITY",
        language: "en_US",
        components: [{ type: "BODY", text: "Order {{1}} is ready.", example: { body_text: [["A-1"]] } }]
      })
    })
    if (created.status !== 200) throw new Error(`creating the template: ${created.status} ${created.text}`)
    // Review is the network's (5 s in the simulator): approved at once here.
    await Effect.runPromise(host.simulator.setTemplateStatus(created.body.id, "APPROVED"))
    ready({
      host,
      proxyUrl: `${host.url}/proxy`,
      pnid: number.phoneNumberId,
      waba: number.businessAccountId,
      contact,
      inboundId: written.id,
      template: { id: created.body.id, name: templateName }
    })
  }, 120_000)
  afterAll(() => close())
}

/**
 * Registers a number webhook of kind `upstream` for `url`, signed with `secret`: the network's payloads of the
 * number are relayed there as they came. Answers its id.
 */
export const relayUpstream = async (suite: SdkSuite, url: string, secret: string): Promise<string> => {
  const created = await suite.host.request("POST", `/platform/v1/msg/phone_numbers/${suite.pnid}/webhooks`, {
    body: { msg_webhook: { kind: "upstream", url, secret_key: secret, events: [] } }
  })
  if (created.status !== 201) throw new Error(`registering the upstream webhook: ${created.status} ${created.text}`)
  return created.body.data.id
}

export const removeWebhook = (suite: SdkSuite, id: string) =>
  suite.host.request("DELETE", `/platform/v1/msg/phone_numbers/${suite.pnid}/webhooks/${id}`)

/** The contact writes `text` to the number through the network. */
export const contactWrites = (suite: SdkSuite, text: string) =>
  Effect.runPromise(suite.host.simulator.inbound(suite.pnid, {
    from: suite.contact,
    profile_name: "Ada",
    message: { type: "text", text: { body: text } }
  }))

/** A node:http server on a loopback port handing each request to `handle`; closed by the returned function. */
export const listen = (handle: (req: IncomingMessage, res: ServerResponse) => void) =>
  new Promise<{ readonly url: string; readonly close: () => Promise<void> }>((resolve) => {
    const server = createServer(handle)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resolve({
        url: `http://127.0.0.1:${port}`,
        close: () => new Promise<void>((done) => server.close(() => done()))
      })
    })
  })

/** The headers Parley's tracing would add; none may reach a customer's URL. */
export const TRACING_HEADERS = ["traceparent", "tracestate", "b3", "x-b3-traceid", "x-b3-spanid", "x-b3-sampled"]
