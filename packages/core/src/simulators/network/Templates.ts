/**
 * How the simulated network reviews a template definition. A definition the
 * network cannot even read is refused at once (100); a readable one is stored
 * `PENDING` and reviewed after a short delay, ending `APPROVED`, or `REJECTED`
 * (`INVALID_FORMAT`) when it breaks a content rule: a body that starts or
 * ends with a variable, positional variables that are not `{{1}}`..`{{n}}`,
 * or variables without example values.
 *
 * Authentication templates follow the spec's rules: no header, a body the
 * network writes itself (optionally with the security sentence), a footer
 * that only carries `code_expiration_minutes` (1–90), one OTP button
 * (`COPY_CODE`, `ONE_TAP` or `ZERO_TAP`; the latter two need
 * `supported_apps`), and a number with a messaging limit of 2,000 or more.
 */
import { Predicate } from "effect"
import { type SimError, simError } from "../../network/ErrorCodes.ts"
import { placeholders } from "./Messages.ts"
import { isSimError } from "./Access.ts"
import { type Json } from "./Model.ts"

export const templateCategories = ["UTILITY", "MARKETING", "AUTHENTICATION"] as const
const componentTypes = new Set(["HEADER", "BODY", "FOOTER", "BUTTONS"])
const headerFormats = new Set(["TEXT", "IMAGE", "VIDEO", "DOCUMENT", "LOCATION"])
const buttonTypes = new Set([
  "QUICK_REPLY",
  "URL",
  "PHONE_NUMBER",
  "OTP",
  "COPY_CODE",
  "FLOW",
  "CATALOG",
  "MPM",
  "VOICE_CALL",
  "REQUEST_CONTACT_INFO"
])
const otpTypes = new Set(["COPY_CODE", "ONE_TAP", "ZERO_TAP"])

/** Tiers with a messaging limit of 2,000 or more (authentication eligibility). */
const authenticationTiers = new Set(["TIER_2K", "TIER_10K", "TIER_100K", "TIER_UNLIMITED"])

export interface ReadTemplate {
  readonly category: string
  readonly parameterFormat: "POSITIONAL" | "NAMED"
  readonly subCategory: string | undefined
  readonly components: Array<Record<string, unknown>>
  readonly verdict: "APPROVED" | "REJECTED"
  readonly reason: string
}

const refuse = (details: string, subcode?: number) => simError(100, details, subcode === undefined ? {} : { subcode })

const namePattern = /^[a-z0-9_]{1,512}$/
const languagePattern = /^[a-z]{2,3}(_[A-Z]{2,4})?$/

export const checkName = (name: unknown): string | SimError => {
  if (name === undefined) return refuse("The parameter name is required.")
  if (typeof name !== "string" || !namePattern.test(name)) {
    return refuse("Param name must contain only lowercase letters, digits and underscores, at most 512 characters")
  }
  return name
}

export const checkLanguage = (language: unknown): string | SimError => {
  if (language === undefined) return refuse("The parameter language is required.")
  if (typeof language !== "string" || !languagePattern.test(language)) {
    return refuse("Param language must be a language code such as en or en_US")
  }
  return language
}

const authenticationBody = (securityRecommendation: boolean) =>
  `*{{1}}* is your verification code.${securityRecommendation ? " For your security, do not share this code." : ""}`

