/**
 * A number's block list (`POST`/`DELETE /<pnid>/block_users`): only contacts who wrote in the last 24 hours can be
 * blocked, at most 64,000 of them; a request that fails for some users answers 139100 with what was done.
 */
import { Option, Predicate, Schema } from "effect"
import { MessagingProduct } from "../../network/NetworkObjects.ts"
import {
  contactByPhone,
  contactByUserId,
  fail,
  isUserId,
  normalizePhone,
  type NumberRecord,
  ok,
  type Outcome,
  type RequestContext,
  type SimState,
  windowOpen
} from "./Model.ts"
import { simError } from "../../network/ErrorCodes.ts"

/** One entry of `block_users`: the user, as a phone number or a business-scoped id. */
const BlockedUser = Schema.decodeUnknownOption(Schema.Struct({ user: Schema.String }))

const BLOCK_LIST_LIMIT = 64_000

export const blockUsers = (
  state: SimState,
  ctx: RequestContext,
  number: NumberRecord,
  body: unknown,
  block: boolean
): Outcome => {
  if (!Predicate.isObject(body)) return fail(simError(100, "The request body must be a JSON object"))
  if (body["messaging_product"] !== MessagingProduct) {
    return fail(simError(100, `Param messaging_product must be ${MessagingProduct}`))
  }
  const users = body["block_users"]
  if (!Array.isArray(users) || users.length === 0) return fail(simError(131008, "The parameter block_users is required."))
  const done: Array<Record<string, string>> = []
  const failed: Array<Record<string, unknown>> = []
  for (const entry of users) {
    const given = BlockedUser(entry)
    if (Option.isNone(given)) return fail(simError(131008, "The parameter block_users[].user is required."))
    const input = given.value.user
    const waId = normalizePhone(input)
    const contact = waId !== undefined
      ? contactByPhone(state, number.businessAccountId, waId)
      : isUserId(input)
      ? contactByUserId(state, number.businessAccountId, input)
      : undefined
    const failure = (code: number, details: string) =>
      failed.push({ input, errors: [{ message: details, code, error_data: { details } }] })
    if (contact === undefined) {
      failure(131009, "Not a phone number or business-scoped user id")
      continue
    }
    const identity = contact.waId !== undefined && waId !== undefined ? { wa_id: contact.waId } : { user_id: contact.userId }
    if (!block) {
      number.blocked.delete(contact.userId)
      done.push({ input, ...identity })
      continue
    }
    if (!windowOpen(state, number.phoneNumberId, contact, ctx.now)) {
      failure(139102, "Only users who messaged the business in the last 24 hours can be blocked")
    } else if (!number.blocked.has(contact.userId) && number.blocked.size >= BLOCK_LIST_LIMIT) {
      failure(139101, `The block list holds at most ${BLOCK_LIST_LIMIT} users`)
    } else {
      number.blocked.set(contact.userId, contact)
      done.push({ input, ...identity })
    }
  }
  const key = block ? "added_users" : "removed_users"
  const result = { [key]: done, ...(failed.length > 0 ? { failed_users: failed } : {}) }
  if (failed.length > 0) {
    return fail(simError(139100, `Failed to ${block ? "block" : "unblock"} ${failed.length} of ${users.length} users`, {
      extra: { block_users: result }
    }))
  }
  return ok({ messaging_product: MessagingProduct, block_users: result })
}
