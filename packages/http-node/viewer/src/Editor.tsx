/**
 * A workflow's graph with its editor: choose a node to see its configuration; with `access: edit` change its
 * display name and configuration, add nodes, connect and remove them, and save with the `lock_version` the graph
 * was read at. Every change is checked by the host's definition rules as it is made, and each problem is drawn
 * on the node or edge it names.
 */
import { useEffect, useMemo, useState } from "preact/hooks"
import * as api from "./api.ts"
import { Graph } from "./Graph.tsx"
import type { Translate } from "./i18n.ts"
import { layout } from "./layout.ts"
import { placeProblems } from "./problems.ts"
import type { Definition, GraphEdge, GraphNode, Problem, Session, Workflow } from "./types.ts"

const VALIDATE_DELAY_MS = 300

const pretty = (value: unknown) => JSON.stringify(value, null, 2)

export function Editor(props: { workflowId: string; session: Session; t: Translate }) {
  const { t, session } = props
  const editable = session.access === "edit"
  const [workflow, setWorkflow] = useState<Workflow | undefined>()
  const [draft, setDraft] = useState<Definition | undefined>()
  const [selected, setSelected] = useState<string | undefined>()
  const [problems, setProblems] = useState<ReadonlyArray<Problem> | undefined>()
  const [notice, setNotice] = useState<{ text: string; stale?: boolean } | undefined>()
  const [saving, setSaving] = useState(false)

  const load = () =>
    api.workflow(props.workflowId).then((w) => {
      setWorkflow(w)
      setDraft(w.definition)
    }, (e: unknown) => setNotice({ text: String(e instanceof Error ? e.message : e) }))
  useEffect(() => void load(), [props.workflowId])

  // Checked as edited: the host's own rules, a moment after the last change.
  useEffect(() => {
    if (draft === undefined) return
    let stale = false
    setProblems(undefined)
    const timer = setTimeout(() => {
      api.validate(props.workflowId, draft).then((answer) => !stale && setProblems(answer.problems), () => undefined)
    }, VALIDATE_DELAY_MS)
    return () => {
      stale = true
      clearTimeout(timer)
    }
  }, [draft])

  const placed = useMemo(() => (draft === undefined ? undefined : layout(draft)), [draft])
  const located = useMemo(() => (draft === undefined || problems === undefined ? undefined : placeProblems(draft, problems)), [draft, problems])

  if (workflow === undefined || draft === undefined || placed === undefined) {
    return <p class="empty">{notice?.text ?? t("loading")}</p>
  }

  const change = (next: Definition) => {
    setDraft(next)
    setNotice(undefined)
  }
  const changed = JSON.stringify(draft) !== JSON.stringify(workflow.definition)
  const node = draft.nodes.find((n) => n.id === selected)

  const save = async () => {
    setSaving(true)
    try {
      const saved = await api.save(workflow.id, draft, workflow.lock_version)
      setWorkflow(saved)
      setDraft(saved.definition)
      setNotice({ text: t("saved", { n: saved.lock_version }) })
    } catch (e) {
      if (e instanceof api.ApiError && e.status === 409) setNotice({ text: t("stale"), stale: true })
      else setNotice({ text: e instanceof Error ? e.message : String(e) })
    } finally {
      setSaving(false)
    }
  }

  return (
    <div class="workspace">
      <section class="canvas" aria-label={t("graphOf", { name: workflow.name })}>
        <Graph
          definition={draft}
          layout={placed}
          title={t("graphOf", { name: workflow.name })}
          selected={selected}
          onSelect={setSelected}
          problems={located}
          t={t}
        />
      </section>
      <aside class="side">
        {notice !== undefined
          ? (
            <div class="notice" role="alert">
              <span>{notice.text}</span>
              {notice.stale === true
                ? <button type="button" onClick={() => void load()}>{t("reload")}</button>
                : <button type="button" class="secondary" onClick={() => setNotice(undefined)}>{t("dismiss")}</button>}
            </div>
          )
          : null}
        <Validation problems={problems} located={located} onFocus={setSelected} t={t} />
        {editable
          ? (
            <div class="save-bar">
              <button type="button" disabled={!changed || saving || (problems?.length ?? 0) > 0} onClick={() => void save()}>{saving ? t("saving") : t("save")}</button>
              <span class="hint-inline">v{workflow.lock_version}</span>
            </div>
          )
          : <p class="hint">{t("readOnly")}</p>}
        {node === undefined
          ? <p class="hint">{t("chooseNode")}</p>
          : <NodePanel key={node.id} node={node} draft={draft} editable={editable} onChange={change} onRemoved={() => setSelected(undefined)} t={t} />}
        {editable ? <AddNode draft={draft} types={session.node_types} onChange={change} onAdded={setSelected} t={t} /> : null}
        {editable ? <Connect draft={draft} onChange={change} t={t} /> : null}
      </aside>
    </div>
  )
}

