/**
 * The embedded inbox (issue 20 §1): conversations of the embed's scope with the address's filters, a live thread
 * (polled: robust across hosts sharing a database), replies inside the 24-hour window and templates outside it,
 * media, mark-read, ending a conversation and settling a handoff. English and Spanish; system, light and dark.
 */
import { render } from "preact"
import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks"
import { ModePicker, usePageLook, usePolling } from "../../embed-ui/chrome.tsx"
import { languageFromAddress } from "../../embed-ui/i18n.ts"
import * as api from "./api.ts"
import { type Translate, translate } from "./i18n.ts"
import type { Conversation, Language, Message, Mode, Session, Template, Thread } from "./types.ts"
import "./inbox.css"

const LIST_POLL_MS = 4000
const THREAD_POLL_MS = 1500

const query = new URLSearchParams(location.search)

const initialFilters = (): api.ListFilters => {
  const status = query.get("status")
  return {
    status: status === "ended" || status === "all" ? status : "active",
    search: query.get("search") ?? "",
    msg_config_id: query.get("msg_config_id") ?? "all",
    unread: query.get("unread") === "1",
    handoff: query.get("handoff") === "1"
  }
}

/** Keeps the filters in the address, so a reload (or a shared link inside the host page) shows the same list. */
const writeFilters = (filters: api.ListFilters) => {
  const next = new URLSearchParams(location.search)
  const set = (key: string, value: string | undefined) => (value === undefined ? next.delete(key) : next.set(key, value))
  set("status", filters.status === "active" ? undefined : filters.status)
  set("search", filters.search.trim() === "" ? undefined : filters.search)
  set("msg_config_id", filters.msg_config_id === "all" ? undefined : filters.msg_config_id)
  set("unread", filters.unread ? "1" : undefined)
  set("handoff", filters.handoff ? "1" : undefined)
  const text = next.toString()
  history.replaceState(null, "", `${location.pathname}${text === "" ? "" : `?${text}`}`)
}

const contactLabel = (c: Conversation, t: Translate) => c.contact_name ?? c.username ?? (c.phone_number !== null ? `+${c.phone_number}` : t("unknownContact"))

const timeOf = (iso: string, language: Language) =>
  new Date(iso).toLocaleString(language === "es" ? "es-ES" : "en-US", { dateStyle: "short", timeStyle: "short" })

const statusWord = (status: Message["status"], t: Translate) =>
  ({ pending: t("statusPending"), sent: t("statusSent"), delivered: t("statusDelivered"), read: t("statusRead"), failed: t("statusFailed") })[status]

const statusMark = (status: Message["status"]) =>
  ({ pending: "◷", sent: "✓", delivered: "✓✓", read: "✓✓", failed: "!" })[status]

