/** What every embedded page's frame does: polling while visible, the language and palette, the appearance picker. */
import { useEffect, useLayoutEffect } from "preact/hooks"
import type { Language, Mode } from "./i18n.ts"

/**
 * Repeats `task` every `ms` while the page is visible, and once at once. `current()` tells the task whether its
 * inputs still hold when its answer comes back (a slow answer for old inputs must not replace a newer one).
 */
export const usePolling = (task: (current: () => boolean) => Promise<void>, ms: number, deps: ReadonlyArray<unknown>) => {
  useEffect(() => {
    let stopped = false
    let timer: ReturnType<typeof setTimeout> | undefined
    const current = () => !stopped
    const tick = async () => {
      if (stopped) return
      if (document.visibilityState === "visible") await task(current).catch(() => undefined)
      if (!stopped) timer = setTimeout(tick, ms)
    }
    void tick()
    return () => {
      stopped = true
      clearTimeout(timer)
    }
  }, deps)
}

/** Before paint: no frame in the wrong language or palette. */
export const usePageLook = (language: Language, mode: Mode) =>
  useLayoutEffect(() => {
    document.documentElement.lang = language
    document.documentElement.dataset["mode"] = mode
  }, [language, mode])

export function ModePicker(props: {
  mode: Mode
  onChange: (mode: Mode) => void
  words: { mode: string; modeSystem: string; modeLight: string; modeDark: string }
}) {
  const { words } = props
  return (
    <label class="mode">
      <span>{words.mode}</span>
      <select value={props.mode} onChange={(e) => props.onChange(e.currentTarget.value as Mode)}>
        <option value="system">{words.modeSystem}</option>
        <option value="light">{words.modeLight}</option>
        <option value="dark">{words.modeDark}</option>
      </select>
    </label>
  )
}
