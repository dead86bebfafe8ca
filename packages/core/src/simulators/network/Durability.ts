/**
 * How the simulator's state goes into a `SimulatorStore` and comes back: one
 * codec per kind of object (what the store keeps of it, and how it is put
 * back into `SimState`), the changes a save carries (the objects `touch`ed
 * since the last one, read as they are now, and the outbox appends), and the
 * state rebuilt from a snapshot at start.
 *
 * Values are read back as written by `encode` in this module: they are the
 * simulator's own, so they are cast rather than decoded.
 */
import type { SimChanges, SimDelivery, SimObject, SimSnapshot } from "../../ports/SimulatorStore.ts"
import {
  type AccountRecord,
  type ContactRef,
  type FlowRecord,
  type InboundRecord,
  type MediaRecord,
  type NumberRecord,
  type OutboundRecord,
  type SimObjectKind,
  type SimState,
  type TemplateRecord
} from "./Model.ts"

interface Codec<V> {
  /** The object as the state holds it now; undefined when it is gone. */
  readonly get: (state: SimState, key: string) => V | undefined
  readonly encode: (value: V) => { readonly value: unknown; readonly bytes?: Uint8Array | undefined }
  readonly restore: (state: SimState, key: string, value: any, bytes: Uint8Array | undefined) => void
}

const plain = <V>(map: (state: SimState) => Map<string, V>): Codec<V> => ({
  get: (state, key) => map(state).get(key),
  encode: (value) => ({ value }),
  restore: (state, key, value) => void map(state).set(key, value as V)
})

const contact = (value: any): ContactRef => ({ waId: value.waId, userId: value.userId })

const codecs: { readonly [K in SimObjectKind]: Codec<any> } = {
  number: {
    get: (state, key) => state.numbers.get(key),
    // The throughput counter (`events`) lasts a second: not kept.
    encode: ({ blocked, events: _events, ...rest }: NumberRecord) => ({ value: { ...rest, blocked: [...blocked.values()] } }),
    restore: (state, key, value) => {
      const number: NumberRecord = {
        ...value,
        username: value.username,
        events: [],
        blocked: new Map((value.blocked as Array<unknown>).map((c) => [contact(c).userId, contact(c)]))
      }
      state.numbers.set(key, number)
      if (number.username !== undefined) state.usernames.set(number.username.username, key)
    }
  },
  account: {
    get: (state, key) => state.accounts.get(key),
    encode: (account: AccountRecord) => ({ value: { subscription: account.subscription ?? null } }),
    restore: (state, key, value) =>
      void state.accounts.set(key, { id: key, subscription: value.subscription === null ? undefined : value.subscription })
  },
  token: plain((state) => state.tokens),
  contact: {
    get: (state, key) => state.contacts.get(key),
    encode: (value: ContactRef) => ({ value }),
    restore: (state, key, value) => void state.contacts.set(key, contact(value))
  },
  phone: plain((state) => state.userIds),
  window: plain((state) => state.windows),
  inbound: {
    get: (state, key) => state.inbound.get(key),
    encode: (value: InboundRecord) => ({ value }),
    restore: (state, key, value) => state.keepInbound({ ...value, contact: contact(value.contact) })
  },
  media: {
    get: (state, key) => state.media.get(key),
    encode: ({ bytes, ...rest }: MediaRecord) => ({ value: rest, bytes }),
    restore: (state, key, value, bytes) =>
      void state.media.set(key, { ...value, filename: value.filename, bytes: bytes ?? new Uint8Array() })
  },
  template: {
    get: (state, key) => state.templates.get(key),
    encode: (value: TemplateRecord) => ({ value }),
    restore: (state, key, value) =>
      void state.templates.set(key, { ...value, subCategory: value.subCategory, review: value.review } as TemplateRecord)
  },
  deletedName: plain((state) => state.deletedNames),
  flow: {
    get: (state, key) => state.flows.get(key),
    encode: (value: FlowRecord) => ({ value }),
    restore: (state, key, value) =>
      void state.flows.set(key, { ...value, endpointUri: value.endpointUri, applicationId: value.applicationId })
  },
  unreachable: {
    get: (state, key) => (state.unreachable.has(key) ? true : undefined),
    encode: () => ({ value: true }),
    restore: (state, key) => void state.unreachable.add(key)
  }
}

const encodeDelivery = ({ raw, ...rest }: OutboundRecord): SimDelivery => ({
  id: rest.id,
  phoneNumberId: rest.phoneNumberId,
  record: rest,
  raw
})

const decodeDelivery = (delivery: SimDelivery): OutboundRecord => {
  const record = delivery.record as any
  return {
    ...record,
    recipient: contact(record.recipient),
    bizOpaqueCallbackData: record.bizOpaqueCallbackData,
    failure: record.failure,
    raw: delivery.raw
  }
}

/**
 * Takes what changed since the last save as the store's changes (the state
 * then has none), or undefined when nothing did. `putBack` hands them back to
 * the state, for the next save, when this one fails.
 */
export const takeChanges = (
  state: SimState
): { readonly changes: SimChanges; readonly putBack: () => void } | undefined => {
  if (!state.hasChanges) return undefined
  const changed = [...state.changed].map(([kind, keys]) => [kind, [...keys]] as const)
  const delivered = state.delivered
  const forgotten = state.forgotten
  state.changed.clear()
  state.delivered = []
  state.forgotten = []
  const put: Array<SimObject> = []
  const remove: Array<{ readonly kind: string; readonly key: string }> = []
  for (const [kind, keys] of changed) {
    const codec = codecs[kind]
    for (const key of keys) {
      const current = codec.get(state, key)
      if (current === undefined) remove.push({ kind, key })
      else put.push({ kind, key, ...codec.encode(current) })
    }
  }
  return {
    changes: { put, remove, delivered: delivered.map(encodeDelivery), forgotten },
    putBack: () => {
      for (const [kind, keys] of changed) for (const key of keys) state.touch(kind, key)
      state.delivered = [...delivered, ...state.delivered]
      state.forgotten = [...forgotten, ...state.forgotten]
    }
  }
}

/**
 * Rebuilds the state from what the store holds. Outboxes over `outboxLimit`
 * forget their oldest, which the next save removes from the store too.
 */
export const restore = (state: SimState, snapshot: SimSnapshot, outboxLimit: number): void => {
  for (const object of snapshot.objects) {
    const codec = codecs[object.kind as SimObjectKind] as Codec<unknown> | undefined
    // A kind this version does not know (written by a later one) is left alone.
    codec?.restore(state, object.key, object.value, object.bytes)
  }
  const durable = state.durable
  state.durable = false
  for (const delivery of snapshot.deliveries) state.deliver(decodeDelivery(delivery), outboxLimit)
  state.durable = durable
  // What the outboxes forgot while being rebuilt: their oldest, beyond the limit.
  const kept = new Set(state.outbound.keys())
  for (const delivery of snapshot.deliveries) if (!kept.has(delivery.id)) state.forgotten.push(delivery.id)
}