function App() {
  const [session, setSession] = useState<Session | undefined>()
  const [fatal, setFatal] = useState<string | undefined>()
  const [notice, setNotice] = useState<string | undefined>()
  const [filters, setFilters] = useState(initialFilters)
  const [list, setList] = useState<{ items: ReadonlyArray<Conversation>; more: boolean } | undefined>()
  const [selected, setSelected] = useState<string | undefined>()
  const [mode, setMode] = useState<Mode | undefined>()
  // Bumped when the open thread changed something the list shows (read, replied, ended, handoff settled).
  const [listVersion, setListVersion] = useState(0)
  const listChanged = useCallback(() => setListVersion((v) => v + 1), [])

  const language: Language = languageFromAddress() ?? session?.language ?? "en"
  const t = useMemo(() => translate(language), [language])
  const effectiveMode = mode ?? session?.default_mode ?? "system"

  usePageLook(language, effectiveMode)

  useEffect(() => {
    api.session().then(setSession, (e: unknown) => setFatal(e instanceof api.ApiError && e.status === 401 ? "invalid" : String(e)))
  }, [])

  useEffect(() => writeFilters(filters), [filters])

  usePolling(async (current) => {
    if (session === undefined) return
    const answer = await api.conversations(filters)
    if (current()) setList({ items: answer.data, more: answer.has_more })
  }, LIST_POLL_MS, [session, filters, listVersion])

  const fail = useCallback((e: unknown) => setNotice(e instanceof Error ? e.message : String(e)), [])

  if (fatal !== undefined) return <main class="fatal"><p role="alert">{fatal === "invalid" ? t("invalid") : fatal}</p></main>
  if (session === undefined) return <main class="fatal"><p>{t("loading")}</p></main>

  const update = (change: Partial<api.ListFilters>) => setFilters((current) => ({ ...current, ...change }))

  return (
    <div class="app">
      <header class="top">
        <h1>{session.name}{session.scope_name !== null ? <span class="scope"> · {session.scope_name}</span> : null}</h1>
        <ModePicker
          mode={effectiveMode}
          onChange={setMode}
          words={{ mode: t("mode"), modeSystem: t("modeSystem"), modeLight: t("modeLight"), modeDark: t("modeDark") }}
        />
      </header>
      {notice !== undefined
        ? (
          <div class="notice" role="alert">
            <span>{notice}</span>
            <button type="button" onClick={() => setNotice(undefined)}>{t("dismiss")}</button>
          </div>
        )
        : null}
      <div class="panes">
        <section class="list" aria-label={t("conversations")}>
          <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
            <label class="grow">
              <span>{t("search")}</span>
              <input
                type="search"
                value={filters.search}
                placeholder={t("searchPlaceholder")}
                onInput={(e) => update({ search: e.currentTarget.value })}
              />
            </label>
            <label>
              <span>{t("status")}</span>
              <select value={filters.status} onChange={(e) => update({ status: e.currentTarget.value as api.ListFilters["status"] })}>
                <option value="active">{t("statusActive")}</option>
                <option value="ended">{t("statusEnded")}</option>
                <option value="all">{t("statusAll")}</option>
              </select>
            </label>
            {session.numbers.length > 1
              ? (
                <label>
                  <span>{t("number")}</span>
                  <select value={filters.msg_config_id} onChange={(e) => update({ msg_config_id: e.currentTarget.value })}>
                    <option value="all">{t("allNumbers")}</option>
                    {session.numbers.map((n) => <option key={n.msg_config_id} value={n.msg_config_id}>{n.name}</option>)}
                  </select>
                </label>
              )
              : null}
            <label class="check">
              <input type="checkbox" checked={filters.unread} onChange={(e) => update({ unread: e.currentTarget.checked })} />
              <span>{t("unread")}</span>
            </label>
            <label class="check">
              <input type="checkbox" checked={filters.handoff} onChange={(e) => update({ handoff: e.currentTarget.checked })} />
              <span>{t("handoff")}</span>
            </label>
          </form>
          <ConversationList items={list?.items} selected={selected} onSelect={setSelected} t={t} language={language} />
          {list?.more === true ? <p class="hint">{t("moreConversations")}</p> : null}
        </section>
        <section class="thread" aria-label={t("messages")}>
          {selected === undefined
            ? <p class="empty">{t("chooseConversation")}</p>
            : <ThreadView key={selected} id={selected} t={t} language={language} onError={fail} onChanged={listChanged} />}
        </section>
      </div>
    </div>
  )
}

function ConversationList(props: {
  items: ReadonlyArray<Conversation> | undefined
  selected: string | undefined
  onSelect: (id: string) => void
  t: Translate
  language: Language
}) {
  const { items, t } = props
  const ref = useRef<HTMLUListElement>(null)
  if (items === undefined) return <p class="empty">{t("loading")}</p>
  if (items.length === 0) return <p class="empty">{t("noConversations")}</p>
  // Arrow keys move between conversations; Enter or Space opens one (native buttons).
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return
    const buttons = [...(ref.current?.querySelectorAll<HTMLButtonElement>("button") ?? [])]
    const at = buttons.indexOf(document.activeElement as HTMLButtonElement)
    const next = buttons[Math.max(0, Math.min(buttons.length - 1, at + (e.key === "ArrowDown" ? 1 : -1)))]
    next?.focus()
    e.preventDefault()
  }
  return (
    <ul class="conversations" ref={ref} onKeyDown={onKeyDown}>
      {items.map((c) => (
        <li key={c.id}>
          <button
            type="button"
            class="conversation"
            aria-current={c.id === props.selected ? "true" : undefined}
            data-conversation-id={c.id}
            onClick={() => props.onSelect(c.id)}
          >
            <span class="who">{contactLabel(c, t)}</span>
            <span class="when">{timeOf(c.last_active_at, props.language)}</span>
            <span class="what">{c.last_message_text ?? ""}</span>
            <span class="badges">
              {c.unread_count > 0 ? <span class="badge unread">{t("unreadCount", { n: c.unread_count })}</span> : null}
              {c.handoff !== null ? <span class="badge handoff">{t("inHandoff")}</span> : null}
              {c.status === "ended" ? <span class="badge ended">{t("statusEnded")}</span> : null}
            </span>
          </button>
        </li>
      ))}
    </ul>
  )
}