function Validation(props: {
  problems: ReadonlyArray<Problem> | undefined
  located: ReturnType<typeof placeProblems> | undefined
  onFocus: (id: string) => void
  t: Translate
}) {
  const { problems, located, t } = props
  if (problems === undefined || located === undefined) return <p class="hint" aria-live="polite">{t("checking")}</p>
  if (problems.length === 0) return <p class="valid" aria-live="polite">✓ {t("valid")}</p>
  return (
    <section class="problems" aria-label={t("problems")} aria-live="polite">
      <h2>{t("problems")} ({problems.length})</h2>
      <ul>
        {[...located.nodes].flatMap(([id, texts]) =>
          texts.map((text, i) => (
            <li key={`${id}${i}`}>
              <button type="button" class="link" onClick={() => props.onFocus(id)}>{t("node")} {id}</button> {text}
            </li>
          ))
        )}
        {[...located.edges].flatMap(([index, texts]) => texts.map((text, i) => <li key={`e${index}-${i}`}>{text}</li>))}
        {located.general.map((text, i) => <li key={`g${i}`}>{t("general")}: {text}</li>)}
      </ul>
    </section>
  )
}

function NodePanel(props: {
  node: GraphNode
  draft: Definition
  editable: boolean
  onChange: (next: Definition) => void
  onRemoved: () => void
  t: Translate
}) {
  const { node, draft, editable, t } = props
  const [configText, setConfigText] = useState(pretty(node.data.config))
  const [configError, setConfigError] = useState<string | undefined>()
  const replace = (next: GraphNode) => props.onChange({ ...draft, nodes: draft.nodes.map((n) => (n.id === node.id ? next : n)) })
  const outgoing = draft.edges.map((edge, index) => ({ edge, index })).filter(({ edge }) => edge.source === node.id)
  return (
    <section class="panel" aria-label={`${t("node")} ${node.id}`}>
      <h2>{node.data.display_name ?? node.id}</h2>
      <dl class="facts">
        <div><dt>{t("id")}</dt><dd>{node.id}</dd></div>
        <div><dt>{t("type")}</dt><dd>{node.data.node_type}</dd></div>
      </dl>
      <label class="field">
        <span>{t("displayName")}</span>
        <input
          value={node.data.display_name ?? ""}
          readOnly={!editable}
          onInput={(e) => replace({ ...node, data: { ...node.data, display_name: e.currentTarget.value } })}
        />
      </label>
      <label class="field">
        <span>{t("config")}</span>
        <textarea
          rows={10}
          spellcheck={false}
          value={configText}
          readOnly={!editable}
          aria-invalid={configError !== undefined}
          onInput={(e) => {
            const text = e.currentTarget.value
            setConfigText(text)
            try {
              const parsed: unknown = JSON.parse(text)
              setConfigError(undefined)
              replace({ ...node, data: { ...node.data, config: parsed as Record<string, unknown> } })
            } catch (error) {
              setConfigError(error instanceof Error ? error.message : String(error))
            }
          }}
        />
      </label>
      {configError !== undefined ? <p class="field-error" role="alert">{t("configInvalid", { error: configError })}</p> : null}
      {outgoing.length > 0
        ? (
          <div>
            <h3>{t("edges")}</h3>
            <ul class="edges">
              {outgoing.map(({ edge, index }) => (
                <li key={edge.id ?? index}>
                  <span>{edge.label ?? "next"} → {edge.target}</span>
                  {editable
                    ? <button type="button" class="secondary" onClick={() => props.onChange({ ...draft, edges: draft.edges.filter((_, i) => i !== index) })}>{t("removeEdge")}</button>
                    : null}
                </li>
              ))}
            </ul>
          </div>
        )
        : null}
      {editable && node.data.node_type !== "start"
        ? (
          <button
            type="button"
            class="secondary danger"
            onClick={() => {
              props.onChange({
                nodes: draft.nodes.filter((n) => n.id !== node.id),
                edges: draft.edges.filter((e) => e.source !== node.id && e.target !== node.id)
              })
              props.onRemoved()
            }}
          >
            {t("removeNode")}
          </button>
        )
        : null}
    </section>
  )
}

