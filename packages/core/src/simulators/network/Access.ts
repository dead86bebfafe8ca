/**
 * Who a request to the simulated network acts for: the business account its
 * bearer token names, and the numbers and accounts that account owns (anything
 * else is the network's "does not exist").
 */
import type { AccountRecord, NumberRecord, SimState } from "./Model.ts"
import { type SimError, simError, unknownObject } from "../../network/ErrorCodes.ts"

/**
 * The business account a bearer header acts for: 401 (code 0) without a
 * bearer token, 401 (190) for an unknown or expired one.
 */
export const authenticate = (
  state: SimState,
  authorization: string | undefined
): { readonly businessAccountId: string } | SimError => {
  const presented = bearerToken(authorization)
  if (presented === undefined) return simError(0, "An access token is required to request this resource.")
  const token = state.tokens.get(presented)
  if (token === undefined) return simError(190, "Invalid OAuth access token - Cannot parse access token")
  if (token.expired) return simError(190, "Error validating access token: Session has expired.", { subcode: 463 })
  return { businessAccountId: token.businessAccountId }
}

/** The token of an `Authorization: Bearer <token>` header. */
export const bearerToken = (authorization: string | undefined): string | undefined =>
  authorization === undefined ? undefined : /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1]

export const isSimError = (value: unknown): value is SimError =>
  typeof value === "object" && value !== null && "_tag" in value && value._tag === "SimError"

/** The number a request acts on, if the caller's account owns it; otherwise the network's "does not exist" error. */
export const ownedNumber = (
  state: SimState,
  businessAccountId: string,
  method: string,
  phoneNumberId: string
): NumberRecord | SimError => {
  const number = state.numbers.get(phoneNumberId)
  return number !== undefined && number.businessAccountId === businessAccountId
    ? number
    : unknownObject(method, phoneNumberId)
}

export const ownedAccount = (
  state: SimState,
  businessAccountId: string,
  method: string,
  accountId: string
): AccountRecord | SimError => {
  const account = state.accounts.get(accountId)
  return account !== undefined && account.id === businessAccountId ? account : unknownObject(method, accountId)
}
