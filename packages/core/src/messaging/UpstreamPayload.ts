/**
 * An upstream POST as ingestion reads it, decoded once where it arrives and
 * passed on typed (decisions "One hop from the network to the run"): its
 * changes with their business account and field, and for `messages` changes
 * the number, the senders' contact objects and each message with what
 * recording reads of it. The network's objects are free-form beyond those
 * fields: a malformed member is counted and dropped, never the whole POST.
 */
import { Option, Predicate, Schema } from "effect"
import { OptionalText, parseJson } from "../shared/Json.ts"
import { WebhookContact } from "../network/Webhook.ts"
import { windowKey } from "./Message.ts"
import { type InboundMessageTexts, inboundMessageTexts, type Json } from "./Recording.ts"

const EntryTexts = Schema.Struct({ id: OptionalText })
const ChangeTexts = Schema.Struct({ field: OptionalText })
const MetadataTexts = Schema.Struct({ phone_number_id: OptionalText })
const entryTexts = Schema.decodeUnknownSync(EntryTexts)
const changeTexts = Schema.decodeUnknownSync(ChangeTexts)
const metadataTexts = Schema.decodeUnknownSync(MetadataTexts)
const decodeContact = Schema.decodeUnknownOption(WebhookContact)
const array = (value: unknown): ReadonlyArray<unknown> => (Array.isArray(value) ? value : [])

/** One message of a `messages` change: the object as the network sent it and what recording reads of it. */
export interface UpstreamMessage {
  readonly raw: Json
  readonly texts: typeof InboundMessageTexts.Type
  /** The `contacts[]` member that names its sender, if any. */
  readonly contact: WebhookContact | undefined
}

/** A `messages` change's value. */
export interface MessagesValue {
  readonly phoneNumberId: string | undefined
  readonly messages: ReadonlyArray<UpstreamMessage>
  /** Members of `messages` that are not objects or carry no id. */
  readonly malformed: number
  readonly statuses: ReadonlyArray<unknown>
  readonly errors: ReadonlyArray<unknown>
}

export interface UpstreamChange {
  readonly accountId: string
  readonly field: string
  /** As the network sent it (log search, template and quality changes read it). */
  readonly value: unknown
  /** Present for a `messages` change whose value is an object. */
  readonly messages: MessagesValue | undefined
}

const messagesValue = (value: Json): MessagesValue => {
  const contacts = array(value["contacts"]).flatMap((c) => Option.toArray(decodeContact(c)))
  const messages: Array<UpstreamMessage> = []
  let malformed = 0
  for (const raw of array(value["messages"])) {
    if (!Predicate.isObject(raw)) {
      malformed++
      continue
    }
    const texts = inboundMessageTexts(raw)
    if (texts.id === undefined) {
      malformed++
      continue
    }
    const contact = contacts.find((c) =>
      (c.wa_id !== undefined && c.wa_id === texts.from) || (c.user_id !== undefined && c.user_id === texts.from_user_id)
    ) ?? (contacts.length === 1 ? contacts[0] : undefined)
    messages.push({ raw, texts, contact })
  }
  const metadata = value["metadata"]
  return {
    phoneNumberId: Predicate.isObject(metadata) ? metadataTexts(metadata).phone_number_id : undefined,
    messages,
    malformed,
    statuses: array(value["statuses"]),
    errors: array(value["errors"])
  }
}

/** The changes of a POST's body; empty when it is not JSON or carries no entries. */
export const decodeUpstream = (body: Uint8Array): ReadonlyArray<UpstreamChange> => {
  const parsed = parseJson(new TextDecoder().decode(body))
  if (Option.isNone(parsed) || !Predicate.isObject(parsed.value)) return []
  const changes: Array<UpstreamChange> = []
  for (const entry of array(parsed.value["entry"])) {
    if (!Predicate.isObject(entry)) continue
    const accountId = entryTexts(entry).id ?? ""
    for (const change of array(entry["changes"])) {
      if (!Predicate.isObject(change)) continue
      const field = changeTexts(change).field ?? ""
      const value = change["value"]
      changes.push({
        accountId,
        field,
        value,
        messages: field === "messages" && Predicate.isObject(value) ? messagesValue(value) : undefined
      })
    }
  }
  return changes
}

/** The sender a message names: its phone number, else its business-scoped id. */
export const senderOf = (m: UpstreamMessage) => m.texts.from ?? m.texts.from_user_id ?? ""

/** Who wrote the messages of a POST, per number (`windowKey`): its phone number and its business-scoped id. */
export const sendersOf = (changes: ReadonlyArray<UpstreamChange>): ReadonlyArray<string> => {
  const keys = new Set<string>()
  for (const change of changes) {
    const value = change.messages
    if (value?.phoneNumberId === undefined) continue
    for (const m of value.messages) {
      for (const sender of [m.texts.from, m.texts.from_user_id]) if (sender !== undefined) keys.add(windowKey(value.phoneNumberId, sender))
    }
  }
  return [...keys]
}