function ThreadView(props: { id: string; t: Translate; language: Language; onError: (e: unknown) => void; onChanged: () => void }) {
  const { id, t, onError, onChanged } = props
  const [thread, setThread] = useState<Thread | undefined>()
  const [busy, setBusy] = useState(false)
  const bottom = useRef<HTMLLIElement>(null)
  const lastCount = useRef(0)

  const load = useCallback(async () => {
    const next = await api.thread(id)
    setThread(next)
    // The agent has the thread in front of them: the contact's messages are read.
    if (next.conversation.unread_count > 0) {
      await api.markRead(id).then(onChanged, onError)
    }
  }, [id])

  usePolling(load, THREAD_POLL_MS, [id])

  useEffect(() => {
    const count = thread?.messages.length ?? 0
    if (count !== lastCount.current) bottom.current?.scrollIntoView({ block: "end" })
    lastCount.current = count
  }, [thread?.messages.length])

  const act = async (action: () => Promise<unknown>) => {
    setBusy(true)
    try {
      await action()
      await load()
      onChanged()
    } catch (e) {
      onError(e)
    } finally {
      setBusy(false)
    }
  }

  if (thread === undefined) return <p class="empty">{t("loading")}</p>
  const c = thread.conversation
  return (
    <div class="thread-inner">
      <header class="thread-head">
        <div>
          <h2>{contactLabel(c, t)}</h2>
          <p class="sub">{c.phone_number !== null ? `+${c.phone_number}` : c.username ?? ""}</p>
        </div>
        {c.status === "active"
          ? <button type="button" class="secondary" disabled={busy} onClick={() => act(() => api.endConversation(id))}>{t("endConversation")}</button>
          : null}
      </header>
      {c.handoff !== null
        ? (
          <div class="handoff-banner" role="status">
            <div>
              <strong>{t("inHandoff")}</strong>
              <p>{c.handoff.reason !== null ? t("handoffReason", { reason: c.handoff.reason }) : t("handoffNoReason")}</p>
              <HandoffContext value={c.handoff.context_data} t={t} />
            </div>
            <div class="actions">
              <button type="button" disabled={busy} onClick={() => act(() => api.settleHandoff(id, "resume"))}>{t("resume")}</button>
              <button type="button" class="secondary" disabled={busy} onClick={() => act(() => api.settleHandoff(id, "end"))}>
                {t("endExecution")}
              </button>
            </div>
          </div>
        )
        : null}
      <ol class="messages" aria-live="polite">
        {thread.messages.map((m) => <MessageView key={m.id} message={m} t={t} language={props.language} />)}
        <li ref={bottom} aria-hidden="true" class="end" />
      </ol>
      {c.status === "ended"
        ? <p class="closed">{t("ended")}</p>
        : c.window_open
        ? <Composer t={t} onSend={(text) => act(() => api.reply(id, { text }))} busy={busy} />
        : <TemplateComposer id={id} t={t} busy={busy} onSend={(template) => act(() => api.reply(id, { template }))} />}
    </div>
  )
}

/** What the handoff node handed over (`context_data`): an object as a list of its fields, anything else as JSON. */
function HandoffContext(props: { value: unknown; t: Translate }) {
  const { value, t } = props
  if (value === null || value === undefined) return null
  const show = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v))
  return (
    <details class="handoff-context" open>
      <summary>{t("handoffContext")}</summary>
      {typeof value === "object" && !Array.isArray(value)
        ? (
          <dl>
            {Object.entries(value as Record<string, unknown>).map(([key, v]) => (
              <div key={key}>
                <dt>{key}</dt>
                <dd>{show(v)}</dd>
              </div>
            ))}
          </dl>
        )
        : <pre>{show(value)}</pre>}
    </details>
  )
}

function MessageView(props: { message: Message; t: Translate; language: Language }) {
  const { message: m, t } = props
  return (
    <li class={`message ${m.direction}`} data-message-id={m.id} data-status={m.status}>
      <div class="bubble">
        {m.media !== null ? <MediaView message={m} t={t} /> : null}
        {m.text !== null ? <p class="text">{m.text}</p> : null}
        <p class="meta">
          {m.sent_by !== null ? <span class="by">{t("sentBy", { name: m.sent_by.name ?? m.sent_by.id })}</span> : null}
          <time dateTime={m.created_at}>{timeOf(m.created_at, props.language)}</time>
          {m.direction === "outbound"
            ? (
              <span class={`tick ${m.status}`} title={statusWord(m.status, t)} aria-label={statusWord(m.status, t)}>
                {statusMark(m.status)}
              </span>
            )
            : null}
        </p>
        {m.error !== null ? <p class="error">{m.error}</p> : null}
      </div>
    </li>
  )
}

