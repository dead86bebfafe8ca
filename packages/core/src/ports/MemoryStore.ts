/**
 * The in-memory database behind every memory repository, with transactions
 * that behave like the Postgres adapter's: a failed or interrupted
 * transaction leaves nothing behind, a nested one is a savepoint, and
 * transactions run one at a time.
 */
import { Context, Effect, Exit, Layer, Semaphore } from "effect"
import { Transactor } from "./Transactor.ts"

/** A named table of rows of type `A`, keyed by id. */
export interface MemoryTable<A> {
  readonly name: string
  readonly _A?: (_: A) => A
}

export const memoryTable = <A>(name: string): MemoryTable<A> => ({ name })

const cascades = new Map<string, Array<(tables: MemoryTables, removed: unknown) => void>>()

/**
 * What goes with a removed row of `table`, as a foreign key's `ON DELETE CASCADE` does in Postgres: declared once by
 * the adapter that owns the dependent rows (the executions of a workflow), so the owner of `table` needs nothing of it.
 */
export const cascadeOnRemove = <A>(table: MemoryTable<A>, cascade: (tables: MemoryTables, removed: A) => void): void => {
  cascades.set(table.name, [...(cascades.get(table.name) ?? []), cascade as (tables: MemoryTables, removed: unknown) => void])
}

/** Synchronous access to the tables; one `run` is atomic. Rows are immutable values: replace them, never mutate. */
export interface MemoryTables {
  readonly get: <A>(table: MemoryTable<A>, id: string) => A | undefined
  /** In insertion order. */
  readonly all: <A>(table: MemoryTable<A>) => ReadonlyArray<A>
  readonly put: <A>(table: MemoryTable<A>, id: string, row: A) => void
  /** False when there was no such row. */
  readonly remove: <A>(table: MemoryTable<A>, id: string) => boolean
}

/** Removes up to `limit` of `rows` from `table` (each by `key`); answers how many: a bounded deletion's step. */
export const removeSome = <A>(db: MemoryTables, table: MemoryTable<A>, rows: ReadonlyArray<A>, limit: number, key: (row: A) => string) => {
  const some = rows.slice(0, Math.max(limit, 0))
  for (const row of some) db.remove(table, key(row))
  return some.length
}

/** The key of a row kept by its id. */
export const byId = (row: { readonly id: string }) => row.id

interface UndoEntry {
  readonly table: string
  readonly id: string
  readonly had: boolean
  readonly previous: unknown
}

interface Transaction {
  readonly store: object
  /** Prior state of every row written in the transaction, oldest first. */
  readonly undo: Array<UndoEntry>
  /** Taken by each savepoint opened at this level: concurrent ones must not interleave their undo marks. */
  readonly savepoints: Semaphore.Semaphore
}

/** The transaction the current fiber runs in, if any. */
const CurrentTransaction = Context.Reference<Transaction | undefined>("@parley/core/testing/MemoryStore/CurrentTransaction", {
  defaultValue: () => undefined
})

export class MemoryStore extends Context.Service<MemoryStore, {
  /** Runs `f` atomically against the tables; a throw becomes a defect (do checks before writes). */
  readonly run: <A>(f: (tables: MemoryTables) => A) => Effect.Effect<A>
  readonly withTransaction: <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
}>()("@parley/core/testing/MemoryStore") {
  static readonly make = Effect.sync(() => {
    const tables = new Map<string, Map<string, unknown>>()
    const lock = Semaphore.makeUnsafe(1)
    const identity = {}

    const rowsOf = (name: string) => {
      let rows = tables.get(name)
      if (rows === undefined) {
        rows = new Map()
        tables.set(name, rows)
      }
      return rows
    }

    const accessFor = (tx: Transaction | undefined): MemoryTables => {
      const remember = (name: string, id: string) => {
        const rows = rowsOf(name)
        tx?.undo.push({ table: name, id, had: rows.has(id), previous: rows.get(id) })
      }
      const access: MemoryTables = {
        get: <A>(table: MemoryTable<A>, id: string) => rowsOf(table.name).get(id) as A | undefined,
        all: <A>(table: MemoryTable<A>) => Array.from(rowsOf(table.name).values()) as ReadonlyArray<A>,
        put: (table, id, row) => {
          remember(table.name, id)
          rowsOf(table.name).set(id, row)
        },
        remove: (table, id) => {
          const rows = rowsOf(table.name)
          if (!rows.has(id)) return false
          const removed = rows.get(id)
          remember(table.name, id)
          rows.delete(id)
          for (const cascade of cascades.get(table.name) ?? []) cascade(access, removed)
          return true
        }
      }
      return access
    }

    /** Undoes the writes made after the undo log had `mark` entries. */
    const rollbackTo = (tx: Transaction, mark: number) => {
      while (tx.undo.length > mark) {
        const entry = tx.undo.pop()!
        const rows = rowsOf(entry.table)
        if (entry.had) rows.set(entry.id, entry.previous)
        else rows.delete(entry.id)
      }
    }

    const current = Effect.map(Effect.service(CurrentTransaction), (tx) => tx !== undefined && tx.store === identity ? tx : undefined)

    const run = <A>(f: (tables: MemoryTables) => A): Effect.Effect<A> =>
      Effect.flatMap(current, (tx) => Effect.sync(() => f(accessFor(tx))))

    const withTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.flatMap(current, (outer) => {
        if (outer !== undefined) {
          // Nested: a savepoint inside the outer transaction.
          const level: Transaction = { store: identity, undo: outer.undo, savepoints: Semaphore.makeUnsafe(1) }
          return outer.savepoints.withPermit(Effect.suspend(() => {
            const mark = outer.undo.length
            return effect.pipe(
              Effect.provideService(CurrentTransaction, level),
              Effect.onExit((exit) => Exit.isSuccess(exit) ? Effect.void : Effect.sync(() => rollbackTo(outer, mark)))
            )
          }))
        }
        return lock.withPermit(Effect.suspend(() => {
          const tx: Transaction = { store: identity, undo: [], savepoints: Semaphore.makeUnsafe(1) }
          return effect.pipe(
            Effect.provideService(CurrentTransaction, tx),
            Effect.onExit((exit) => Effect.sync(() => Exit.isSuccess(exit) ? tx.undo.length = 0 : rollbackTo(tx, 0)))
          )
        }))
      })

    return MemoryStore.of({ run, withTransaction })
  })

  static readonly layer = Layer.effect(MemoryStore, MemoryStore.make)
}

/** `Transactor` over the `MemoryStore`. */
export const layerMemoryTransactor = Layer.effect(
  Transactor,
  MemoryStore.useSync((store) => Transactor.of({ withTransaction: store.withTransaction }))
)