const readAuthentication = (components: Array<Json>): Array<Record<string, unknown>> | SimError => {
  const stored: Array<Record<string, unknown>> = []
  for (const component of components) {
    const type = String(component["type"]).toUpperCase()
    if (type === "HEADER") return refuse("Authentication templates cannot have a HEADER component")
    if (type === "BODY") {
      if (component["text"] !== undefined) return refuse("The body of an authentication template is fixed by the network")
      const recommendation = component["add_security_recommendation"]
      if (recommendation !== undefined && typeof recommendation !== "boolean") {
        return refuse("Param add_security_recommendation must be a boolean")
      }
      stored.push({
        type: "BODY",
        text: authenticationBody(recommendation === true),
        ...(recommendation !== undefined ? { add_security_recommendation: recommendation } : {})
      })
    } else if (type === "FOOTER") {
      const minutes = component["code_expiration_minutes"]
      if (component["text"] !== undefined) return refuse("The footer of an authentication template is fixed by the network")
      if (minutes !== undefined && (typeof minutes !== "number" || !Number.isInteger(minutes) || minutes < 1 || minutes > 90)) {
        return refuse("Param code_expiration_minutes must be an integer from 1 to 90")
      }
      stored.push({
        type: "FOOTER",
        ...(minutes !== undefined ? { text: `This code expires in ${minutes} minutes.`, code_expiration_minutes: minutes } : {})
      })
    } else if (type === "BUTTONS") {
      const buttons = component["buttons"]
      if (!Array.isArray(buttons) || buttons.length !== 1 || !Predicate.isObject(buttons[0])) {
        return refuse("Authentication templates need exactly one OTP button")
      }
      const button = buttons[0]
      if (String(button["type"]).toUpperCase() !== "OTP") return refuse("Authentication templates need exactly one OTP button")
      const otpType = String(button["otp_type"] ?? "")
      if (!otpTypes.has(otpType)) return refuse("Param otp_type must be one of {COPY_CODE, ONE_TAP, ZERO_TAP}")
      if (otpType !== "COPY_CODE") {
        const apps = button["supported_apps"]
        const valid = Array.isArray(apps) && apps.length > 0 &&
          apps.every((app) =>
            Predicate.isObject(app) && typeof app["package_name"] === "string" && typeof app["signature_hash"] === "string"
          )
        if (!valid) return refuse(`${otpType} buttons need supported_apps with package_name and signature_hash`)
      }
      stored.push({ type: "BUTTONS", buttons: [{ ...button, type: "OTP", otp_type: otpType }] })
    }
  }
  if (!stored.some((c) => c["type"] === "BODY")) stored.unshift({ type: "BODY", text: authenticationBody(false) })
  if (!stored.some((c) => c["type"] === "BUTTONS")) return refuse("Authentication templates need exactly one OTP button")
  return stored
}

const readComponent = (component: Json): Record<string, unknown> | SimError => {
  const type = String(component["type"]).toUpperCase()
  const text = component["text"]
  if (type === "HEADER") {
    const format = String(component["format"] ?? "TEXT").toUpperCase()
    if (!headerFormats.has(format)) {
      return refuse("Param format of HEADER must be one of {TEXT, IMAGE, VIDEO, DOCUMENT, LOCATION}")
    }
    if (format === "TEXT" && (typeof text !== "string" || text.length === 0 || text.length > 60)) {
      return refuse("A TEXT header needs text of 1 to 60 characters")
    }
    return { ...component, type, format }
  }
  if (type === "BODY") {
    if (typeof text !== "string" || text.trim().length === 0) return refuse("The BODY component needs text")
    if (text.length > 1024) return refuse("The BODY text must be at most 1024 characters long")
    return { ...component, type }
  }
  if (type === "FOOTER") {
    if (typeof text !== "string" || text.length === 0 || text.length > 60) {
      return refuse("A FOOTER needs text of 1 to 60 characters")
    }
    return { ...component, type }
  }
  const buttons = component["buttons"]
  if (!Array.isArray(buttons) || buttons.length === 0 || buttons.length > 10) {
    return refuse("A BUTTONS component needs 1 to 10 buttons")
  }
  const stored: Array<Record<string, unknown>> = []
  for (const button of buttons) {
    if (!Predicate.isObject(button)) return refuse("Each button must be an object")
    const buttonType = String(button["type"]).toUpperCase()
    if (!buttonTypes.has(buttonType)) return refuse(`Button type ${String(button["type"])} is not supported`)
    if (buttonType === "OTP") return refuse("OTP buttons are only for AUTHENTICATION templates")
    const label = button["text"]
    if (
      ["QUICK_REPLY", "URL", "PHONE_NUMBER"].includes(buttonType) &&
      (typeof label !== "string" || label.length === 0 || label.length > 25)
    ) {
      return refuse("Button text must be 1 to 25 characters long")
    }
    // A URL button may end in a variable (`https://shop.test/track/{{1}}`).
    const url = typeof button["url"] === "string" ? button["url"].replace(/\{\{.*?\}\}/g, "x") : undefined
    if (buttonType === "URL" && (url === undefined || !URL.canParse(url))) {
      return refuse("A URL button needs a valid url")
    }
    if (buttonType === "PHONE_NUMBER" && typeof button["phone_number"] !== "string") {
      return refuse("A PHONE_NUMBER button needs phone_number")
    }
    stored.push({ ...button, type: buttonType })
  }
  return { type, buttons: stored }
}