/** A new node goes right of the rest when the graph has real positions, else at (0,0) like the others. */
const freePosition = (draft: Definition) => {
  const positioned = new Set(draft.nodes.map((n) => `${n.position.x},${n.position.y}`)).size === draft.nodes.length && draft.nodes.length > 1
  return positioned ? { x: Math.max(...draft.nodes.map((n) => n.position.x)) + 260, y: 0 } : { x: 0, y: 0 }
}

function AddNode(props: { draft: Definition; types: ReadonlyArray<string>; onChange: (next: Definition) => void; onAdded: (id: string) => void; t: Translate }) {
  const { draft, t } = props
  const [type, setType] = useState(props.types.find((x) => x === "send_text") ?? props.types[0] ?? "")
  const [id, setId] = useState("")
  return (
    <form
      class="panel compact"
      aria-label={t("addNode")}
      onSubmit={(e) => {
        e.preventDefault()
        const nodeId = id.trim()
        if (nodeId === "") return
        const node: GraphNode = { id: nodeId, position: freePosition(draft), data: { node_type: type, config: {} } }
        props.onChange({ ...draft, nodes: [...draft.nodes, node] })
        props.onAdded(nodeId)
        setId("")
      }}
    >
      <h3>{t("addNode")}</h3>
      <label class="field">
        <span>{t("type")}</span>
        <select value={type} onChange={(e) => setType(e.currentTarget.value)}>
          {props.types.filter((x) => x !== "start").map((x) => <option key={x} value={x}>{x}</option>)}
        </select>
      </label>
      <label class="field">
        <span>{t("newNodeId")}</span>
        <input value={id} onInput={(e) => setId(e.currentTarget.value)} />
      </label>
      <button type="submit">{t("addNode")}</button>
    </form>
  )
}

function Connect(props: { draft: Definition; onChange: (next: Definition) => void; t: Translate }) {
  const { draft, t } = props
  const [source, setSource] = useState(draft.nodes[0]?.id ?? "")
  const [target, setTarget] = useState(draft.nodes[1]?.id ?? "")
  const [label, setLabel] = useState("")
  const options = draft.nodes.map((n) => <option key={n.id} value={n.id}>{n.data.display_name ?? n.id} ({n.id})</option>)
  return (
    <form
      class="panel compact"
      aria-label={t("addEdge")}
      onSubmit={(e) => {
        e.preventDefault()
        const edge: GraphEdge = { source, target, ...(label.trim() !== "" ? { label: label.trim() } : {}) }
        props.onChange({ ...draft, edges: [...draft.edges, edge] })
        setLabel("")
      }}
    >
      <h3>{t("addEdge")}</h3>
      <label class="field"><span>{t("from")}</span><select value={source} onChange={(e) => setSource(e.currentTarget.value)}>{options}</select></label>
      <label class="field"><span>{t("to")}</span><select value={target} onChange={(e) => setTarget(e.currentTarget.value)}>{options}</select></label>
      <label class="field"><span>{t("label")}</span><input value={label} onInput={(e) => setLabel(e.currentTarget.value)} /></label>
      <button type="submit">{t("addEdge")}</button>
    </form>
  )
}