function MediaView(props: { message: Message; t: Translate }) {
  const { message, t } = props
  const [url, setUrl] = useState<string | undefined>()
  useEffect(() => {
    let revoked = false
    let made: string | undefined
    api.mediaObjectUrl(message.id).then((u) => {
      made = u
      if (revoked) URL.revokeObjectURL(u)
      else setUrl(u)
    }, () => undefined)
    return () => {
      revoked = true
      if (made !== undefined) URL.revokeObjectURL(made)
    }
  }, [message.id])
  const media = message.media!
  if (url === undefined) return <p class="media-placeholder">{t("media")}: {media.filename}</p>
  if (media.content_type.startsWith("image/")) return <img class="media" src={url} alt={media.filename} />
  if (media.content_type.startsWith("audio/")) return <audio class="media" controls src={url} />
  if (media.content_type.startsWith("video/")) return <video class="media" controls src={url} />
  return <a class="media-file" href={url} download={media.filename}>{t("download", { name: media.filename })}</a>
}

function Composer(props: { t: Translate; busy: boolean; onSend: (text: string) => Promise<void> }) {
  const { t } = props
  const [text, setText] = useState("")
  const send = async () => {
    const body = text.trim()
    if (body === "" || props.busy) return
    await props.onSend(body)
    setText("")
  }
  return (
    <form
      class="composer"
      onSubmit={(e) => {
        e.preventDefault()
        void send()
      }}
    >
      <label class="grow">
        <span class="visually-hidden">{t("reply")}</span>
        <textarea
          rows={2}
          value={text}
          placeholder={t("replyPlaceholder")}
          onInput={(e) => setText(e.currentTarget.value)}
          onKeyDown={(e) => {
            if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
              e.preventDefault()
              void send()
            }
          }}
        />
      </label>
      <button type="submit" disabled={props.busy || text.trim() === ""}>{props.busy ? t("sending") : t("send")}</button>
    </form>
  )
}

function TemplateComposer(props: {
  id: string
  t: Translate
  busy: boolean
  onSend: (template: { name: string; language: string; parameters: Array<string> }) => Promise<void>
}) {
  const { t } = props
  const [list, setList] = useState<ReadonlyArray<Template> | undefined>()
  const [choice, setChoice] = useState("")
  const [values, setValues] = useState<Array<string>>([])
  useEffect(() => {
    api.templates(props.id).then(setList, () => setList([]))
  }, [props.id])
  const chosen = list?.find((tpl) => `${tpl.name}|${tpl.language}` === choice)
  return (
    <form
      class="composer template"
      onSubmit={(e) => {
        e.preventDefault()
        if (chosen !== undefined) void props.onSend({ name: chosen.name, language: chosen.language, parameters: values.slice(0, chosen.parameter_count) })
      }}
    >
      <p class="window">{t("windowClosed")}</p>
      {list !== undefined && list.length === 0
        ? <p class="hint">{t("noTemplates")}</p>
        : (
          <>
            <label>
              <span>{t("template")}</span>
              <select
                value={choice}
                onChange={(e) => {
                  setChoice(e.currentTarget.value)
                  setValues([])
                }}
              >
                <option value="">{t("chooseTemplate")}</option>
                {(list ?? []).map((tpl) => (
                  <option key={`${tpl.name}|${tpl.language}`} value={`${tpl.name}|${tpl.language}`}>{tpl.name} ({tpl.language})</option>
                ))}
              </select>
            </label>
            {chosen?.body != null ? <p class="preview">{chosen.body}</p> : null}
            {Array.from({ length: chosen?.parameter_count ?? 0 }, (_, i) => (
              <label key={i}>
                <span>{t("parameter", { n: i + 1 })}</span>
                <input
                  type="text"
                  value={values[i] ?? ""}
                  onInput={(e) => {
                    const next = [...values]
                    next[i] = e.currentTarget.value
                    setValues(next)
                  }}
                />
              </label>
            ))}
            <button type="submit" disabled={props.busy || chosen === undefined}>{t("sendTemplate")}</button>
          </>
        )}
    </form>
  )
}

render(<App />, document.getElementById("app")!)
