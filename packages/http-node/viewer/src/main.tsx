/**
 * The embedded workflow and execution viewer (issue 31 §3): a workflow's graph drawn from its definition, edited
 * and checked as it changes (problems on the node or edge they name), saved with its `lock_version`; its
 * executions with filters; one run over its revision's graph with its timeline, live while it moves (polled:
 * robust across hosts sharing a database); resume, end and a test run on the sandbox number. English and Spanish;
 * system, light and dark; every control reachable from the keyboard.
 */
import { render } from "preact"
import { useEffect, useMemo, useState } from "preact/hooks"
import { ModePicker, usePageLook } from "../../embed-ui/chrome.tsx"
import { languageFromAddress, type Mode } from "../../embed-ui/i18n.ts"
import * as api from "./api.ts"
import { Editor } from "./Editor.tsx"
import { type Language, translate } from "./i18n.ts"
import { Runs } from "./Runs.tsx"
import type { Session, WorkflowItem } from "./types.ts"
import "./viewer.css"

type View = "graph" | "executions"

const readAddress = () => {
  const query = new URLSearchParams(location.search)
  return {
    workflow: query.get("workflow") ?? undefined,
    view: (query.get("view") === "executions" || query.get("run") !== null ? "executions" : "graph") as View,
    run: query.get("run") ?? undefined
  }
}

/** Keeps the workflow, view and open run in the address, so a reload shows the same thing. */
const writeAddress = (state: { workflow: string | undefined; view: View; run: string | undefined }) => {
  const next = new URLSearchParams(location.search)
  const set = (key: string, value: string | undefined) => (value === undefined ? next.delete(key) : next.set(key, value))
  set("workflow", state.workflow)
  set("view", state.view === "graph" ? undefined : state.view)
  set("run", state.run)
  const text = next.toString()
  history.replaceState(null, "", `${location.pathname}${text === "" ? "" : `?${text}`}`)
}

function App() {
  const initial = useMemo(readAddress, [])
  const [session, setSession] = useState<Session | undefined>()
  const [fatal, setFatal] = useState<string | undefined>()
  const [workflows, setWorkflows] = useState<ReadonlyArray<WorkflowItem> | undefined>()
  const [workflowId, setWorkflowId] = useState<string | undefined>(initial.workflow)
  const [view, setView] = useState<View>(initial.view)
  const [runId, setRunId] = useState<string | undefined>(initial.run)
  const [mode, setMode] = useState<Mode | undefined>()

  const language: Language = languageFromAddress() ?? session?.language ?? "en"
  const t = useMemo(() => translate(language), [language])
  const effectiveMode = mode ?? session?.default_mode ?? "system"
  usePageLook(language, effectiveMode)

  useEffect(() => {
    api.session().then(setSession, (e: unknown) => setFatal(e instanceof api.ApiError && e.status === 401 ? "invalid" : String(e)))
  }, [])
  useEffect(() => {
    if (session === undefined) return
    api.workflows().then((items) => {
      setWorkflows(items)
      setWorkflowId((current) => (current !== undefined && items.some((w) => w.id === current) ? current : items[0]?.id))
    }, (e: unknown) => setFatal(String(e)))
  }, [session])
  useEffect(() => writeAddress({ workflow: workflowId, view, run: view === "executions" ? runId : undefined }), [workflowId, view, runId])

  if (fatal !== undefined) return <main class="fatal"><p role="alert">{fatal === "invalid" ? t("invalid") : fatal}</p></main>
  if (session === undefined || workflows === undefined) return <main class="fatal"><p>{t("loading")}</p></main>

  const current = workflows.find((w) => w.id === workflowId)
  return (
    <div class="app">
      <header class="top">
        <h1>{session.name}{session.scope_name !== null && session.scope_name !== session.name ? <span class="scope"> · {session.scope_name}</span> : null}</h1>
        <div class="top-controls">
          {workflows.length > 1
            ? (
              <label class="mode">
                <span>{t("workflow")}</span>
                <select value={workflowId} onChange={(e) => {
                  setWorkflowId(e.currentTarget.value)
                  setRunId(undefined)
                }}>
                  {workflows.map((w) => <option key={w.id} value={w.id}>{w.name} ({w.status})</option>)}
                </select>
              </label>
            )
            : null}
          <nav class="tabs" aria-label={t("views")}>
            {(["graph", "executions"] as const).map((v) => (
              <button
                key={v}
                type="button"
                class={view === v ? "tab current" : "tab"}
                aria-current={view === v ? "page" : undefined}
                onClick={() => {
                  setView(v)
                  if (v === "executions") setRunId(undefined)
                }}
              >
                {v === "graph" ? t("graph") : t("executions")}
              </button>
            ))}
          </nav>
          <ModePicker mode={effectiveMode} onChange={setMode} words={{ mode: t("mode"), modeSystem: t("modeSystem"), modeLight: t("modeLight"), modeDark: t("modeDark") }} />
        </div>
      </header>
      {current === undefined
        ? <p class="empty">{t("noWorkflows")}</p>
        : view === "graph"
        ? <Editor key={current.id} workflowId={current.id} session={session} t={t} />
        : <Runs key={current.id} workflowId={current.id} session={session} runId={runId} onRun={setRunId} t={t} language={language} />}
    </div>
  )
}

render(<App />, document.getElementById("app")!)
