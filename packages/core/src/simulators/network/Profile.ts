/**
 * A number's business profile (`/<pnid>/whatsapp_business_profile`) and
 * settings (`/<pnid>/settings`), with the network's limits: `about` 1-139
 * characters, `address` 256, `description` 512, `email` 128, at most two
 * `http(s)` websites of 256, `vertical` from the network's list.
 */
import { Predicate } from "effect"
import { MessagingProduct } from "../../network/NetworkObjects.ts"
import {
  type BusinessProfile,
  fail,
  type Json,
  type NumberRecord,
  type NumberSettings,
  ok,
  type Outcome
} from "./Model.ts"
import { simError } from "../../network/ErrorCodes.ts"

/** A new number's profile, as the network sets it up. */
export const newProfile = (): BusinessProfile => ({ about: "Hey there! I am using WhatsApp.", vertical: "UNDEFINED" })

export const newSettings = (): NumberSettings => ({
  calling: { status: "DISABLED", call_icon_visibility: "DEFAULT", callback_permission_status: "DISABLED" }
})

const verticals = [
  "UNDEFINED",
  "OTHER",
  "AUTO",
  "BEAUTY",
  "APPAREL",
  "EDU",
  "ENTERTAIN",
  "EVENT_PLAN",
  "FINANCE",
  "GROCERY",
  "GOVT",
  "HOTEL",
  "HEALTH",
  "NONPROFIT",
  "PROF_SERVICES",
  "RETAIL",
  "TRAVEL",
  "RESTAURANT",
  "NOT_A_BIZ"
]

const profileFields = ["about", "address", "description", "email", "profile_picture_url", "websites", "vertical"]

/** Characters as people count them (an emoji is one). */
const length = (text: string) => [...text].length

const invalid = (details: string) => fail(simError(100, details))

/** `GET`: `{ data: [profile] }`, every member set or only the `fields` asked for. */
export const profileView = (number: NumberRecord, fields: string | undefined): Outcome => {
  const wanted = fields === undefined ? profileFields : fields.split(",").map((f) => f.trim()).filter((f) => f !== "")
  const unknown = wanted.find((field) => !profileFields.includes(field))
  if (unknown !== undefined) {
    return invalid(`Tried accessing nonexisting field (${unknown}) on node type (WhatsAppBusinessProfile)`)
  }
  const profile: Json = { ...number.profile }
  const view = Object.fromEntries(wanted.filter((field) => profile[field] !== undefined).map((f) => [f, profile[f]]))
  return ok({ data: [{ ...view, messaging_product: MessagingProduct }] })
}

const textLimits: Readonly<Record<string, number>> = { address: 256, description: 512, email: 128 }

/** `POST`: checks every member first, so a refused update changes nothing. */
export const updateProfile = (number: NumberRecord, body: unknown): Outcome => {
  if (!Predicate.isObject(body)) return invalid("The request body must be a JSON object")
  const { messaging_product, ...members } = body
  if (messaging_product === undefined) return invalid("The parameter messaging_product is required.")
  if (messaging_product !== MessagingProduct) return invalid(`Param messaging_product must be ${MessagingProduct}`)
  const next: Json = { ...number.profile }
  for (const [key, value] of Object.entries(members)) {
    if (key === "websites") {
      const valid = Array.isArray(value) && value.length <= 2 &&
        value.every((w) => typeof w === "string" && length(w) <= 256 && /^https?:\/\/\S+$/i.test(w))
      if (!valid) return invalid("Param websites must be at most 2 URLs starting with http:// or https://, 256 characters each")
      next[key] = [...value]
    } else if (key === "about") {
      if (typeof value !== "string" || length(value) < 1 || length(value) > 139) {
        return invalid("Param about must be between 1 and 139 characters long")
      }
      next[key] = value
    } else if (key === "vertical") {
      if (typeof value !== "string" || !verticals.includes(value)) {
        return invalid(`Param vertical must be one of {${verticals.join(", ")}}`)
      }
      next[key] = value
    } else if (key in textLimits) {
      const limit = textLimits[key]!
      if (typeof value !== "string" || length(value) > limit) return invalid(`Param ${key} must be at most ${limit} characters long`)
      if (key === "email" && value !== "" && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value)) {
        return invalid("Param email must be a valid email address")
      }
      // An empty string clears the member.
      next[key] = value === "" ? undefined : value
    } else if (key === "profile_picture_handle") {
      // Handles come from the resumable upload API, which the simulator does not model.
      return invalid("Param profile_picture_handle is not a valid upload handle")
    } else {
      return invalid(`Param ${key} is not a valid parameter`)
    }
  }
  number.profile = next as BusinessProfile
  return ok({ success: true })
}

export const settingsView = (number: NumberRecord): Outcome => ok(number.settings)

const callingChoices: Readonly<Record<string, ReadonlyArray<string>>> = {
  status: ["ENABLED", "DISABLED"],
  call_icon_visibility: ["DEFAULT", "DISABLE_ALL"],
  callback_permission_status: ["ENABLED", "DISABLED"]
}

/** `POST`: `calling` members merged into the stored settings; `call_hours` and `sip` are kept as given. */
export const updateSettings = (number: NumberRecord, body: unknown): Outcome => {
  if (!Predicate.isObject(body)) return invalid("The request body must be a JSON object")
  const { calling, ...others } = body
  const other = Object.keys(others)[0]
  if (other !== undefined) return invalid(`Param ${other} is not a valid parameter`)
  if (!Predicate.isObject(calling)) return invalid("The parameter calling is required.")
  const next: Json = { ...number.settings.calling }
  for (const [key, value] of Object.entries(calling)) {
    const choices = callingChoices[key]
    if (choices !== undefined) {
      if (typeof value !== "string" || !choices.includes(value)) {
        return invalid(`Param calling.${key} must be one of {${choices.join(", ")}}`)
      }
    } else if (key !== "call_hours" && key !== "sip") {
      return invalid(`Param calling.${key} is not a valid parameter`)
    } else if (!Predicate.isObject(value)) {
      return invalid(`Param calling.${key} must be an object`)
    }
    next[key] = value
  }
  number.settings = { calling: next as NumberSettings["calling"] }
  return ok({ success: true })
}
