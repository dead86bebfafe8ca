/**
 * A workflow's executions: the list with its filters and a test run on the sandbox number; one run drawn over its
 * revision's graph with its timeline of step events, polled while it moves; resume and end with `access: edit`.
 */
import { useMemo, useState } from "preact/hooks"
import { usePolling } from "../../embed-ui/chrome.tsx"
import * as api from "./api.ts"
import { Graph, type RunOverlay } from "./Graph.tsx"
import type { Language, Translate } from "./i18n.ts"
import { layout } from "./layout.ts"
import type { ExecutionStatus, ExecutionSummary, Run, Session, StepEvent } from "./types.ts"

const LIST_POLL_MS = 3000
const RUN_POLL_MS = 1500

const live = (status: ExecutionStatus) => status === "running" || status === "waiting" || status === "handoff"

const timeOf = (iso: string, language: Language) =>
  new Date(iso).toLocaleString(language === "es" ? "es-ES" : "en-US", { dateStyle: "short", timeStyle: "medium" })

const statusWord = (status: ExecutionStatus, t: Translate) =>
  ({ running: t("statusRunning"), waiting: t("statusWaiting"), ended: t("statusEnded"), failed: t("statusFailed"), handoff: t("statusHandoff") })[status]

export function Runs(props: {
  workflowId: string
  session: Session
  runId: string | undefined
  onRun: (id: string | undefined) => void
  t: Translate
  language: Language
}) {
  const { t } = props
  if (props.runId !== undefined) {
    return <RunView key={props.runId} id={props.runId} session={props.session} onBack={() => props.onRun(undefined)} t={t} language={props.language} />
  }
  return <RunList {...props} />
}

function RunList(props: { workflowId: string; session: Session; onRun: (id: string) => void; t: Translate; language: Language }) {
  const { t, session } = props
  const [filters, setFilters] = useState<api.RunFilters>({ status: "", trigger_type: "" })
  const [list, setList] = useState<{ items: ReadonlyArray<ExecutionSummary>; more: boolean } | undefined>()
  const [notice, setNotice] = useState<string | undefined>()
  const [phone, setPhone] = useState("")

  usePolling(async (current) => {
    const answer = await api.executions(props.workflowId, filters)
    if (current()) setList({ items: answer.data, more: answer.has_more })
  }, LIST_POLL_MS, [props.workflowId, filters])

  return (
    <div class="runs">
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <label>
          <span>{t("status")}</span>
          <select value={filters.status} onChange={(e) => setFilters({ ...filters, status: e.currentTarget.value })}>
            <option value="">{t("all")}</option>
            {(["running", "waiting", "handoff", "ended", "failed"] as const).map((s) => <option key={s} value={s}>{statusWord(s, t)}</option>)}
          </select>
        </label>
        <label>
          <span>{t("trigger")}</span>
          <select value={filters.trigger_type} onChange={(e) => setFilters({ ...filters, trigger_type: e.currentTarget.value })}>
            <option value="">{t("all")}</option>
            {["inbound_message", "api_call", "msg_event", "project_event"].map((x) => <option key={x} value={x}>{x}</option>)}
          </select>
        </label>
      </form>
      {session.access === "edit"
        ? session.sandbox === null
          ? <p class="hint">{t("noSandbox")}</p>
          : (
            <form
              class="test-run"
              aria-label={t("testRun")}
              onSubmit={(e) => {
                e.preventDefault()
                api.testRun(props.workflowId, phone).then((started) => props.onRun(started.id), (error: unknown) => setNotice(error instanceof Error ? error.message : String(error)))
              }}
            >
              <strong>{t("testRun")}</strong>
              <label class="field inline">
                <span>{t("testPhone")}</span>
                <input type="tel" value={phone} onInput={(e) => setPhone(e.currentTarget.value)} required />
              </label>
              <button type="submit">{t("testStart", { number: session.sandbox.display_phone_number })}</button>
            </form>
          )
        : null}
      {notice !== undefined
        ? <div class="notice" role="alert"><span>{notice}</span><button type="button" class="secondary" onClick={() => setNotice(undefined)}>{t("dismiss")}</button></div>
        : null}
      {list === undefined
        ? <p class="empty">{t("loading")}</p>
        : list.items.length === 0
        ? <p class="empty">{t("noExecutions")}</p>
        : (
          <ul class="run-list" aria-label={t("executions")}>
            {list.items.map((e) => (
              <li key={e.id}>
                <button type="button" class="run-item" data-status={e.status} onClick={() => props.onRun(e.id)}>
                  <span class={`status ${e.status}`}>{statusWord(e.status, t)}{e.waiting_reason !== null ? ` · ${e.waiting_reason}` : ""}</span>
                  <span class="when">{t("started", { when: timeOf(e.started_at, props.language) })}</span>
                  <span class="what">{e.trigger_type}{e.current_step !== null ? ` · ${e.current_step.display_name}` : ""}</span>
                  <code class="rid">{e.id.slice(0, 8)}</code>
                </button>
              </li>
            ))}
          </ul>
        )}
    </div>
  )
}

