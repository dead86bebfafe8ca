/** The inbox API the page calls, with the embed token (from the page's own address) in `X-Inbox-Token`. */
import { ApiError, pageApi } from "../../embed-ui/api.ts"
import type { Conversation, Message, Session, Template, Thread } from "./types.ts"

const { call, fetchRaw } = pageApi({ marker: "/embed/", root: "/inbox/v1", header: "x-inbox-token" })

export { ApiError }

export interface ListFilters {
  readonly status: "active" | "ended" | "all"
  readonly search: string
  readonly msg_config_id: string
  readonly unread: boolean
  readonly handoff: boolean
}

export const session = () => call<{ data: Session }>("GET", "/session").then((r) => r.data)

export const conversations = (filters: ListFilters) => {
  const query = new URLSearchParams({ status: filters.status })
  if (filters.search.trim() !== "") query.set("search", filters.search.trim())
  if (filters.msg_config_id !== "all") query.set("msg_config_id", filters.msg_config_id)
  if (filters.unread) query.set("unread", "1")
  if (filters.handoff) query.set("handoff", "1")
  return call<{ data: Array<Conversation>; has_more: boolean }>("GET", `/conversations?${query}`)
}

const path = (id: string, rest = "") => `/conversations/${encodeURIComponent(id)}${rest}`

export const thread = (id: string) => call<{ data: Thread }>("GET", path(id)).then((r) => r.data)
export const reply = (id: string, body: { text: string } | { template: { name: string; language: string; parameters: Array<string> } }) =>
  call<{ data: Message }>("POST", path(id, "/messages"), body).then((r) => r.data)
export const markRead = (id: string) => call<{ data: { marked: boolean } }>("POST", path(id, "/read"))
export const endConversation = (id: string) => call<{ data: Conversation }>("POST", path(id, "/end")).then((r) => r.data)
export const settleHandoff = (id: string, how: "resume" | "end") =>
  call<{ data: Conversation }>("POST", path(id, `/handoff/${how}`)).then((r) => r.data)
export const templates = (id: string) => call<{ data: Array<Template> }>("GET", path(id, "/templates")).then((r) => r.data)

/** A message's media as a local object URL: the media route wants the token header, which an `<img src>` cannot send. */
export const mediaObjectUrl = async (messageId: string): Promise<string> => {
  const response = await fetchRaw(`/media/${encodeURIComponent(messageId)}`)
  if (!response.ok) throw new ApiError(response.status, response.statusText)
  return URL.createObjectURL(await response.blob())
}
