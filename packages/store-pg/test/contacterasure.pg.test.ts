/**
 * Contact erasure on PostgreSQL (decisions 4.8): a job that crashes in a step
 * (a failure, an interruption) resumes at that step, never running the
 * finished ones again; and after an erasure, no row of any table of the
 * schema, nor any bytea value, holds the contact's phone number, name,
 * business-scoped id or media bytes.
 */
import { assert, layer } from "@effect/vitest"
import {
  type ContactErasureRecord,
  ContactErasureRepo,
  ContactErasures,
  ExecutionsErasure,
  Ids,
  layerContactErasureWorkers,
  LogRecorder,
  MessagingErasure,
  Parley
} from "@parley/core"
import { layerMemoryJobQueue } from "@parley/core/testing"
import { givenContactRows, givenProject, makeContact, uniqueId } from "@parley/core/testing/conformance"
import { Effect, Exit, Fiber, Latch, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { layerJobQueue } from "../src/JobQueue.ts"
import { layerStorage } from "../src/Storage.ts"
import { layerTestDatabase } from "./pg.ts"

// What the flaky repo below does: counts the calls of the first step, fails `media` once, holds `messages` at the latch.
const calls = { step_events: 0, mediaFailures: 1 }
const messagesGate = Latch.makeUnsafe(false)

const layerFlakyRepo = Layer.mergeAll(
  Layer.effect(
    ExecutionsErasure,
    Effect.gen(function*() {
      const erasure = yield* ExecutionsErasure
      return ExecutionsErasure.of({
        ...erasure,
        deleteStepEvents: (projectId, contactId, limit) =>
          Effect.andThen(Effect.sync(() => calls.step_events++), erasure.deleteStepEvents(projectId, contactId, limit))
      })
    })
  ),
  Layer.effect(
    MessagingErasure,
    Effect.gen(function*() {
      const erasure = yield* MessagingErasure
      return MessagingErasure.of({
        ...erasure,
        deleteMedia: (projectId, contactId, limit) =>
          calls.mediaFailures-- > 0 ? Effect.die(new Error("the host died in the media step")) : erasure.deleteMedia(projectId, contactId, limit),
        deleteMessages: (projectId, contactId, limit) => Effect.andThen(messagesGate.await, erasure.deleteMessages(projectId, contactId, limit))
      })
    })
  )
)

const erasureOf = (id: string) =>
  Effect.gen(function*() {
    return Option.getOrThrow(yield* (yield* ContactErasureRepo).find(id))
  })

layer(
  ContactErasures.layer.pipe(
    Layer.provide(Parley.layerContactHoldings),
    Layer.provideMerge(LogRecorder.layer),
    Layer.provideMerge(layerFlakyRepo),
    Layer.provideMerge(Layer.mergeAll(layerStorage, layerMemoryJobQueue, Ids.layer)),
    Layer.provideMerge(layerTestDatabase)
  ),
  { excludeTestServices: true }
)("contact erasure job (postgres)", (it) => {
  it.effect("resumes at the step it was in after a failure and after an interruption", () =>
    Effect.gen(function*() {
      const erasures = yield* ContactErasures
      const project = yield* givenProject()
      const domainType = uniqueId("erasure.job")
      const erased = yield* givenContactRows(project.id, domainType, makeContact(project.id))
      const kept = yield* givenContactRows(project.id, domainType, makeContact(project.id))
      const queued = yield* erasures.request(project.id, `+${erased.contact.wa_id}`)
      assert.strictEqual(queued.status, "queued")

      // First attempt: the media step fails; the record stays at that step.
      const failed = yield* Effect.exit(erasures.run(queued.id))
      assert.isTrue(Exit.isFailure(failed))
      const atMedia = yield* erasureOf(queued.id)
      assert.deepStrictEqual([atMedia.status, atMedia.step], ["running", "media"])
      const sql = yield* SqlClient.SqlClient
      const countOf = (table: string, column: string, value: string) =>
        Effect.map(sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM ${sql(table)} WHERE ${sql(column)} = ${value}`, (r) => r[0]!.n)
      assert.strictEqual(yield* countOf("workflow_executions", "id", erased.execution.id), 0)
      assert.strictEqual(yield* countOf("msg_media", "id", erased.media.id), 1)

      // Second attempt: interrupted in the messages step (a host stopping mid-step).
      const fiber = yield* Effect.forkChild(erasures.run(queued.id))
      yield* Effect.gen(function*() {
        while ((yield* erasureOf(queued.id)).step !== "messages") yield* Effect.sleep(10)
      })
      yield* Fiber.interrupt(fiber)
      assert.strictEqual(yield* countOf("msg_media", "id", erased.media.id), 0)
      assert.strictEqual(yield* countOf("msg_messages", "contact_id", erased.contact.id), 2)
      assert.strictEqual((yield* erasureOf(queued.id)).step, "messages")

      // A repeated request meanwhile finds the same erasure.
      assert.strictEqual((yield* erasures.request(project.id, erased.contact.id)).id, queued.id)

      // Third attempt: resumes at messages and finishes; the first step never ran again.
      yield* messagesGate.open
      yield* erasures.run(queued.id)
      const done: ContactErasureRecord = yield* erasureOf(queued.id)
      assert.deepStrictEqual([done.status, done.target], ["done", null])
      assert.strictEqual(calls.step_events, 1)
      assert.strictEqual(yield* countOf("msg_contacts", "id", erased.contact.id), 0)
      assert.strictEqual(yield* countOf("msg_conversations", "contact_id", erased.contact.id), 0)
      assert.strictEqual(yield* countOf("msg_messages", "contact_id", kept.contact.id), 2)
      assert.strictEqual(yield* countOf("workflow_executions", "id", kept.execution.id), 1)
      // Done: a later run does nothing.
      yield* erasures.run(queued.id)
    }))
})

layer(
  layerContactErasureWorkers.pipe(
    Layer.provideMerge(ContactErasures.layer.pipe(Layer.provide(Parley.layerContactHoldings))),
    Layer.provideMerge(LogRecorder.layer),
    Layer.provideMerge(Layer.mergeAll(layerStorage, layerJobQueue({ pollingIntervalSeconds: 0.2 }), Ids.layer)),
    Layer.provideMerge(layerTestDatabase)
  ),
  { excludeTestServices: true }
)("contact erasure (postgres, every table)", (it) => {
  it.effect("leaves no row or bytea value that holds the contact's phone number, name, ids or media bytes", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const erasures = yield* ContactErasures
      const project = yield* givenProject()
      const domainType = uniqueId("erasure.scan")
      const name = `Quentin Erasmus ${crypto.randomUUID().slice(0, 8)}`
      const bytes = crypto.getRandomValues(new Uint8Array(64))
      const erased = yield* givenContactRows(project.id, domainType, makeContact(project.id, { profile_name: name }), bytes)
      const kept = yield* givenContactRows(project.id, domainType, makeContact(project.id, { profile_name: "Kept Person" }))
      const contact = erased.contact
      const terms = [contact.wa_id!, name, contact.business_scoped_user_id!]

      const tables = (yield* sql<{ readonly table_name: string }>`
        SELECT table_name FROM information_schema.tables
        WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`).map((t) => t.table_name)
      const byteaColumns = yield* sql<{ readonly table_name: string; readonly column_name: string }>`
        SELECT table_name, column_name FROM information_schema.columns
        WHERE table_schema = current_schema() AND data_type = 'bytea' ORDER BY table_name, column_name`
      /** Every place the contact still is: `table: term` for row text, `table.column: term` for bytes. */
      const mentions = Effect.gen(function*() {
        const found: Array<string> = []
        for (const table of tables) {
          const rows = yield* sql<{ readonly row: string }>`SELECT t::text AS row FROM ${sql(table)} AS t`
          for (const term of terms) if (rows.some((r) => r.row.includes(term))) found.push(`${table}: ${term}`)
        }
        for (const { column_name, table_name } of byteaColumns) {
          const needles: ReadonlyArray<readonly [string, Uint8Array]> = [
            ...terms.map((t) => [t, new TextEncoder().encode(t)] as const),
            ["media bytes", bytes]
          ]
          for (const [label, needle] of needles) {
            const [hit] = yield* sql<{ readonly n: number }>`
              SELECT count(*)::int AS n FROM ${sql(table_name)} WHERE position(${needle}::bytea IN ${sql(column_name)}) > 0`
            if (hit!.n > 0) found.push(`${table_name}.${column_name}: ${label}`)
          }
        }
        return found
      })

      // The scan sees the contact where it was stored, before.
      const before = yield* mentions
      for (const place of ["msg_contacts", "msg_conversations", "msg_messages", "workflow_executions", "workflow_step_events", "events", "domain_events"]) {
        assert.isTrue(before.some((m) => m.startsWith(`${place}: `)), `${place} held the contact before: ${before.join(", ")}`)
      }
      for (const place of ["msg_media.bytes: media bytes", "webhook_deliveries.body: ", "msg_upstream_inbox.body: "]) {
        assert.isTrue(before.some((m) => m.startsWith(place)), `${place} held the contact before`)
      }

      const record = yield* erasures.request(project.id, contact.business_scoped_user_id!)
      const repo = yield* ContactErasureRepo
      yield* Effect.gen(function*() {
        while (Option.getOrThrow(yield* repo.find(record.id)).status !== "done") yield* Effect.sleep(50)
      }).pipe(Effect.timeout(20_000))

      assert.deepStrictEqual(yield* mentions, [])
      const [keptRows] = yield* sql<{ readonly n: number }>`
        SELECT count(*)::int AS n FROM msg_messages WHERE contact_id = ${kept.contact.id}`
      assert.strictEqual(keptRows!.n, 2)
    }), { timeout: 60_000 })
})