function RunView(props: { id: string; session: Session; onBack: () => void; t: Translate; language: Language }) {
  const { t } = props
  const [run, setRun] = useState<Run | undefined>()
  const [notice, setNotice] = useState<string | undefined>()
  const [selected, setSelected] = useState<string | undefined>()
  const [version, setVersion] = useState(0)

  usePolling(async (current) => {
    if (run !== undefined && !live(run.execution.status)) return
    const answer = await api.run(props.id)
    if (current()) setRun(answer)
  }, RUN_POLL_MS, [props.id, version, run === undefined || live(run.execution.status)])

  const placed = useMemo(() => (run === undefined ? undefined : layout(run.definition)), [run?.definition])
  const overlay = useMemo((): RunOverlay | undefined => {
    if (run === undefined) return undefined
    const taken = new Map<string, number>()
    for (const id of run.path.edges) taken.set(id, (taken.get(id) ?? 0) + 1)
    const e = run.execution
    return {
      visits: new Map(run.path.nodes.map((n) => [n.id, n.visits])),
      taken,
      current: (e.status === "waiting" || e.status === "handoff") && e.current_step !== null
        ? { id: e.current_step.identifier, reason: e.waiting_reason ?? e.status }
        : undefined,
      failed: run.path.failed_node ?? e.error_details?.step_identifier ?? undefined
    }
  }, [run])

  if (run === undefined || placed === undefined || overlay === undefined) return <p class="empty">{notice ?? t("loading")}</p>
  const e = run.execution
  const act = (action: (id: string) => Promise<unknown>) => () =>
    action(e.id).then(() => setVersion((v) => v + 1), (error: unknown) => setNotice(error instanceof Error ? error.message : String(error)))
  const events = selected === undefined ? run.events : run.events.filter((x) => x.step?.identifier === selected)

  return (
    <div class="workspace">
      <section class="canvas" aria-label={t("run", { id: e.id })}>
        <div class="run-head">
          <button type="button" class="secondary" onClick={props.onBack}>← {t("back")}</button>
          <h2>{t("run", { id: e.id.slice(0, 8) })}</h2>
          <span class={`status ${e.status}`} role="status">{statusWord(e.status, t)}{live(e.status) ? <span class="live"> · {t("live")}</span> : null}</span>
          {props.session.access === "edit" && (e.status === "waiting" || e.status === "handoff")
            ? <button type="button" onClick={act(api.resume)}>{t("resume")}</button>
            : null}
          {props.session.access === "edit" && live(e.status)
            ? <button type="button" class="secondary danger" onClick={act(api.end)}>{t("end")}</button>
            : null}
        </div>
        {e.waiting_reason !== null && live(e.status) ? <p class="hint">{t("waitingFor", { reason: e.waiting_reason })}{e.current_step !== null ? ` (${e.current_step.display_name})` : ""}</p> : null}
        {e.error_details !== null ? <p class="field-error" role="alert">{t("error", { message: e.error_details.message })}{e.error_details.code !== undefined ? ` (${e.error_details.code})` : ""}</p> : null}
        {notice !== undefined ? <div class="notice" role="alert"><span>{notice}</span><button type="button" class="secondary" onClick={() => setNotice(undefined)}>{t("dismiss")}</button></div> : null}
        <Graph
          definition={run.definition}
          layout={placed}
          title={t("run", { id: e.id })}
          selected={selected}
          onSelect={(id) => setSelected((current) => (current === id ? undefined : id))}
          overlay={overlay}
          t={t}
        />
        <details class="vars">
          <summary>{t("variables")}</summary>
          <pre>{JSON.stringify(e.execution_context.vars, null, 2)}</pre>
        </details>
      </section>
      <aside class="side timeline-side">
        <h2>{t("timeline")} <span class="hint-inline">{t("events", { n: events.length })}</span></h2>
        {run.events_truncated ? <p class="hint">{t("eventsTruncated")}</p> : null}
        <ol class="timeline" aria-label={t("timeline")}>
          {events.map((event) => <EventRow key={event.id} event={event} t={t} language={props.language} />)}
        </ol>
      </aside>
    </div>
  )
}

/** The facts of an event worth a line: a message's text, a variable, an action, an error, a duration. */
const summaryOf = (event: StepEvent, t: Translate): string | undefined => {
  const p = event.payload
  const parts: Array<string> = []
  const request = typeof p["request"] === "object" && p["request"] !== null ? p["request"] as Record<string, any> : {}
  // A message in (its value) or out (the text or template it sends).
  const text = p["text"] ?? p["message"] ?? p["content"] ?? (typeof p["name"] !== "string" ? p["value"] : undefined) ??
    request["text"]?.body ?? request["template"]?.name
  if (typeof text === "string") parts.push(`“${text}”`)
  if (typeof p["name"] === "string" && "value" in p) parts.push(`${p["name"]} = ${JSON.stringify(p["value"])}`)
  if (typeof p["action"] === "string") parts.push(p["action"])
  const error = p["error"]
  if (typeof error === "object" && error !== null && "message" in error) parts.push(`⚠ ${String(error.message)}`)
  if (typeof p["duration_ms"] === "number") parts.push(t("duration", { ms: p["duration_ms"] }))
  if (event.edge_label !== null) parts.push(`→ ${event.edge_label}`)
  return parts.length === 0 ? undefined : parts.join(" · ")
}

function EventRow(props: { event: StepEvent; t: Translate; language: Language }) {
  const { event, t } = props
  const summary = summaryOf(event, t)
  const failed = event.event_type.endsWith("_failed")
  return (
    <li class={`event${failed ? " failed" : ""}${event.direction !== null ? ` ${event.direction}` : ""}`} data-type={event.event_type}>
      <div class="event-head">
        <span class="event-type">{event.direction === "inbound" ? "⇠ " : event.direction === "outbound" ? "⇢ " : ""}{event.event_type}</span>
        <time dateTime={event.created_at}>{new Date(event.created_at).toLocaleTimeString(props.language === "es" ? "es-ES" : "en-US")}</time>
      </div>
      {event.step !== null ? <div class="event-step">{event.step.display_name}</div> : null}
      {summary !== undefined ? <div class="event-summary">{summary}</div> : null}
      {Object.keys(event.payload).length > 0
        ? (
          <details>
            <summary>{t("details")}</summary>
            <pre>{JSON.stringify(event.payload, null, 2)}</pre>
          </details>
        )
        : null}
    </li>
  )
}
