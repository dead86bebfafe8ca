/** The behaviour every `GuardrailsRepo` adapter owes, written once and run against each adapter. */
import { assert, layer } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import type { GuardrailSettingsRecord, OptOutRecord } from "../../guardrails/Guardrail.ts"
import { GuardrailsRepo } from "../../guardrails/GuardrailsRepo.ts"
import { MessageConfigsRepo } from "../../messaging/numbers/MessageConfigsRepo.ts"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import { at, givenProject, listenTo, uniqueId } from "./fixtures.ts"
import { makeConfig } from "./MessagingStorageConformance.ts"

const makeOptOut = (projectId: string, overrides: Partial<OptOutRecord> = {}): OptOutRecord => ({
  id: uniqueId("opt"),
  project_id: projectId,
  msg_config_id: null,
  recipient: "15550001111",
  source: "keyword",
  keyword: "STOP",
  created_at: at(0),
  ...overrides
})

/** Settings of the project (or, with `msg_config_id`, of a number) with nothing set but `overrides`. */
export const makeSettings = (projectId: string, overrides: Partial<GuardrailSettingsRecord> = {}): GuardrailSettingsRecord => ({
  project_id: projectId,
  msg_config_id: null,
  opt_out_keywords: null,
  opt_in_keywords: null,
  opt_out_confirmation: null,
  opt_in_confirmation: null,
  quiet_hours: null,
  frequency_caps: null,
  updated_at: at(0),
  ...overrides
})

const givenNumber = (projectId: string) =>
  Effect.gen(function*() {
    const config = makeConfig(projectId)
    yield* (yield* MessageConfigsRepo).insert(config)
    return config
  })

const page = { mode: "page", page: 1, perPage: 50 } as const

/** One recipient's facts, as a single send reads them. */
const factsOf = (projectId: string, msgConfigId: string, recipient: string) =>
  Effect.gen(function*() {
    const found = yield* (yield* GuardrailsRepo).recipientsFacts(projectId, msgConfigId, [recipient])
    return found.get(recipient) ?? { optOut: Option.none<OptOutRecord>(), zone: Option.none<string>() }
  })

