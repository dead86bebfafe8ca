/**
 * The words of the setup link's page and of the simulated signup dialog, in
 * English and Spanish. A link in another of its languages (`pt`, `hi`, `id`,
 * `ar`) is shown in English until those translations exist; a link without a
 * language follows the browser's `Accept-Language`.
 */
import type { SetupErrorCode, SetupLinkLanguage } from "@parley/core"

export type PageLanguage = "en" | "es"

export interface SetupText {
  readonly title: string
  readonly intro: string
  readonly steps: readonly [string, string, string]
  readonly start: string
  readonly expires: (date: string) => string
  readonly lastAttempt: string
  readonly errors: Readonly<Record<SetupErrorCode, string>>
  readonly notFoundTitle: string
  readonly notFound: string
  readonly endedTitle: string
  readonly connectedTitle: string
  readonly connected: (number: string) => string
  readonly failedTitle: string
  readonly tryAgain: string
  readonly reconnect: (number: string) => string
  readonly provision: (countries: string) => string
  // The simulated network's dialog.
  readonly dialogTitle: string
  readonly dialogNote: string
  readonly email: string
  readonly password: string
  readonly chooseNumber: string
  readonly newNumber: (country: string) => string
  readonly coexistence: string
  readonly dedicated: string
  readonly connect: string
  readonly cancel: string
  readonly chooseFirst: string
  readonly logInFirst: string
  /**
   * The simulated accounts' and numbers' names in this language, by their English name (the simulator's
   * `SIGNUP_CATALOGUE`); a name not listed shows as it is.
   */
  readonly catalogueNames: Readonly<Record<string, string>>
}

const en: SetupText = {
  title: "Connect your business number",
  intro: "This page connects a phone number of your business to the messaging service. It takes about two minutes.",
  steps: [
    "Log in to your messaging network account.",
    "Choose the business account and the phone number to connect.",
    "Come back here: the number is connected."
  ],
  start: "Continue to log in",
  expires: (date) => `This link can be used until ${date}.`,
  lastAttempt: "The last attempt did not finish:",
  errors: {
    upstream_auth_failed: "The login to the messaging network was cancelled or failed.",
    phone_verification_failed: "The phone number could not be verified for this connection.",
    waba_limit_reached: "The business has reached its limit of messaging accounts.",
    token_exchange_failed: "The messaging network did not confirm the connection.",
    link_expired: "This setup link has expired or was replaced by a newer one.",
    already_used: "This setup link has already been used."
  },
  notFoundTitle: "Setup link not found",
  notFound: "Check the address, or ask for a new setup link.",
  endedTitle: "This setup link can no longer be used",
  connectedTitle: "Your number is connected",
  connected: (number) => `${number} is now connected. You can close this page.`,
  failedTitle: "The number was not connected",
  tryAgain: "Try again",
  reconnect: (number) => `This link refreshes the connection of ${number}.`,
  provision: (countries) => `You can also get a new number (${countries}).`,
  dialogTitle: "Log in to the messaging network",
  dialogNote: "Simulated network: no real account is used.",
  email: "Email",
  password: "Password",
  chooseNumber: "Business account and phone number",
  newNumber: (country) => `A new number in ${country}`,
  coexistence: "also on the business app",
  dedicated: "dedicated",
  connect: "Log in and connect",
  cancel: "Cancel",
  chooseFirst: "Choose a phone number first.",
  logInFirst: "Enter your email and password to log in.",
  catalogueNames: {}
}

const es: SetupText = {
  title: "Conecta el número de tu empresa",
  intro: "Esta página conecta un número de teléfono de tu empresa con el servicio de mensajería. Tarda unos dos minutos.",
  steps: [
    "Inicia sesión en tu cuenta de la red de mensajería.",
    "Elige la cuenta comercial y el número de teléfono que quieres conectar.",
    "Vuelve aquí: el número quedará conectado."
  ],
  start: "Continuar para iniciar sesión",
  expires: (date) => `Este enlace se puede usar hasta el ${date}.`,
  lastAttempt: "El último intento no terminó:",
  errors: {
    upstream_auth_failed: "El inicio de sesión en la red de mensajería se canceló o falló.",
    phone_verification_failed: "No se pudo verificar el número de teléfono para esta conexión.",
    waba_limit_reached: "La empresa alcanzó su límite de cuentas de mensajería.",
    token_exchange_failed: "La red de mensajería no confirmó la conexión.",
    link_expired: "Este enlace de configuración caducó o fue reemplazado por uno más reciente.",
    already_used: "Este enlace de configuración ya se usó."
  },
  notFoundTitle: "Enlace de configuración no encontrado",
  notFound: "Revisa la dirección o pide un nuevo enlace de configuración.",
  endedTitle: "Este enlace de configuración ya no se puede usar",
  connectedTitle: "Tu número está conectado",
  connected: (number) => `${number} ya está conectado. Puedes cerrar esta página.`,
  failedTitle: "El número no se conectó",
  tryAgain: "Intentar de nuevo",
  reconnect: (number) => `Este enlace renueva la conexión de ${number}.`,
  provision: (countries) => `También puedes obtener un número nuevo (${countries}).`,
  dialogTitle: "Inicia sesión en la red de mensajería",
  dialogNote: "Red simulada: no se usa ninguna cuenta real.",
  email: "Correo electrónico",
  password: "Contraseña",
  chooseNumber: "Cuenta comercial y número de teléfono",
  newNumber: (country) => `Un número nuevo en ${country}`,
  coexistence: "también en la app para empresas",
  dedicated: "dedicado",
  connect: "Iniciar sesión y conectar",
  cancel: "Cancelar",
  chooseFirst: "Primero elige un número de teléfono.",
  logInFirst: "Escribe tu correo electrónico y tu contraseña para iniciar sesión.",
  catalogueNames: {
    "Demo Business": "Empresa de demostración",
    "Demo Support": "Soporte de demostración",
    "Demo Shop": "Tienda de demostración",
    "Demo Unverified": "Demostración sin verificar",
    "Business at its account limit": "Empresa en su límite de cuentas",
    "Full Business": "Empresa sin cupo",
    "Business that withdraws its grant": "Empresa que retira su permiso",
    "Withdrawn Business": "Empresa que se retiró"
  }
}

export const texts: Readonly<Record<PageLanguage, SetupText>> = { en, es }

/** The page's language: the link's when translated, else the browser's first of `en`/`es`, else English. */
export const pageLanguage = (linkLanguage: SetupLinkLanguage | string | null | undefined, acceptLanguage: string | undefined): PageLanguage => {
  if (linkLanguage === "en" || linkLanguage === "es") return linkLanguage
  if (linkLanguage !== null && linkLanguage !== undefined) return "en"
  const ranked = (acceptLanguage ?? "")
    .split(",")
    .map((part, index) => {
      const [tag = "", ...params] = part.trim().split(";")
      const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined)
      return { lang: tag.trim().toLowerCase().split("-")[0] ?? "", q: q === undefined ? 1 : Number(q), index }
    })
    .filter((l) => l.q > 0)
    .sort((a, b) => b.q - a.q || a.index - b.index)
  const found = ranked.find((l) => l.lang === "en" || l.lang === "es")
  return found?.lang === "es" ? "es" : "en"
}

/** A date in the page's language, in UTC (the server does not know the customer's zone). */
export const formatDate = (iso: string, lang: PageLanguage): string =>
  new Intl.DateTimeFormat(lang === "es" ? "es-ES" : "en-US", { dateStyle: "long", timeZone: "UTC" }).format(new Date(iso))
