/**
 * The network links a list's next and previous pages at its own address, with
 * the caller's access token in their query. A list the proxy forwards links
 * them at the proxy's address instead (decisions 4.10): the stored token never
 * reaches the caller, and a client that follows `next` stays behind the proxy.
 */
import { Option, Schema } from "effect"
import { json, parseJson, type ProxyAnswer } from "./ProxyAnswers.ts"

const decodeObject = Schema.decodeUnknownOption(Schema.Record(Schema.String, Schema.Unknown))
const decodeLinks = Schema.decodeUnknownOption(Schema.Struct({
  next: Schema.optionalKey(Schema.String),
  previous: Schema.optionalKey(Schema.String)
}))

/** `location` with the query of the network's `address` (its cursors, limit, fields), less any access token. */
export const proxyAddress = (location: URL, address: string): string | undefined => {
  if (!URL.canParse(address)) return undefined
  const url = new URL(location)
  url.search = new URL(address).search
  url.searchParams.delete("access_token")
  return url.toString()
}

/**
 * A forwarded answer whose `paging.next`/`previous` point at `location`, the list's own proxy address; an answer
 * without them (an error, a single object, a list on its last page) goes back byte for byte.
 */
export const pagedAt = (location: URL) => (answer: ProxyAnswer): ProxyAnswer => {
  if (answer.status < 200 || answer.status >= 300) return answer
  const list = decodeObject(parseJson(answer.body))
  if (Option.isNone(list)) return answer
  const paging = decodeObject(list.value["paging"])
  const links = decodeLinks(list.value["paging"])
  if (Option.isNone(paging) || Option.isNone(links)) return answer
  const { next, previous } = links.value
  if (next === undefined && previous === undefined) return answer
  const { next: _next, previous: _previous, ...rest } = paging.value
  const relinked: Record<string, unknown> = { ...rest }
  const nextAddress = next === undefined ? undefined : proxyAddress(location, next)
  const previousAddress = previous === undefined ? undefined : proxyAddress(location, previous)
  if (nextAddress !== undefined) relinked["next"] = nextAddress
  if (previousAddress !== undefined) relinked["previous"] = previousAddress
  return json(answer.status, { ...list.value, paging: relinked })
}
