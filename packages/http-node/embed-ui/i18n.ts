/** Words every embedded page uses, and the translate function each page builds over its own dictionary. */
export type Language = "en" | "es"
export type Mode = "system" | "light" | "dark"

export const commonWords = {
  en: {
    mode: "Appearance",
    modeSystem: "System",
    modeLight: "Light",
    modeDark: "Dark",
    dismiss: "Dismiss",
    loading: "Loading…"
  },
  es: {
    mode: "Apariencia",
    modeSystem: "Sistema",
    modeLight: "Claro",
    modeDark: "Oscuro",
    dismiss: "Cerrar",
    loading: "Cargando…"
  }
}

/** `{name}` placeholders filled from `params`. */
export const translator = <W extends Record<string, string>>(dictionary: Record<Language, W>) => (language: Language) =>
(key: keyof W, params: Record<string, string | number> = {}) =>
  dictionary[language][key]!.replace(/\{(\w+)\}/g, (_, name: string) => String(params[name] ?? ""))

const query = new URLSearchParams(location.search)
const languageOf = (value: string | null): Language | undefined => (value === "en" || value === "es" ? value : undefined)

/** The address's `language` (or `lang`) overrides the embed's. */
export const languageFromAddress = (): Language | undefined => languageOf(query.get("language")) ?? languageOf(query.get("lang"))