/** Content rules checked at review: the reason for a rejection, or undefined. */
const reviewProblem = (components: ReadonlyArray<Record<string, unknown>>, format: "POSITIONAL" | "NAMED") => {
  const body = components.find((c) => c["type"] === "BODY")
  const text = String(body?.["text"] ?? "").trim()
  const names = placeholders(text)
  if (names.length === 0) return undefined
  if (/^\{\{[^}]*\}\}/.test(text) || /\{\{[^}]*\}\}$/.test(text)) return "INVALID_FORMAT"
  const example = Predicate.isObject(body?.["example"]) ? body["example"] : undefined
  if (format === "POSITIONAL") {
    const sequential = names.every((name, i) => name === String(i + 1)) && names.length === new Set(names).size
    if (!sequential) return "INVALID_FORMAT"
    const values = example?.["body_text"]
    const first = Array.isArray(values) ? values[0] : undefined
    if (!Array.isArray(first) || first.length < names.length) return "INVALID_FORMAT"
  } else {
    if (!names.every((name) => /^[a-z][a-z0-9_]*$/.test(name))) return "INVALID_FORMAT"
    const values = example?.["body_text_named_params"]
    const given = new Set(
      Array.isArray(values) ? values.filter(Predicate.isObject).map((v) => String(v["param_name"])) : []
    )
    if (!names.every((name) => given.has(name))) return "INVALID_FORMAT"
  }
  return undefined
}

/**
 * Reads a template definition (create, or edit when `existingCategory` is
 * given). `tiers` are the messaging-limit tiers of the account's numbers.
 */
export const readTemplate = (
  definition: Json,
  tiers: ReadonlyArray<string>,
  existingCategory?: string
): ReadTemplate | SimError => {
  const category = definition["category"] ?? existingCategory
  if (category === undefined) return refuse("The parameter category is required.")
  if (typeof category !== "string" || !(templateCategories as ReadonlyArray<string>).includes(category.toUpperCase())) {
    return refuse(`Param category must be one of {${templateCategories.join(", ")}}`)
  }
  const normalizedCategory = category.toUpperCase()
  const format = definition["parameter_format"] ?? "POSITIONAL"
  if (format !== "POSITIONAL" && format !== "NAMED") return refuse("Param parameter_format must be one of {POSITIONAL, NAMED}")
  const components = definition["components"]
  if (!Array.isArray(components) || components.length === 0) return refuse("The parameter components is required.")
  const seen = new Set<string>()
  for (const component of components) {
    if (!Predicate.isObject(component)) return refuse("Each component must be an object")
    const type = String(component["type"]).toUpperCase()
    if (!componentTypes.has(type)) return refuse(`Component type ${String(component["type"])} is not supported`)
    if (seen.has(type)) return refuse(`Only one ${type} component is allowed`)
    seen.add(type)
  }
  const subCategory = typeof definition["sub_category"] === "string" ? definition["sub_category"] : undefined

  if (normalizedCategory === "AUTHENTICATION") {
    if (!tiers.some((tier) => authenticationTiers.has(tier))) {
      return refuse("Authentication templates need a messaging limit of 2,000 or higher", 2388299)
    }
    const stored = readAuthentication(components as Array<Json>)
    if (!Array.isArray(stored)) return stored
    return {
      category: normalizedCategory,
      parameterFormat: "POSITIONAL",
      subCategory,
      components: stored,
      verdict: "APPROVED",
      reason: "NONE"
    }
  }

  if (!seen.has("BODY")) return refuse("The BODY component is required")
  const stored: Array<Record<string, unknown>> = []
  for (const component of components as Array<Json>) {
    const read = readComponent(component)
    if (isSimError(read)) return read
    stored.push(read)
  }
  const problem = reviewProblem(stored, format)
  return {
    category: normalizedCategory,
    parameterFormat: format,
    subCategory,
    components: stored,
    verdict: problem === undefined ? "APPROVED" : "REJECTED",
    reason: problem ?? "NONE"
  }
}
