/**
 * Setup link onboarding on PostgreSQL: of two completions of one link racing
 * with different numbers, one connects (config, `msg.phone_number.created` and
 * the link marked used, committed together) and the other answers
 * `already_used` and leaves nothing behind.
 */
import { assert, describe, it } from "@effect/vitest"
import {
  Customers,
  MESSAGING_DOMAIN_EVENTS,
  MessageConfigs,
  Onboarding,
  Outbox,
  type Principal,
  SetupLinks,
  type SignupCallback,
  UpstreamSettings
} from "@parley/core"
import { Context, Effect, Option } from "effect"
import { messagingOnPostgres } from "./messagingPg.support.ts"
import { Simulator } from "@parley/core/simulators"

const { env, run } = messagingOnPostgres()

const principal = (): Principal => ({ project: { id: env.projectId } as Principal["project"], apiKey: { id: "k", name: "k" } })

const callbackFor = (phoneNumberId: string) =>
  Effect.gen(function*() {
    const simulator = yield* Simulator.running
    const answer = yield* simulator.authorizeSignup({ businessAccountId: "300000000000001", phoneNumberId })
    assert.strictEqual(answer._tag, "Granted")
    return answer._tag === "Granted"
      ? { code: answer.code, waba_id: answer.businessAccountId, phone_number_id: answer.phoneNumberId } satisfies SignupCallback
      : {}
  })

describe("setup link onboarding (postgres)", () => {
  it("connects one number when two completions of a link race", async () => {
    const { customer, first, second, token } = await run(Effect.gen(function*() {
      const customer = yield* (yield* Customers).create(principal(), { name: "Racing Shop" })
      const created = yield* (yield* SetupLinks).create(principal(), customer.id, {})
      yield* (yield* Outbox).take(MESSAGING_DOMAIN_EVENTS, 1000)
      return {
        customer,
        token: created.token,
        first: yield* callbackFor("300000000000011"),
        second: yield* callbackFor("300000000000012")
      }
    }))
    const onboarding = Context.get(env.context, Onboarding)
    const results = await Promise.all([first, second].map((callback) => run(onboarding.complete(token, callback))))
    const outcomes = results.map((r) => Option.getOrThrow(r).outcome)
    const connected = outcomes.filter((o) => o._tag === "Connected")
    assert.strictEqual(connected.length, 1, JSON.stringify(outcomes))
    assert.deepStrictEqual(outcomes.find((o) => o._tag === "Failed"), { _tag: "Failed", code: "already_used" })

    const numbers = await run(Context.get(env.context, MessageConfigs).list(principal(), { customer_id: customer.id }, {
      mode: "page",
      page: 1,
      perPage: 10
    }))
    assert.strictEqual(numbers.total, 1)
    const events = await run(Context.get(env.context, Outbox).take(MESSAGING_DOMAIN_EVENTS, 1000))
    assert.deepStrictEqual(events.map((e) => (e.payload as any).data.phone_number_id), [numbers.items[0]!.phone_number_id])
    const links = await run(Context.get(env.context, SetupLinks).list(principal(), customer.id, { mode: "page", page: 1, perPage: 10 }))
    assert.deepStrictEqual(links.items.map((l) => [l.status, l.phone_number_id]), [["used", numbers.items[0]!.phone_number_id]])
  })
})
