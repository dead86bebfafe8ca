/**
 * A number's username (`/<pnid>/username`, `/<pnid>/username_suggestions`): the network's naming rules, one holder
 * a name (a number of the same business takes it over with `force_transfer`), `approved` once the display name is.
 */
import { Predicate } from "effect"
import { fail, type NumberRecord, ok, type Outcome, type SimState } from "./Model.ts"
import { simError } from "../../network/ErrorCodes.ts"

const usernamePattern = /^[a-z0-9._]{3,35}$/

const usernameProblem = (username: string): string | undefined => {
  if (!usernamePattern.test(username)) return "must be 3 to 35 characters of lowercase letters, digits, periods and underscores"
  if (!/[a-z]/.test(username)) return "must contain at least one letter"
  if (username.startsWith(".") || username.endsWith(".") || username.includes("..")) {
    return "cannot start or end with a period or contain two periods in a row"
  }
  if (username.startsWith("www")) return "cannot start with www"
  return undefined
}

export const setUsername = (state: SimState, number: NumberRecord, body: unknown): Outcome => {
  if (!Predicate.isObject(body)) return fail(simError(100, "The request body must be a JSON object"))
  const username = body["username"]
  if (username === undefined) return fail(simError(131008, "The parameter username is required."))
  if (typeof username !== "string") return fail(simError(131009, "Param username must be a string"))
  const problem = usernameProblem(username)
  if (problem !== undefined) return fail(simError(131009, `Param username ${problem}`))
  const transfer = body["transfer_action"] ?? "none"
  if (transfer !== "none" && transfer !== "force_transfer") {
    return fail(simError(131009, "Param transfer_action must be one of {none, force_transfer}"))
  }
  const holder = state.usernames.get(username)
  if (holder !== undefined && holder !== number.phoneNumberId) {
    const other = state.numbers.get(holder)
    const sameBusiness = other !== undefined && other.businessAccountId === number.businessAccountId
    if (!(sameBusiness && transfer === "force_transfer")) {
      return fail(simError(131009, `The username ${username} is not available`))
    }
    if (other !== undefined) {
      other.username = undefined
      state.touch("number", other.phoneNumberId)
    }
  }
  if (number.username !== undefined) state.usernames.delete(number.username.username)
  const status = number.nameStatus === "APPROVED" || number.nameStatus === "AVAILABLE_WITHOUT_REVIEW" ? "approved" : "reserved"
  number.username = { username, status }
  state.usernames.set(username, number.phoneNumberId)
  return ok({ status })
}

export const usernameSuggestions = (state: SimState, number: NumberRecord) => {
  const stem = number.verifiedName.toLowerCase().replace(/[^a-z0-9]+/g, "").slice(0, 28) || "business"
  const suffix = number.phoneNumberId.slice(-3)
  const candidates = [stem, `${stem}.official`, `${stem}_hq`, `get${stem}`, `${stem}.support`, `${stem}${suffix}`]
  const free = candidates.filter((c) => usernameProblem(c) === undefined && !state.usernames.has(c)).slice(0, 5)
  return ok({ data: [{ username_suggestions: free }] })
}