export const guardrailsRepoConformance = <E>(
  name: string,
  storage: Layer.Layer<GuardrailsRepo | ProjectsRepo | MessageConfigsRepo, E>
): void =>
  layer(storage, { excludeTestServices: true })(name, (it) => {
    it.effect("keeps one opt-out per recipient and scope, finds the number's before the project's, lists and removes them", () =>
      Effect.gen(function*() {
        const repo = yield* GuardrailsRepo
        const p = yield* givenProject()
        const other = yield* givenProject()
        const a = yield* givenNumber(p.id)
        const b = yield* givenNumber(p.id)
        const projectWide = makeOptOut(p.id, { source: "api", keyword: null, created_at: at(1) })
        const onA = makeOptOut(p.id, { msg_config_id: a.id, created_at: at(2) })
        assert.deepStrictEqual(yield* repo.insertOptOut(onA), Option.some(onA))
        assert.deepStrictEqual(yield* repo.insertOptOut(projectWide), Option.some(projectWide))
        // The same scope again is not a second record.
        assert.isTrue(Option.isNone(yield* repo.insertOptOut(makeOptOut(p.id, { msg_config_id: a.id }))))
        assert.isTrue(Option.isNone(yield* repo.insertOptOut(makeOptOut(p.id))))

        assert.deepStrictEqual((yield* factsOf(p.id, a.id, onA.recipient)).optOut, Option.some(onA))
        assert.deepStrictEqual((yield* factsOf(p.id, b.id, onA.recipient)).optOut, Option.some(projectWide))
        assert.isTrue(Option.isNone((yield* factsOf(p.id, a.id, "15550002222")).optOut))
        assert.isTrue(Option.isNone((yield* factsOf(other.id, a.id, onA.recipient)).optOut))

        const listed = yield* repo.listOptOuts(p.id, {}, page)
        assert.deepStrictEqual(listed.items.map((o) => o.id), [onA.id, projectWide.id])
        assert.strictEqual(listed.total, 2)
        assert.deepStrictEqual((yield* repo.listOptOuts(p.id, { msg_config_id: a.id }, page)).items.map((o) => o.id), [onA.id])
        assert.deepStrictEqual((yield* repo.listOptOuts(p.id, { recipient: "15550002222" }, page)).items, [])
        assert.deepStrictEqual(yield* repo.findOptOut(p.id, onA.id), Option.some(onA))
        assert.isTrue(Option.isNone(yield* repo.findOptOut(other.id, onA.id)))

        assert.isTrue(Option.isNone(yield* repo.deleteOptOut(other.id, onA.id)))
        assert.deepStrictEqual(yield* repo.deleteOptOutOf(p.id, a.id, onA.recipient), Option.some(onA))
        assert.isTrue(Option.isNone(yield* repo.deleteOptOutOf(p.id, a.id, onA.recipient)))
        assert.deepStrictEqual(yield* repo.deleteOptOut(p.id, projectWide.id), Option.some(projectWide))
        assert.strictEqual((yield* repo.listOptOuts(p.id, {}, page)).total, 0)
      }))

    it.effect("reads a batch of recipients' facts at once: only those with an opt-out or a zone, each as one read finds it", () =>
      Effect.gen(function*() {
        const repo = yield* GuardrailsRepo
        const p = yield* givenProject()
        const other = yield* givenProject()
        const a = yield* givenNumber(p.id)
        const b = yield* givenNumber(p.id)
        const projectWide = makeOptOut(p.id, { recipient: "15550000001", source: "api", keyword: null, created_at: at(1) })
        const onA = makeOptOut(p.id, { msg_config_id: a.id, recipient: "15550000001", created_at: at(2) })
        const onB = makeOptOut(p.id, { msg_config_id: b.id, recipient: "15550000002" })
        const elsewhere = makeOptOut(other.id, { recipient: "15550000003" })
        for (const o of [projectWide, onA, onB, elsewhere]) yield* repo.insertOptOut(o)
        yield* repo.putZone({ project_id: p.id, recipient: "15550000004", time_zone: "Asia/Tokyo", updated_at: at(0) })
        yield* repo.putZone({ project_id: p.id, recipient: "15550000001", time_zone: "Europe/Lisbon", updated_at: at(0) })

        const asked = ["15550000001", "15550000002", "15550000003", "15550000004", "15550000005", "15550000001"]
        const onNumberA = yield* repo.recipientsFacts(p.id, a.id, asked)
        assert.deepStrictEqual([...onNumberA.keys()].sort(), ["15550000001", "15550000004"])
        assert.deepStrictEqual(onNumberA.get("15550000001"), { optOut: Option.some(onA), zone: Option.some("Europe/Lisbon") })
        assert.deepStrictEqual(onNumberA.get("15550000004"), { optOut: Option.none(), zone: Option.some("Asia/Tokyo") })
        const onNumberB = yield* repo.recipientsFacts(p.id, b.id, asked)
        assert.deepStrictEqual(onNumberB.get("15550000001")?.optOut, Option.some(projectWide))
        assert.deepStrictEqual(onNumberB.get("15550000002")?.optOut, Option.some(onB))
        assert.strictEqual((yield* repo.recipientsFacts(p.id, a.id, [])).size, 0)
      }))

    it.effect("stores the project's and a number's settings apart and replaces them", () =>
      Effect.gen(function*() {
        const repo = yield* GuardrailsRepo
        const p = yield* givenProject()
        const a = yield* givenNumber(p.id)
        const project = makeSettings(p.id, {
          opt_out_keywords: ["STOP", "BASTA"],
          quiet_hours: { start: "21:00", end: "08:00", days: [1, 2, 3, 4, 5] },
          frequency_caps: { marketing_per_day: 1, marketing_per_week: null, scope: "project" }
        })
        const number = makeSettings(p.id, { msg_config_id: a.id, opt_out_confirmation: "Bye", updated_at: at(5) })
        yield* repo.putSettings(project)
        yield* repo.putSettings(number)
        assert.deepStrictEqual(yield* repo.listSettings(p.id), [project, number])
        const replaced = { ...project, quiet_hours: null, updated_at: at(9) }
        yield* repo.putSettings(replaced)
        assert.deepStrictEqual(yield* repo.findSettings(p.id, null), Option.some(replaced))
        assert.deepStrictEqual(yield* repo.findSettings(p.id, a.id), Option.some(number))
        assert.isTrue(Option.isNone(yield* repo.findSettings(p.id, (yield* givenNumber(p.id)).id)))
      }))

    it.effect("signals each settings change once it is done", () =>
      Effect.gen(function*() {
        const repo = yield* GuardrailsRepo
        const p = yield* givenProject()
        const a = yield* givenNumber(p.id)
        const signals = yield* listenTo(repo.changes)
        yield* repo.putSettings(makeSettings(p.id, { opt_out_keywords: ["PARA"] }))
        yield* signals.next
        yield* repo.putSettings(makeSettings(p.id, { msg_config_id: a.id, quiet_hours: null, updated_at: at(3) }))
        yield* signals.next
        yield* signals.stop
      }))

    it.effect("keeps a contact's own time zone until it is cleared", () =>
      Effect.gen(function*() {
        const repo = yield* GuardrailsRepo
        const p = yield* givenProject()
        const a = yield* givenNumber(p.id)
        yield* repo.putZone({ project_id: p.id, recipient: "15550001111", time_zone: "Asia/Tokyo", updated_at: at(0) })
        yield* repo.putZone({ project_id: p.id, recipient: "15550001111", time_zone: "Europe/Lisbon", updated_at: at(1) })
        assert.deepStrictEqual((yield* factsOf(p.id, a.id, "15550001111")).zone, Option.some("Europe/Lisbon"))
        assert.isTrue(yield* repo.deleteZone(p.id, "15550001111"))
        assert.isFalse(yield* repo.deleteZone(p.id, "15550001111"))
        assert.isTrue(Option.isNone((yield* factsOf(p.id, a.id, "15550001111")).zone))
      }))

    it.effect("counts marketing sends per key, number or project, since a time, and prunes old ones", () =>
      Effect.gen(function*() {
        const repo = yield* GuardrailsRepo
        const p = yield* givenProject()
        const a = yield* givenNumber(p.id)
        const b = yield* givenNumber(p.id)
        const send = (configId: string, key: string, ms: number) =>
          repo.recordMarketing({ project_id: p.id, msg_config_id: configId, recipient: "15550001111", key, sent_at: at(ms) }, at(ms - 100_000))
        yield* send(a.id, "k1", 0)
        yield* send(a.id, "k1", 10) // a retry of the same send
        yield* send(a.id, "k2", 20)
        yield* send(b.id, "k3", 30)
        assert.strictEqual(yield* repo.countMarketing(p.id, a.id, "15550001111", at(0)), 2)
        assert.strictEqual(yield* repo.countMarketing(p.id, null, "15550001111", at(0)), 3)
        assert.strictEqual(yield* repo.countMarketing(p.id, null, "15550001111", at(15)), 2)
        assert.strictEqual(yield* repo.countMarketing(p.id, null, "15550009999", at(0)), 0)
        // A send much later prunes the ones before its horizon.
        yield* send(a.id, "k4", 200_000)
        assert.strictEqual(yield* repo.countMarketing(p.id, null, "15550001111", at(-1)), 1)
      }))

    it.effect("erases a recipient's opt-outs, time zone and marketing sends, and nobody else's", () =>
      Effect.gen(function*() {
        const repo = yield* GuardrailsRepo
        const p = yield* givenProject()
        const a = yield* givenNumber(p.id)
        yield* repo.insertOptOut(makeOptOut(p.id, { msg_config_id: a.id }))
        yield* repo.insertOptOut(makeOptOut(p.id))
        yield* repo.insertOptOut(makeOptOut(p.id, { recipient: "15550002222" }))
        yield* repo.putZone({ project_id: p.id, recipient: "15550001111", time_zone: "Asia/Tokyo", updated_at: at(0) })
        yield* repo.recordMarketing({ project_id: p.id, msg_config_id: a.id, recipient: "15550001111", key: "k", sent_at: at(0) }, at(-1))
        assert.strictEqual(yield* repo.eraseRecipient(p.id, "15550001111"), 4)
        assert.strictEqual(yield* repo.eraseRecipient(p.id, "15550001111"), 0)
        const facts = yield* factsOf(p.id, a.id, "15550001111")
        assert.isTrue(Option.isNone(facts.optOut) && Option.isNone(facts.zone))
        assert.strictEqual(yield* repo.countMarketing(p.id, null, "15550001111", at(-10)), 0)
        assert.strictEqual((yield* repo.listOptOuts(p.id, {}, page)).total, 1)
      }))
  })
