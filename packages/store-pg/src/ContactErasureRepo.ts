/**
 * `ContactErasureRepo` on PostgreSQL (migration 0024). Each deletion removes
 * at most `limit` rows of its table, chosen by a sub-select, so a contact with
 * years of history is erased in many short statements rather than one long
 * one. Bytes and JSON are matched on the contact's identifiers
 * (`erasureTerms`) as text.
 */
import {
  type ContactErasureRecord,
  ContactErasureRepo,
  type ErasureSubject,
  erasureTerms
} from "@parley/core"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { stepEventsSinceStart } from "./ExecutionsRepo.ts"
import { decodeFirst, decodeRows, IsoFromDate, jsonb } from "./Rows.ts"

/** A row of `contact_erasures`, times as ISO text. */
const ErasureRow = Schema.Struct({
  id: Schema.String,
  project_id: Schema.String,
  contact_id: Schema.String,
  status: Schema.Literals(["queued", "running", "done"]),
  step: Schema.NullOr(Schema.String),
  target: Schema.NullOr(Schema.Struct({
    wa_id: Schema.NullOr(Schema.String),
    business_scoped_user_id: Schema.NullOr(Schema.String),
    parent_business_scoped_user_id: Schema.NullOr(Schema.String)
  })),
  created_at: IsoFromDate,
  updated_at: IsoFromDate,
  finished_at: Schema.NullOr(IsoFromDate)
})
const toErasures: (rows: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<ContactErasureRecord>> = decodeRows(
  "contact_erasures",
  ErasureRow
)
const firstErasure: (rows: ReadonlyArray<unknown>) => Effect.Effect<Option.Option<ContactErasureRecord>> = decodeFirst(
  "contact_erasures",
  ErasureRow
)

export const layerContactErasureRepo = Layer.effect(
  ContactErasureRepo,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const count = <R>(rows: ReadonlyArray<R>) => rows.length

    // The contact's conversations and executions, as sub-selects the deletions share.
    const conversationsOf = (s: ErasureSubject) =>
      sql`SELECT id FROM msg_conversations WHERE project_id = ${s.project_id} AND contact_id = ${s.contact_id}`
    const executionsOf = (s: ErasureSubject) =>
      sql`
        SELECT id FROM workflow_executions WHERE project_id = ${s.project_id} AND contact_id = ${s.contact_id}
        UNION
        SELECT id FROM workflow_executions
        WHERE project_id = ${s.project_id} AND msg_conversation_id IN (${conversationsOf(s)})`
    /** True when the bytea `column` holds one of `terms` (UTF-8). */
    const bytesMention = (column: string, terms: ReadonlyArray<string>) =>
      sql`EXISTS (SELECT 1 FROM unnest(${terms}::text[]) AS t WHERE position(convert_to(t, 'UTF8') IN ${sql(column)}) > 0)`
    /** True when the text of the jsonb `column` holds one of `terms`. */
    const jsonMentions = (column: string, terms: ReadonlyArray<string>) =>
      sql`EXISTS (SELECT 1 FROM unnest(${terms}::text[]) AS t WHERE strpos(${sql(column)}::text, t) > 0)`

    const deletion = (f: (s: ErasureSubject, limit: number) => Effect.Effect<number, unknown>) =>
      Effect.fnUntraced(function*(s: ErasureSubject, limit: number) {
        return yield* f(s, limit)
      }, Effect.orDie)

    const open = (r: ContactErasureRecord): Effect.Effect<{ readonly record: ContactErasureRecord; readonly created: boolean }, unknown> =>
      Effect.gen(function*() {
        const inserted = yield* firstErasure(
          yield* sql`
          INSERT INTO contact_erasures (id, project_id, contact_id, status, step, target, created_at, updated_at, finished_at)
          VALUES (${r.id}, ${r.project_id}, ${r.contact_id}, ${r.status}, ${r.step},
            ${r.target === null ? null : jsonb(r.target)}::jsonb, ${r.created_at}, ${r.updated_at}, ${r.finished_at})
          ON CONFLICT (project_id, contact_id) WHERE status <> 'done' DO NOTHING
          RETURNING *`
        )
        if (Option.isSome(inserted)) return { record: inserted.value, created: true }
        const current = yield* firstErasure(
          yield* sql`
          SELECT * FROM contact_erasures
          WHERE project_id = ${r.project_id} AND contact_id = ${r.contact_id} AND status <> 'done'`
        )
        // Finished between the two statements: insert again.
        if (Option.isNone(current)) return yield* open(r)
        return { record: current.value, created: false }
      })

    return ContactErasureRepo.of({
      open: (record) => Effect.orDie(open(record)),
      find: Effect.fnUntraced(function*(id: string) {
        return yield* firstErasure(yield* sql`SELECT * FROM contact_erasures WHERE id = ${id}`)
      }, Effect.orDie),
      reach: Effect.fnUntraced(function*(id: string, step: string, at: string) {
        const rows = yield* sql`
          UPDATE contact_erasures SET status = 'running', step = ${step}, updated_at = ${at}
          WHERE id = ${id} AND status <> 'done' RETURNING id`
        return rows.length > 0
      }, Effect.orDie),
      finish: Effect.fnUntraced(function*(id: string, at: string) {
        yield* sql`
          UPDATE contact_erasures SET status = 'done', target = NULL, updated_at = ${at}, finished_at = ${at}
          WHERE id = ${id}`
      }, Effect.orDie),
      listUnfinished: Effect.fnUntraced(function*(limit: number) {
        return yield* toErasures(
          yield* sql`SELECT * FROM contact_erasures WHERE status <> 'done' ORDER BY created_at, id LIMIT ${limit}`
        )
      }, Effect.orDie),

      deleteStepEvents: deletion((s, limit) => {
        // No event of the contact's runs is older than their first start: the executor skips the weekly partitions
        // (0036) from before it. An event outside it (none is: `stepEventsSince`) would still go with its run.
        const since = sql`(
          SELECT ${stepEventsSinceStart(sql, sql.literal("min(started_at)"))} FROM workflow_executions
          WHERE id IN (${executionsOf(s)}))`
        return Effect.map(
          // The execution condition outside the subquery too: each partition (0036) finds its rows by its execution
          // index; without it the delete read every partition whole (`bench/partitionPlans.ts`).
          sql`
            DELETE FROM workflow_step_events
            WHERE execution_id IN (${executionsOf(s)}) AND created_at >= ${since} AND (id, created_at) IN (
              SELECT id, created_at FROM workflow_step_events
              WHERE execution_id IN (${executionsOf(s)}) AND created_at >= ${since} LIMIT ${limit})
            RETURNING 1`,
          count
        )
      }),
      deleteExecutions: deletion((s, limit) =>
        Effect.gen(function*() {
          const inputs = yield* sql`
            DELETE FROM workflow_execution_inputs WHERE id IN (
              SELECT id FROM workflow_execution_inputs
              WHERE project_id = ${s.project_id} AND contact_id = ${s.contact_id} LIMIT ${limit})
            RETURNING 1`
          if (inputs.length >= limit) return inputs.length
          // Step events a live run wrote since the previous step go by the foreign key's cascade.
          const executions = yield* sql`
            DELETE FROM workflow_executions WHERE id IN (
              SELECT id FROM (${executionsOf(s)}) AS e LIMIT ${limit - inputs.length})
            RETURNING 1`
          return inputs.length + executions.length
        })
      ),
      deleteProjectEvents: deletion((s, limit) =>
        Effect.map(
          sql`
            DELETE FROM events WHERE id IN (
              SELECT id FROM events
              WHERE project_id = ${s.project_id} AND conversation_id IN (${conversationsOf(s)}) LIMIT ${limit})
            RETURNING 1`,
          count
        )
      ),
      deleteDeliveries: deletion((s, limit) =>
        Effect.gen(function*() {
          const terms = erasureTerms(s)
          const phone = s.target.wa_id
          // Attempts go by the foreign key's cascade.
          const deliveries = yield* sql`
            DELETE FROM webhook_deliveries WHERE id IN (
              SELECT id FROM webhook_deliveries
              WHERE project_id = ${s.project_id}
                AND (conversation_phone_number = ${phone} OR ${bytesMention("body", terms)})
              LIMIT ${limit})
            RETURNING 1`
          if (deliveries.length >= limit) return deliveries.length
          const buffers = yield* sql`
            DELETE FROM webhook_buffers WHERE id IN (
              SELECT id FROM webhook_buffers
              WHERE project_id = ${s.project_id}
                AND (conversation_phone_number = ${phone} OR ${jsonMentions("items", terms)})
              LIMIT ${limit - deliveries.length})
            RETURNING 1`
          return deliveries.length + buffers.length
        })
      ),
      deleteDomainEvents: deletion((s, limit) =>
        Effect.map(
          sql`
            DELETE FROM domain_events WHERE id IN (
              SELECT id FROM domain_events
              WHERE project_id = ${s.project_id} AND ${jsonMentions("payload", erasureTerms(s))} LIMIT ${limit})
            RETURNING 1`,
          count
        )
      ),
      deleteUpstreamPayloads: deletion((s, limit) =>
        Effect.gen(function*() {
          const reports = yield* sql`
            DELETE FROM msg_status_events WHERE (phone_number_id, network_id, status, timestamp) IN (
              SELECT e.phone_number_id, e.network_id, e.status, e.timestamp
              FROM msg_status_events e JOIN msg_messages m
                ON m.phone_number_id = e.phone_number_id AND m.network_id = e.network_id
              WHERE m.project_id = ${s.project_id} AND m.contact_id = ${s.contact_id}
              LIMIT ${limit})
            RETURNING 1`
          if (reports.length >= limit) return reports.length
          // The inbox is not scoped by project (ingestion stores it before it knows one): a payload names its contact.
          const terms = erasureTerms(s).filter((t) => t !== s.contact_id)
          if (terms.length === 0) return reports.length
          const payloads = yield* sql`
            DELETE FROM msg_upstream_inbox WHERE id IN (
              SELECT id FROM msg_upstream_inbox WHERE ${bytesMention("body", terms)} LIMIT ${limit - reports.length})
            RETURNING 1`
          return reports.length + payloads.length
        })
      ),
      deleteMedia: deletion((s, limit) =>
        Effect.map(
          sql`
            DELETE FROM msg_media WHERE id IN (
              SELECT m.media->>'id' FROM msg_messages m
              WHERE m.project_id = ${s.project_id} AND m.contact_id = ${s.contact_id} AND m.media IS NOT NULL
                AND EXISTS (SELECT 1 FROM msg_media d WHERE d.id = m.media->>'id')
              LIMIT ${limit})
            AND project_id = ${s.project_id}
            RETURNING 1`,
          count
        )
      ),
      deleteMessages: deletion((s, limit) =>
        Effect.map(
          sql`
            DELETE FROM msg_messages WHERE id IN (
              SELECT id FROM msg_messages WHERE project_id = ${s.project_id} AND contact_id = ${s.contact_id} LIMIT ${limit})
            RETURNING 1`,
          count
        )
      ),
      // Messages that arrived while the erasure ran go by the foreign key's cascade.
      deleteConversations: deletion((s, limit) =>
        Effect.map(
          sql`
            DELETE FROM msg_conversations WHERE id IN (SELECT id FROM (${conversationsOf(s)}) AS c LIMIT ${limit})
            RETURNING 1`,
          count
        )
      ),
      deleteContact: deletion((s) =>
        Effect.map(
          sql`DELETE FROM msg_contacts WHERE project_id = ${s.project_id} AND id = ${s.contact_id} RETURNING 1`,
          count
        )
      )
    })
  })
)
