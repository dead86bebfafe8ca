/**
 * Setup links in cloud mode: the page sends the customer to the network's
 * dialog (`PARLEY_UPSTREAM_SIGNUP_URL`) for the configured app, and the
 * callback exchanges the code over HTTP at `PARLEY_UPSTREAM_URL` (here the
 * simulator's HTTP face, whose dialog the test plays).
 */
import { assert, describe, it } from "@effect/vitest"
import { Ids } from "@parley/core"
import { Simulator } from "@parley/core/simulators"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Effect, Exit, Layer, Scope } from "effect"
import { HttpServer } from "effect/http"
import { afterAll, beforeAll } from "vitest"
import * as SimulatorServer from "../src/simulators/SimulatorServer.ts"
import { type MessagingHost, startMessagingHost } from "./messaging.support.ts"

const APP_ID = "777000000000001"
const APP_SECRET = "cloud-signup-app-secret"

let host: MessagingHost
let network: Simulator.NetworkSimulator["Service"]
let close: () => Promise<void>

beforeAll(async () => {
  const scope = Effect.runSync(Scope.make())
  await Effect.runPromise(Effect.gen(function*() {
    const upstream = yield* Layer.build(
      SimulatorServer.layerServer({ port: 0 }).pipe(
        Layer.provideMerge(Simulator.NetworkSimulator.layer({ appSecret: APP_SECRET, appId: APP_ID })),
        Layer.provide(Ids.layer)
      )
    )
    network = yield* Simulator.NetworkSimulator.pipe(Effect.provideContext(upstream))
    const upstreamUrl = yield* HttpServer.addressFormattedWith(Effect.succeed).pipe(Effect.provideContext(upstream))
    host = yield* startMessagingHost(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer), {
      PARLEY_UPSTREAM: "cloud",
      PARLEY_UPSTREAM_URL: upstreamUrl,
      PARLEY_UPSTREAM_APP_ID: APP_ID,
      PARLEY_UPSTREAM_APP_SECRET: APP_SECRET,
      PARLEY_UPSTREAM_SIGNUP_URL: "https://signup.network.example/v24.0/dialog/oauth",
      PARLEY_UPSTREAM_SIGNUP_CONFIG_ID: "config-42"
    })
  }).pipe(Effect.provideService(Scope.Scope, scope)))
  close = () => Effect.runPromise(Scope.close(scope, Exit.void))
}, 60_000)
afterAll(() => close())

const newLink = async () => {
  const customer = await host.request("POST", "/platform/v1/customers", { body: { customer: { name: "Cloud Shop" } } })
  const res = await host.request("POST", `/platform/v1/customers/${customer.body.data.id}/setup_links`, {
    body: { setup_link: { success_redirect_url: "https://example.com/ok", failure_redirect_url: "https://example.com/failed" } }
  })
  assert.strictEqual(res.status, 201, res.text)
  return res.body.data
}

/** The network's dialog, played on the simulator: the code it would hand back. */
const granted = (phoneNumberId: string) =>
  Effect.runPromise(network.authorizeSignup({ businessAccountId: "300000000000001", phoneNumberId })).then((answer) => {
    if (answer._tag !== "Granted") throw new Error(`refused: ${answer.reason}`)
    return answer
  })

describe("setup links in cloud mode", () => {
  it("opens the network's dialog for the app and exchanges the code at PARLEY_UPSTREAM_URL", async () => {
    const link = await newLink()
    const html = await (await fetch(link.url)).text()
    const href = new URL(/<a class="button" href="([^"]+)"/.exec(html)![1]!.replace(/&amp;/g, "&"))
    assert.strictEqual(`${href.origin}${href.pathname}`, "https://signup.network.example/v24.0/dialog/oauth")
    assert.strictEqual(href.searchParams.get("client_id"), APP_ID)
    assert.strictEqual(href.searchParams.get("config_id"), "config-42")
    assert.strictEqual(href.searchParams.get("response_type"), "code")
    assert.strictEqual(href.searchParams.get("redirect_uri"), `${host.url}/setup/${link.token}/callback`)
    assert.strictEqual((await fetch(`${host.url}/simulator/signup`)).status, 404, "no simulated dialog in cloud mode")

    const grant = await granted("300000000000011")
    const callback = `${host.url}/setup/${link.token}/callback?code=${grant.code}&waba_id=${grant.businessAccountId}` +
      `&phone_number_id=${grant.phoneNumberId}&state=${link.id}`
    const done = await fetch(callback, { redirect: "manual" })
    assert.strictEqual(done.status, 303)
    assert.strictEqual(
      done.headers.get("location"),
      `https://example.com/ok?setup_link_id=${link.id}&status=completed&phone_number_id=300000000000011` +
        `&business_account_id=300000000000001&display_phone_number=%2B15550200011`
    )
    const number = await host.request("GET", "/platform/v1/msg/phone_numbers/300000000000011")
    assert.strictEqual(number.status, 200, number.text)

    // A code the network already exchanged is refused: token_exchange_failed.
    const other = await newLink()
    const replay = await fetch(callback.replace(link.token, other.token), { redirect: "manual" })
    assert.strictEqual(
      replay.headers.get("location"),
      `https://example.com/failed?setup_link_id=${other.id}&error_code=token_exchange_failed`
    )
  })
})
