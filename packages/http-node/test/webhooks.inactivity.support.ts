/**
 * Test support for `msg.conversation.inactive` over real HTTP, on whichever
 * ports the caller gives (memory or PostgreSQL): a number-level webhook
 * registered through the API, an inbound message whose network time is two
 * minutes old (so a one-minute quiet period is already over when its timer is
 * armed), and the delivery on a loopback receiver: signed bytes verified with
 * `@parley/client`, the headers of 6.2, the body of 6.3, and the log.
 */
import { assert, describe, it } from "@effect/vitest"
import { verifyWebhookSignature } from "@parley/client"
import { MessageConfigsRepo, Messaging, UpstreamSettings, v2Conversation } from "@parley/core"
import { Context, Effect, Exit, Layer, Option, Redacted, Scope } from "effect"
import { afterAll, beforeAll } from "vitest"
import { type MessagingHost, startMessagingHost } from "./messaging.support.ts"
import { type Receiver, startReceiver } from "./receiver.ts"

const SECRET = "whsec_inactive_0123456789"

let host: MessagingHost
let receiver: Receiver
let pnid: string
let configId: string
let close: () => Promise<void>

/** Registers the suite over the ports `makePorts` builds in the suite's scope. */
export const inactivityOverHttp = <E>(storage: string, makePorts: Effect.Effect<Layer.Layer<any, E, never>, E, Scope.Scope>) => {
  beforeAll(async () => {
    const scope = Effect.runSync(Scope.make())
    await Effect.runPromise(Effect.gen(function*() {
      receiver = yield* startReceiver
      const ports = yield* makePorts
      host = yield* startMessagingHost(ports, { PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS: "true" })
      const number = Option.getOrThrow(Context.get(host.context, UpstreamSettings).simulatedNumber)
      pnid = number.phoneNumberId
      const connected = yield* Effect.promise(() =>
        host.request("POST", "/platform/v1/msg/phone_numbers", {
          body: {
            msg_config: {
              phone_number_id: pnid,
              business_account_id: number.businessAccountId,
              access_token: Redacted.value(number.accessToken)
            }
          }
        })
      )
      assert.strictEqual(connected.status, 201, connected.text)
      configId = connected.body.data.id
    }).pipe(Effect.provideService(Scope.Scope, scope)))
    close = () => Effect.runPromise(Scope.close(scope, Exit.void))
  }, 60_000)
  afterAll(() => close())

  describe(`msg.conversation.inactive over HTTP (${storage})`, () => {
    it("delivers the signed body to the receiver once the quiet period is over, and logs it", async () => {
      const created = await host.request("POST", `/platform/v1/msg/phone_numbers/${pnid}/webhooks`, {
        body: {
          msg_webhook: {
            url: `${receiver.url}/inactive`,
            secret_key: SECRET,
            events: ["msg.conversation.inactive"],
            inactivity_minutes: 1
          }
        }
      })
      assert.strictEqual(created.status, 201, created.text)
      const webhook = created.body.data
      const messaging = Context.get(host.context, Messaging)
      const config = Option.getOrThrow(
        await Effect.runPromise(Context.get(host.context, MessageConfigsRepo).findById(host.projectA, configId))
      )
      const wrote = Date.now() - 120_000
      const outcome = await Effect.runPromise(messaging.recordInbound(config, {
        message: {
          id: "wamid.inactive.1",
          from: "15550007001",
          timestamp: String(Math.floor(wrote / 1000)),
          type: "text",
          text: { body: "anyone there?" }
        },
        contact: { profile: { name: "Ana" }, wa_id: "15550007001" }
      }))
      assert.strictEqual(outcome._tag, "Recorded")
      const message = (outcome as Extract<typeof outcome, { _tag: "Recorded" }>).message

      const [request] = await receiver.received(1)
      assert.strictEqual(request!.path, "/inactive")
      assert.isTrue(verifyWebhookSignature(request!.raw, request!.headers["x-webhook-signature"] as string, SECRET))
      assert.strictEqual(request!.headers["x-webhook-event"], "msg.conversation.inactive")
      assert.strictEqual(request!.headers["x-webhook-payload-version"], "v2")
      const conversation = await Effect.runPromise(messaging.getConversation(host.projectA, message.conversation_id))
      assert.strictEqual(
        request!.raw.toString("utf8"),
        JSON.stringify({
          conversation: v2Conversation(conversation),
          since_message: { id: message.id, msg_message_id: "wamid.inactive.1", direction: "inbound", created_at: message.created_at },
          inactivity: { minutes: 1 },
          phone_number_id: pnid
        })
      )

      let log: any
      const deadline = Date.now() + 10_000
      while (Date.now() < deadline) {
        const res = await host.request("GET", `/platform/v1/webhook_deliveries?webhook_id=${webhook.id}`)
        log = res.body.data
        if (log[0]?.status === "delivered") break
        await new Promise((r) => setTimeout(r, 20))
      }
      assert.deepStrictEqual(
        log.map((d: any) => [d.event, d.status, d.phone_number_id, d.msg_config_id, d.conversation_phone_number]),
        [["msg.conversation.inactive", "delivered", pnid, configId, "15550007001"]]
      )
      assert.strictEqual(receiver.requests.length, 1)
    }, 30_000)
  })
}
