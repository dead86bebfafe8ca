/**
 * `ContactErasureRepo` on PostgreSQL (migration 0024): the erasure records. The deletions are each capability's own
 * (`ExecutionsErasure.ts`, `EventsErasure.ts`, `WebhooksErasure.ts`, the outbox's in `EventsRepo.ts`,
 * `MessagingErasure.ts`).
 */
import { type ContactErasureRecord, ContactErasureRepo } from "@parley/core"
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
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
      }, Effect.orDie)
    })
  })
)
