/** The behaviour every `SetupLinksRepo` adapter owes, written once and run against each adapter. */
import { assert, layer } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import { CustomersRepo } from "../../tenancy/CustomersRepo.ts"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import { SetupLinksRepo } from "../../tenancy/SetupLinksRepo.ts"
import type { CustomerRecord } from "../../tenancy/Customer.ts"
import { hashToken, type SetupLinkRecord } from "../../tenancy/SetupLink.ts"
import { at, givenProject, uniqueId } from "./fixtures.ts"

const DAY = 24 * 60 * 60 * 1000

const givenCustomer = (projectId: string) =>
  Effect.gen(function*() {
    const customer: CustomerRecord = {
      id: uniqueId("cus"),
      project_id: projectId,
      name: "Acme",
      external_customer_id: null,
      created_at: at(0),
      updated_at: at(0)
    }
    yield* (yield* CustomersRepo).insert(customer)
    return customer
  })

const makeLink = (customer: CustomerRecord, overrides: Partial<SetupLinkRecord> = {}): SetupLinkRecord => ({
  id: uniqueId("sl"),
  project_id: customer.project_id,
  customer_id: customer.id,
  token_hash: hashToken(uniqueId("token")),
  status: "active",
  msg_setup_status: "pending",
  error_code: null,
  expires_at: at(30 * DAY),
  success_redirect_url: "https://example.com/done",
  failure_redirect_url: null,
  allowed_connection_types: ["coexistence", "dedicated"],
  theme_config: { primary_color: "#112233" },
  language: "es",
  provision_phone_number: false,
  phone_number_country_isos: ["US"],
  upstream_billing_mode: "customer_managed",
  reconnect_phone_number: null,
  phone_number_id: null,
  used_at: null,
  revoked_at: null,
  created_at: at(0),
  updated_at: at(0),
  ...overrides
})

export const setupLinksRepoConformance = <E>(
  name: string,
  storage: Layer.Layer<SetupLinksRepo | CustomersRepo | ProjectsRepo, E>
): void =>
  layer(storage, { excludeTestServices: true })(name, (it) => {
    it.effect("stores a link and finds it by id within its customer, and by token hash", () =>
      Effect.gen(function*() {
        const repo = yield* SetupLinksRepo
        const p = yield* givenProject()
        const customer = yield* givenCustomer(p.id)
        const other = yield* givenCustomer(p.id)
        const link = makeLink(customer)
        yield* repo.insert(link)
        assert.deepStrictEqual(yield* repo.findById(p.id, customer.id, link.id), Option.some(link))
        assert.isTrue(Option.isNone(yield* repo.findById(p.id, other.id, link.id)))
        assert.deepStrictEqual(yield* repo.findByTokenHash(link.token_hash), Option.some(link))
        assert.isTrue(Option.isNone(yield* repo.findByTokenHash(hashToken("nobody's token"))))
      }))

    it.effect("keeps one active link per customer", () =>
      Effect.gen(function*() {
        const repo = yield* SetupLinksRepo
        const p = yield* givenProject()
        const customer = yield* givenCustomer(p.id)
        yield* repo.insert(makeLink(customer))
        const dup = yield* repo.insert(makeLink(customer)).pipe(Effect.flip)
        assert.strictEqual(dup.field, "customer_id")
        // Ended links do not count, and other customers are not affected.
        yield* repo.insert(makeLink(customer, { status: "revoked", revoked_at: at(1) }))
        yield* repo.insert(makeLink(yield* givenCustomer(p.id)))
      }))

    it.effect("ends the active link: revoked before it expires, expired after", () =>
      Effect.gen(function*() {
        const repo = yield* SetupLinksRepo
        const p = yield* givenProject()
        const a = yield* givenCustomer(p.id)
        const fresh = makeLink(a)
        yield* repo.insert(fresh)
        assert.strictEqual(yield* repo.endActive(p.id, a.id, at(DAY)), 1)
        const revoked = Option.getOrThrow(yield* repo.findById(p.id, a.id, fresh.id))
        assert.strictEqual(revoked.status, "revoked")
        assert.strictEqual(revoked.revoked_at, at(DAY))
        assert.strictEqual(revoked.updated_at, at(DAY))
        assert.strictEqual(yield* repo.endActive(p.id, a.id, at(DAY)), 0)

        const b = yield* givenCustomer(p.id)
        const old = makeLink(b)
        yield* repo.insert(old)
        assert.strictEqual(yield* repo.endActive(p.id, b.id, at(31 * DAY)), 1)
        const expired = Option.getOrThrow(yield* repo.findById(p.id, b.id, old.id))
        assert.strictEqual(expired.status, "expired")
        assert.isNull(expired.revoked_at)
        // The customer can have an active link again.
        yield* repo.insert(makeLink(b))
      }))

    it.effect("changes a link only while it is stored active", () =>
      Effect.gen(function*() {
        const repo = yield* SetupLinksRepo
        const p = yield* givenProject()
        const customer = yield* givenCustomer(p.id)
        const link = makeLink(customer)
        yield* repo.insert(link)
        const used: SetupLinkRecord = {
          ...link,
          status: "used",
          msg_setup_status: "completed",
          phone_number_id: "300000000000011",
          used_at: at(5),
          theme_config: { primary_color: "#445566", text_color: "#000000" },
          language: null,
          updated_at: at(5)
        }
        assert.deepStrictEqual(yield* repo.updateActive(used), Option.some(used))
        assert.deepStrictEqual(yield* repo.findByTokenHash(link.token_hash), Option.some(used))
        // Once used, nothing changes it again (of two completions, one wins).
        assert.isTrue(Option.isNone(yield* repo.updateActive({ ...used, status: "revoked", revoked_at: at(6) })))
        assert.isTrue(Option.isNone(yield* repo.updateActive({ ...makeLink(customer), id: uniqueId("sl") })))
      }))

    it.effect("lists a customer's links newest first, in pages", () =>
      Effect.gen(function*() {
        const repo = yield* SetupLinksRepo
        const p = yield* givenProject()
        const customer = yield* givenCustomer(p.id)
        const links = [1, 2, 3].map((i) =>
          makeLink(customer, { status: i === 3 ? "active" : "revoked", created_at: at(i), updated_at: at(i) })
        )
        for (const l of links) yield* repo.insert(l)
        yield* repo.insert(makeLink(yield* givenCustomer(p.id)))
        const first = yield* repo.list(p.id, customer.id, { mode: "page", page: 1, perPage: 2 })
        assert.deepStrictEqual(first.items.map((l) => l.id), [links[2]!.id, links[1]!.id])
        assert.strictEqual(first.total, 3)
        const second = yield* repo.list(p.id, customer.id, { mode: "page", page: 2, perPage: 2 })
        assert.deepStrictEqual(second.items.map((l) => l.id), [links[0]!.id])
        const beyond = yield* repo.list(p.id, customer.id, { mode: "page", page: 3, perPage: 2 })
        assert.deepStrictEqual(beyond.items, [])
      }))

    it.effect("a customer's links go with the customer", () =>
      Effect.gen(function*() {
        const repo = yield* SetupLinksRepo
        const p = yield* givenProject()
        const customer = yield* givenCustomer(p.id)
        const link = makeLink(customer)
        yield* repo.insert(link)
        yield* (yield* CustomersRepo).delete(p.id, customer.id)
        assert.isTrue(Option.isNone(yield* repo.findByTokenHash(link.token_hash)))
      }))
  })
