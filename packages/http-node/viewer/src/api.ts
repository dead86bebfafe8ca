/** The viewer API the page calls, with the embed token (from the page's own address) in `X-Viewer-Token`. */
import { ApiError, pageApi } from "../../embed-ui/api.ts"
import type { Definition, ExecutionSummary, Problem, Run, Session, Workflow, WorkflowItem } from "./types.ts"

const { call } = pageApi({ marker: "/viewer/", root: "/viewer/v1", header: "x-viewer-token" })

export { ApiError }

const wf = (id: string, rest = "") => `/workflows/${encodeURIComponent(id)}${rest}`
const ex = (id: string, rest = "") => `/executions/${encodeURIComponent(id)}${rest}`

export const session = () => call<{ data: Session }>("GET", "/session").then((r) => r.data)
export const workflows = () => call<{ data: Array<WorkflowItem> }>("GET", "/workflows").then((r) => r.data)
export const workflow = (id: string) => call<{ data: Workflow }>("GET", wf(id)).then((r) => r.data)
export const validate = (id: string, definition: Definition) =>
  call<{ data: { valid: boolean; problems: Array<Problem> } }>("POST", wf(id, "/validate"), { definition }).then((r) => r.data)
export const save = (id: string, definition: Definition, lock_version: number) =>
  call<{ data: Workflow }>("PATCH", wf(id), { definition, lock_version }).then((r) => r.data)

export interface RunFilters {
  readonly status: string
  readonly trigger_type: string
}

export const executions = (id: string, filters: RunFilters) => {
  const query = new URLSearchParams()
  if (filters.status !== "") query.set("status", filters.status)
  if (filters.trigger_type !== "") query.set("trigger_type", filters.trigger_type)
  const text = query.toString()
  return call<{ data: Array<ExecutionSummary>; has_more: boolean }>("GET", wf(id, `/executions${text === "" ? "" : `?${text}`}`))
}
export const run = (id: string) => call<{ data: Run }>("GET", ex(id)).then((r) => r.data)
export const resume = (id: string) => call<{ data: ExecutionSummary }>("POST", ex(id, "/resume")).then((r) => r.data)
export const end = (id: string) => call<{ data: ExecutionSummary }>("POST", ex(id, "/end")).then((r) => r.data)
export const testRun = (id: string, phone_number: string) =>
  call<{ data: { id: string } }>("POST", wf(id, "/test_runs"), { phone_number }).then((r) => r.data)
