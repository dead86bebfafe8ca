/**
 * Node config schemas of workflow definitions (decisions 2.3.1–2.3.14).
 *
 * Written as a small checker rather than `Schema` decoders on purpose: a
 * definition write answers 422 with every problem and a path in the
 * decisions' style (`nodes.ask_name.config.timeout_seconds`), conditional
 * requirements abound (`has_timeout`, `interactive_type`, `decision_type`),
 * and the output is the normalised stored config (read-only name fields
 * dropped, legacy webhook headers parsed), not a decoded type.
 *
 * Null policy: a required field never accepts null; every optional field
 * accepts null as "not set" (its default applies).
 */
import { DateTime, Option, Predicate } from "effect"
import type { ErrorDetail } from "../shared/ApiError.ts"
import type { ReferenceKind } from "./References.ts"
import type { NodeType } from "./Workflow.ts"

// ---------------------------------------------------------------------------
// Problems and references
// ---------------------------------------------------------------------------

/** A reference to check through `DefinitionReferences` once the shapes are checked (rule 10). */
export interface ReferenceCheck {
  readonly path: string
  readonly kind: ReferenceKind
  readonly id: string
}

/** An agent's settings that only its model can judge (2.3.9), checked once the model is found. */
export interface ModelSettingsCheck {
  readonly base: string
  /** The model's id or name, as referenced. */
  readonly model: string
  readonly reasoning_effort: unknown
  readonly prompt_cache_ttl: unknown
}

/** Collects every problem (in document order) and every reference to look up. */
export class Checker {
  readonly problems: Array<ErrorDetail> = []
  readonly references: Array<ReferenceCheck> = []
  readonly modelSettings: Array<ModelSettingsCheck> = []
  add(path: string, message: string): void {
    this.problems.push({ path, message })
  }
  reference(path: string, kind: ReferenceKind, id: string): void {
    this.references.push({ path, kind, id })
  }
}

export type JsonObject = Record<string, unknown>


const absent = (u: unknown): u is undefined | null => u === undefined || u === null

/** Joins a path and a key: `nodes.a.config` + `url`. */
export const at = (base: string, key: string): string => (base === "" ? key : `${base}.${key}`)
const idx = (base: string, i: number): string => `${base}[${i}]`

/** Length in characters (code points), as users count them. */
const charLength = (s: string): number => {
  let n = 0
  for (const _ of s) n++
  return n
}

export const UuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
/** 2.4.5 */
export const VariableNamePattern = /^[A-Za-z_][A-Za-z0-9_]*$/
export const ReservedVariableNames: ReadonlyArray<string> = ["flow_id", "started_at"]
/** 2.3.9 */
export const ToolNamePattern = /^[A-Za-z0-9_-]{1,64}$/

const hasPlaceholder = (s: string): boolean => s.includes("{{") || s.includes("${ENV:")

// ---------------------------------------------------------------------------
// Field checks. Each reads `obj[key]`, reports under `base.key` and returns
// the accepted value, or undefined when absent/null or invalid.
// ---------------------------------------------------------------------------

function checkKeys(c: Checker, obj: JsonObject, base: string, allowed: ReadonlyArray<string>): void {
  for (const key of Object.keys(obj)) {
    if (!allowed.includes(key)) c.add(at(base, key), "is not allowed")
  }
}

interface StringRule {
  readonly required?: boolean
  readonly max?: number
  readonly pattern?: RegExp
}

/** A string; a required one must not be blank. */
function checkString(c: Checker, obj: JsonObject, base: string, key: string, rule: StringRule = {}): string | undefined {
  return checkStringValue(c, obj[key], at(base, key), rule)
}

function checkStringValue(c: Checker, v: unknown, path: string, rule: StringRule = {}): string | undefined {
  if (absent(v)) {
    if (rule.required === true) c.add(path, "is required")
    return undefined
  }
  if (typeof v !== "string") {
    c.add(path, "must be a string")
    return undefined
  }
  if (rule.required === true && v.trim() === "") {
    c.add(path, "must not be empty")
    return undefined
  }
  if (rule.max !== undefined && charLength(v) > rule.max) {
    c.add(path, `must be at most ${rule.max} characters`)
    return undefined
  }
  if (rule.pattern !== undefined && !rule.pattern.test(v)) {
    c.add(path, `must match ${rule.pattern.source}`)
    return undefined
  }
  return v
}

function oneOf<const A extends string>(
  c: Checker,
  obj: JsonObject,
  base: string,
  key: string,
  values: ReadonlyArray<A>,
  required = false
): A | undefined {
  const v = obj[key]
  const path = at(base, key)
  if (absent(v)) {
    if (required) c.add(path, "is required")
    return undefined
  }
  if (typeof v !== "string" || !(values as ReadonlyArray<string>).includes(v)) {
    c.add(path, `must be one of ${values.join(", ")}`)
    return undefined
  }
  return v as A
}

function uuid(c: Checker, obj: JsonObject, base: string, key: string, required = false): string | undefined {
  return uuidValue(c, obj[key], at(base, key), required)
}

function uuidValue(c: Checker, v: unknown, path: string, required = false): string | undefined {
  if (absent(v)) {
    if (required) c.add(path, "is required")
    return undefined
  }
  if (typeof v !== "string" || !UuidPattern.test(v)) {
    c.add(path, "must be a uuid")
    return undefined
  }
  return v
}

interface NumberRule {
  readonly required?: boolean
  readonly integer?: boolean
  readonly min?: number
  readonly max?: number
}

function num(c: Checker, obj: JsonObject, base: string, key: string, rule: NumberRule): number | undefined {
  const v = obj[key]
  const path = at(base, key)
  if (absent(v)) {
    if (rule.required === true) c.add(path, "is required")
    return undefined
  }
  if (typeof v !== "number" || !Number.isFinite(v) || (rule.integer === true && !Number.isInteger(v))) {
    c.add(path, rule.integer === true ? "must be an integer" : "must be a number")
    return undefined
  }
  if ((rule.min !== undefined && v < rule.min) || (rule.max !== undefined && v > rule.max)) {
    c.add(
      path,
      rule.min !== undefined && rule.max !== undefined
        ? `must be between ${rule.min} and ${rule.max}`
        : rule.min !== undefined
        ? `must be at least ${rule.min}`
        : `must be at most ${rule.max}`
    )
    return undefined
  }
  return v
}

function bool(c: Checker, obj: JsonObject, base: string, key: string): boolean | undefined {
  const v = obj[key]
  if (absent(v)) return undefined
  if (typeof v !== "boolean") {
    c.add(at(base, key), "must be a boolean")
    return undefined
  }
  return v
}

function object(c: Checker, obj: JsonObject, base: string, key: string, required = false): JsonObject | undefined {
  const v = obj[key]
  const path = at(base, key)
  if (absent(v)) {
    if (required) c.add(path, "is required")
    return undefined
  }
  if (!Predicate.isObject(v)) {
    c.add(path, "must be an object")
    return undefined
  }
  return v
}

interface ArrayRule {
  readonly required?: boolean
  readonly min?: number
  readonly max?: number
}

const itemCount = (min: number | undefined, max: number | undefined): string =>
  min !== undefined && max !== undefined
    ? `must contain between ${min} and ${max} items`
    : min !== undefined
    ? `must contain at least ${min} ${min === 1 ? "item" : "items"}`
    : `must contain at most ${max} items`

function array(
  c: Checker,
  obj: JsonObject,
  base: string,
  key: string,
  rule: ArrayRule = {}
): ReadonlyArray<unknown> | undefined {
  const v = obj[key]
  const path = at(base, key)
  if (absent(v)) {
    if (rule.required === true) c.add(path, "is required")
    return undefined
  }
  if (!Array.isArray(v)) {
    c.add(path, "must be an array")
    return undefined
  }
  if ((rule.min !== undefined && v.length < rule.min) || (rule.max !== undefined && v.length > rule.max)) {
    c.add(path, itemCount(rule.min, rule.max))
  }
  return v
}

/** Variable names (2.4.5): `save_response_to`, `save_error_to`, `variable_name`. */
function variableName(c: Checker, obj: JsonObject, base: string, key: string, required = false): string | undefined {
  const v = checkString(c, obj, base, key, { required, max: 64, pattern: VariableNamePattern })
  if (v !== undefined && ReservedVariableNames.includes(v)) {
    c.add(at(base, key), `must not be the reserved name ${v}`)
    return undefined
  }
  return v
}

/** An http or https URL; a URL built from placeholders is checked at run time. */
function url(c: Checker, obj: JsonObject, base: string, key: string, required: boolean): string | undefined {
  const v = checkString(c, obj, base, key, { required })
  if (v === undefined) return undefined
  const path = at(base, key)
  const scheme = /^https?:\/\//i.test(v)
  if (hasPlaceholder(v)) {
    if (!scheme && !/^(\{\{|\$\{ENV:)/.test(v)) c.add(path, "must be an http or https URL")
    return v
  }
  if (!scheme || !URL.canParse(v)) {
    c.add(path, "must be an http or https URL")
    return undefined
  }
  return v
}

// ---------------------------------------------------------------------------
// AI fields (2.3.14)
// ---------------------------------------------------------------------------

/** `{"$ai": {}}`: the value is generated at run time. */
export const isAiMarker = (u: unknown): boolean =>
  Predicate.isObject(u) && Object.keys(u).length === 1 && Predicate.isObject(u["$ai"])

/** Relative paths (`body_template.customer.note`) of every AI marker inside a value. */
function collectMarkers(v: unknown, rel: string, out: Array<string>): void {
  if (isAiMarker(v)) {
    out.push(rel)
  } else if (Array.isArray(v)) {
    v.forEach((item, i) => collectMarkers(item, `${rel}.${i}`, out))
  } else if (Predicate.isObject(v)) {
    for (const [k, item] of Object.entries(v)) collectMarkers(item, `${rel}.${k}`, out)
  }
}

/** A text field that may hold the AI marker instead of a string. */
function text(
  c: Checker,
  obj: JsonObject,
  base: string,
  key: string,
  markers: Array<string>,
  rule: StringRule = {}
): string | undefined {
  if (isAiMarker(obj[key])) {
    markers.push(key)
    return undefined
  }
  return checkString(c, obj, base, key, rule)
}

const hasModel = (config: JsonObject): boolean =>
  !absent(config["provider_model_id"]) || !absent(config["provider_model_name"])

/** `ai_field_config.<field>` for every marker, and a model. */
function checkAiFields(c: Checker, config: JsonObject, base: string, markers: ReadonlyArray<string>): void {
  const aiConfig = object(c, config, base, "ai_field_config")
  if (markers.length === 0) return
  if (!hasModel(config)) {
    c.add(at(base, "provider_model_id"), "is required when a field holds the $ai marker (or give provider_model_name)")
  }
  for (const field of markers) {
    const path = at(at(base, "ai_field_config"), field)
    const entry = aiConfig?.[field]
    if (absent(entry)) {
      c.add(path, `is required for the $ai marker in ${field}`)
      continue
    }
    if (!Predicate.isObject(entry)) {
      c.add(path, "must be an object")
      continue
    }
    if (entry["mode"] !== "prompt") c.add(at(path, "mode"), "must be prompt")
    checkStringValue(c, entry["prompt"], at(path, "prompt"), { required: true })
  }
}

// ---------------------------------------------------------------------------
// Shared field groups
// ---------------------------------------------------------------------------

/** The model used by AI fields, decide `ai` and agents: the id wins; the name is a lookup key. */
function providerModel(c: Checker, config: JsonObject, base: string, required: boolean): string | undefined {
  const id = uuid(c, config, base, "provider_model_id")
  const name = checkString(c, config, base, "provider_model_name")
  if (id !== undefined) {
    c.reference(at(base, "provider_model_id"), "provider_model", id)
    return id
  } else if (name !== undefined && absent(config["provider_model_id"])) {
    if (name.trim() === "") {
      c.add(at(base, "provider_model_name"), "must not be empty")
    } else {
      c.reference(at(base, "provider_model_name"), "provider_model", name)
      return name
    }
  } else if (required && !hasModel(config)) {
    c.add(at(base, "provider_model_id"), "is required (or give provider_model_name)")
  }
  return undefined
}

const SenderKeys = [
  "phone_number_id",
  "msg_config_id",
  "to_phone_number",
  "provider_model_id",
  "provider_model_name",
  "ai_field_config"
] as const

/** Common sender fields of the send nodes. `msg_config_id` is ignored (not looked up) when `phone_number_id` is set. */
function sender(c: Checker, config: JsonObject, base: string): void {
  const phone = checkString(c, config, base, "phone_number_id")
  if (phone !== undefined) {
    if (phone.trim() === "") c.add(at(base, "phone_number_id"), "must not be empty")
    else c.reference(at(base, "phone_number_id"), "phone_number", phone)
  }
  const msgConfig = uuid(c, config, base, "msg_config_id")
  if (msgConfig !== undefined && absent(config["phone_number_id"])) {
    c.reference(at(base, "msg_config_id"), "msg_config", msgConfig)
  }
  checkString(c, config, base, "to_phone_number")
  providerModel(c, config, base, false)
}

// ---------------------------------------------------------------------------
// Node configs
// ---------------------------------------------------------------------------

/** What a config check needs besides the config itself. */
export interface ConfigContext {
  readonly checker: Checker
  /** Path of the config, e.g. `nodes.ask_name.config`. */
  readonly base: string
  /** The workflow being written (a `call` node may not call it). */
  readonly workflowId: string | undefined
  /** Condition ids (lowercase) of the node with the same id in the previous definition (decide only). */
  readonly previousConditionIds: ReadonlySet<string>
}

/** A decide condition after checking; conditions without `id` get one when the definition is stored. */
export interface CheckedCondition {
  readonly id: string | undefined
  readonly label: string
  /** The condition's other given fields (`description`). */
  readonly rest: JsonObject
}

export interface CheckedConfig {
  /** The normalised config (read-only names dropped, legacy headers parsed); decide `conditions` are rebuilt from `conditions`. */
  readonly config: JsonObject
  /** Decide nodes with valid conditions only. */
  readonly conditions?: ReadonlyArray<CheckedCondition> | undefined
  /** Split nodes with valid branches only: the labels their edges carry. */
  readonly branches?: ReadonlyArray<string> | undefined
}

interface NodeConfigSpec {
  /** Keys accepted on write. */
  readonly keys: ReadonlyArray<string>
  /** Read-only keys: accepted and dropped. */
  readonly readOnly: ReadonlyArray<string>
  readonly check: (config: JsonObject, ctx: ConfigContext) => CheckedConfig | void
}

const send_text: NodeConfigSpec = {
  keys: ["message", "delay_seconds", ...SenderKeys],
  readOnly: [],
  check(config, { base, checker: c }) {
    const markers: Array<string> = []
    const message = config["message"]
    const path = at(base, "message")
    if (absent(message)) {
      c.add(path, "is required")
    } else if (isAiMarker(message)) {
      markers.push("message")
    } else if (typeof message === "string") {
      if (message.trim() === "") c.add(path, "must not be empty")
      else if (!hasPlaceholder(message) && charLength(message) > 4096) c.add(path, "must be at most 4096 characters")
    } else if (!Predicate.isObject(message)) {
      c.add(path, "must be a string or an object")
    }
    num(c, config, base, "delay_seconds", { integer: true, min: 0, max: 3600 })
    sender(c, config, base)
    checkAiFields(c, config, base, markers)
  }
}

const send_template: NodeConfigSpec = {
  keys: ["template_id", "parameters", ...SenderKeys],
  readOnly: ["template_name"],
  check(config, { base, checker: c }) {
    const id = uuid(c, config, base, "template_id", true)
    if (id !== undefined) c.reference(at(base, "template_id"), "template", id)
    const markers: Array<string> = []
    collectMarkers(config["parameters"], "parameters", markers)
    sender(c, config, base)
    checkAiFields(c, config, base, markers)
  }
}

export const InteractiveTypes = [
  "button",
  "list",
  "cta_url",
  "flow",
  "product",
  "product_list",
  "catalog_message",
  "location_request_message"
] as const
const HeaderTypes = ["none", "text", "image", "video", "document"] as const

const send_interactive: NodeConfigSpec = {
  keys: [
    "interactive_type",
    "body_text",
    "footer_text",
    "header_type",
    "header_text",
    "header_media_url",
    "buttons",
    "list_button_text",
    "list_sections",
    "cta_display_text",
    "cta_url",
    "flow_id",
    "flow_cta",
    "flow_token",
    "flow_action",
    "flow_action_payload",
    "header_config",
    "action_config",
    ...SenderKeys
  ],
  readOnly: [],
  check(config, { base, checker: c }) {
    const markers: Array<string> = []
    let type: (typeof InteractiveTypes)[number] | undefined
    if (config["interactive_type"] === "carousel") {
      c.add(at(base, "interactive_type"), "must not be carousel: send carousels through the messaging proxy")
    } else {
      type = oneOf(c, config, base, "interactive_type", InteractiveTypes, true)
    }
    text(c, config, base, "body_text", markers, { required: true, max: 1024 })
    text(c, config, base, "footer_text", markers, { max: 60 })
    const headerType = oneOf(c, config, base, "header_type", HeaderTypes)
    text(c, config, base, "header_text", markers, { required: headerType === "text", max: 60 })
    checkString(c, config, base, "header_media_url", {
      required: headerType === "image" || headerType === "video" || headerType === "document"
    })

    // button
    const buttons = array(c, config, base, "buttons", type === "button" ? { required: true, min: 1, max: 3 } : {})
    if (buttons !== undefined) {
      const seen = new Set<string>()
      buttons.forEach((b, i) => {
        const path = idx(at(base, "buttons"), i)
        if (!Predicate.isObject(b)) return c.add(path, "must be an object")
        checkKeys(c, b, path, ["id", "title"])
        const id = checkString(c, b, path, "id", { required: true, max: 256 })
        if (id !== undefined) {
          if (seen.has(id)) c.add(at(path, "id"), "must be unique within the node")
          seen.add(id)
        }
        checkString(c, b, path, "title", { required: true, max: 20 })
      })
    }

    // list
    checkString(c, config, base, "list_button_text", { required: type === "list", max: 20 })
    const sections = array(
      c,
      config,
      base,
      "list_sections",
      type === "list" ? { required: true, min: 1, max: 10 } : { max: 10 }
    )
    if (sections !== undefined) {
      const seen = new Set<string>()
      let rows = 0
      sections.forEach((s, i) => {
        const path = idx(at(base, "list_sections"), i)
        if (!Predicate.isObject(s)) return c.add(path, "must be an object")
        checkKeys(c, s, path, ["title", "rows"])
        checkString(c, s, path, "title", { max: 24 })
        const items = array(c, s, path, "rows", { required: true, min: 1 })
        items?.forEach((r, j) => {
          rows++
          const rowPath = idx(at(path, "rows"), j)
          if (!Predicate.isObject(r)) return c.add(rowPath, "must be an object")
          checkKeys(c, r, rowPath, ["id", "title", "description"])
          const id = checkString(c, r, rowPath, "id", { required: true, max: 200 })
          if (id !== undefined) {
            if (seen.has(id)) c.add(at(rowPath, "id"), "must be unique within the node")
            seen.add(id)
          }
          checkString(c, r, rowPath, "title", { required: true, max: 24 })
          checkString(c, r, rowPath, "description", { max: 72 })
        })
      })
      if (rows > 10) c.add(at(base, "list_sections"), "must contain at most 10 rows in total")
    }

    // cta_url
    checkString(c, config, base, "cta_display_text", { required: type === "cta_url", max: 20 })
    url(c, config, base, "cta_url", type === "cta_url")

    // flow
    checkString(c, config, base, "flow_id", { required: type === "flow" })
    checkString(c, config, base, "flow_cta", { required: type === "flow", max: 20 })
    checkString(c, config, base, "flow_token")
    const action = oneOf(c, config, base, "flow_action", ["navigate", "data_exchange"])
    const payload = object(c, config, base, "flow_action_payload")
    const effectiveAction = absent(config["flow_action"]) ? "navigate" : action
    if (payload !== undefined && effectiveAction === "navigate") {
      const path = at(base, "flow_action_payload")
      checkKeys(c, payload, path, ["screen", "data"])
      checkString(c, payload, path, "screen", { required: true })
      object(c, payload, path, "data")
    }

    // product, product_list, catalog_message
    object(c, config, base, "header_config")
    object(c, config, base, "action_config", type === "product" || type === "product_list" || type === "catalog_message")

    sender(c, config, base)
    checkAiFields(c, config, base, markers)
  }
}

const wait_for_response: NodeConfigSpec = {
  keys: ["has_timeout", "timeout_seconds", "save_response_to"],
  readOnly: [],
  check(config, { base, checker: c }) {
    const hasTimeout = bool(c, config, base, "has_timeout") === true
    // Ignored unless has_timeout: only its type is checked then.
    num(c, config, base, "timeout_seconds", hasTimeout ? { required: true, integer: true, min: 10, max: 604_800 } : { integer: true })
    variableName(c, config, base, "save_response_to")
  }
}

const decide: NodeConfigSpec = {
  keys: [
    "decision_type",
    "conditions",
    "llm_configuration",
    "provider_model_id",
    "provider_model_name",
    "llm_temperature",
    "llm_max_tokens",
    "function_id"
  ],
  readOnly: ["function_name"],
  check(config, { base, checker: c, previousConditionIds }) {
    const decisionType = oneOf(c, config, base, "decision_type", ["ai", "function"]) ??
      (absent(config["decision_type"]) ? "ai" : undefined)
    const list = array(c, config, base, "conditions", { required: true, min: 1, max: 20 })
    let conditions: Array<CheckedCondition> | undefined
    if (list !== undefined) {
      const before = c.problems.length
      const labels = new Set<string>()
      const ids = new Set<string>()
      const checked: Array<CheckedCondition> = []
      list.forEach((cond, i) => {
        const path = idx(at(base, "conditions"), i)
        if (!Predicate.isObject(cond)) return c.add(path, "must be an object")
        checkKeys(c, cond, path, ["id", "label", "description"])
        const id = uuidValue(c, cond["id"], at(path, "id"))
        if (id !== undefined) {
          const key = id.toLowerCase()
          if (ids.has(key)) c.add(at(path, "id"), "must be unique within the node")
          else if (!previousConditionIds.has(key)) {
            c.add(at(path, "id"), "does not name an existing condition of this node")
          }
          ids.add(key)
        }
        const label = checkString(c, cond, path, "label", { required: true, max: 100 })
        if (label !== undefined) {
          if (labels.has(label)) c.add(at(path, "label"), "must be unique within the node")
          labels.add(label)
        }
        checkString(c, cond, path, "description")
        const { id: _id, label: _label, ...rest } = cond
        if (label !== undefined) checked.push({ id, label, rest })
      })
      if (c.problems.length === before) conditions = checked
    }
    const llm = object(c, config, base, "llm_configuration")
    if (llm !== undefined) checkString(c, llm, at(base, "llm_configuration"), "instructions")
    providerModel(c, config, base, decisionType === "ai")
    num(c, config, base, "llm_temperature", { min: 0, max: 2 })
    num(c, config, base, "llm_max_tokens", { integer: true, min: 1, max: 100_000 })
    const fn = uuid(c, config, base, "function_id", decisionType === "function")
    if (fn !== undefined) c.reference(at(base, "function_id"), "function", fn)
    return { config, conditions }
  }
}

const fn: NodeConfigSpec = {
  keys: ["function_id", "save_response_to"],
  readOnly: ["function_name"],
  check(config, { base, checker: c }) {
    const id = uuid(c, config, base, "function_id", true)
    if (id !== undefined) c.reference(at(base, "function_id"), "function", id)
    variableName(c, config, base, "save_response_to")
  }
}

export const HttpMethods = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const

/** Header values: strings, or AI markers where allowed. Returns the markers' relative paths. */
function headerValues(c: Checker, headers: JsonObject, path: string, rel: string, markers: Array<string>): void {
  for (const [name, value] of Object.entries(headers)) {
    if (isAiMarker(value)) markers.push(`${rel}.${name}`)
    else if (typeof value !== "string") c.add(at(path, name), "must be a string")
  }
}

const webhook: NodeConfigSpec = {
  keys: [
    "url",
    "method",
    "headers",
    "body_template",
    "save_response_to",
    "provider_model_id",
    "provider_model_name",
    "ai_field_config"
  ],
  readOnly: [],
  check(config, { base, checker: c }) {
    const markers: Array<string> = []
    if (isAiMarker(config["url"])) markers.push("url")
    else url(c, config, base, "url", true)
    oneOf(c, config, base, "method", HttpMethods)
    const path = at(base, "headers")
    let headers = config["headers"]
    if (typeof headers === "string") {
      // Legacy form: a JSON string, parsed and stored as an object.
      if (headers.trim() === "") {
        headers = {}
      } else {
        try {
          headers = JSON.parse(headers)
        } catch {
          headers = undefined
        }
        if (!Predicate.isObject(headers)) {
          c.add(path, "must be an object of strings or a JSON string encoding one")
          headers = undefined
        }
      }
    } else if (!absent(headers) && !Predicate.isObject(headers)) {
      c.add(path, "must be an object of strings or a JSON string encoding one")
    }
    if (Predicate.isObject(headers)) headerValues(c, headers, path, "headers", markers)
    collectMarkers(config["body_template"], "body_template", markers)
    variableName(c, config, base, "save_response_to")
    providerModel(c, config, base, false)
    checkAiFields(c, config, base, markers)
    return { config: headers === config["headers"] ? config : { ...config, headers } }
  }
}

// ---------------------------------------------------------------------------
// Agent (2.3.9, 2.3.10)
// ---------------------------------------------------------------------------

export const BuiltInAgentTools = [
  "send_notification_to_user",
  "send_media",
  "get_execution_metadata",
  "get_whatsapp_context",
  "contact_conversations",
  "get_current_datetime",
  "save_variable",
  "get_variable",
  "ask_about_file",
  "complete_task",
  "handoff_to_human",
  "enter_waiting",
  "emit_event"
] as const
export type BuiltInAgentTool = (typeof BuiltInAgentTools)[number]

/** Tools always on for an `agent_default_tools_version` (null or 1 is legacy). */
export const forcedAgentTools = (version: number | null | undefined): ReadonlyArray<BuiltInAgentTool> =>
  (version ?? 1) <= 1 ? ["complete_task", "handoff_to_human"] : ["complete_task"]

/** The default enabled set of an `agent_default_tools_version`. */
export const defaultAgentTools = (version: number | null | undefined): ReadonlyArray<BuiltInAgentTool> =>
  BuiltInAgentTools.filter((t) =>
    t !== "emit_event" && ((version ?? 1) <= 1 ? t !== "contact_conversations" : true)
  )

/** The built-in tools an agent node has: its list (or the version default) plus the forced tools. */
export const effectiveAgentTools = (
  enabled: ReadonlyArray<string> | null | undefined,
  version: number | null | undefined
): ReadonlyArray<BuiltInAgentTool> => {
  const chosen = enabled === null || enabled === undefined ? defaultAgentTools(version) : enabled
  const forced = forcedAgentTools(version)
  return BuiltInAgentTools.filter((t) => chosen.includes(t) || forced.includes(t))
}

export const ReasoningEfforts = ["none", "minimal", "low", "medium", "high", "xhigh"] as const

function toolName(c: Checker, item: JsonObject, path: string, names: Map<string, string>): void {
  const name = checkString(c, item, path, "name", { required: true, pattern: ToolNamePattern })
  if (name === undefined) return
  if ((BuiltInAgentTools as ReadonlyArray<string>).includes(name)) {
    c.add(at(path, "name"), `must not be the name of the built-in tool ${name}`)
  } else if (names.has(name)) {
    c.add(at(path, "name"), `must be unique within the node (${name} is also used by ${names.get(name)})`)
  } else {
    names.set(name, path)
  }
}

function items(
  c: Checker,
  config: JsonObject,
  base: string,
  key: string,
  keys: ReadonlyArray<string>,
  each: (item: JsonObject, path: string) => JsonObject | void
): ReadonlyArray<unknown> | undefined {
  const list = array(c, config, base, key)
  if (list === undefined) return undefined
  return list.map((item, i) => {
    const path = idx(at(base, key), i)
    if (!Predicate.isObject(item)) {
      c.add(path, "must be an object")
      return item
    }
    checkKeys(c, item, path, keys)
    return each(item, path) ?? item
  })
}

const agent: NodeConfigSpec = {
  keys: [
    "system_prompt",
    "provider_model_id",
    "provider_model_name",
    "temperature",
    "max_iterations",
    "max_tokens",
    "reasoning_effort",
    "prompt_cache_ttl",
    "observer_prompt_mode",
    "message_delivery_mode",
    "enabled_default_tools",
    "default_tool_configs",
    "flow_agent_function_tools",
    "flow_agent_webhooks",
    "flow_agent_knowledge_bases",
    "flow_agent_mcp_servers"
  ],
  readOnly: [],
  check(config, { base, checker: c }) {
    checkString(c, config, base, "system_prompt")
    const model = providerModel(c, config, base, true)
    num(c, config, base, "temperature", { min: 0, max: 2 })
    num(c, config, base, "max_iterations", { integer: true, min: 1, max: 200 })
    num(c, config, base, "max_tokens", { integer: true, min: 1, max: 128_000 })
    const effort = oneOf(c, config, base, "reasoning_effort", ReasoningEfforts)
    const ttl = oneOf(c, config, base, "prompt_cache_ttl", ["5m", "1h"])
    if (model !== undefined) c.modelSettings.push({ base, model, reasoning_effort: effort, prompt_cache_ttl: ttl })
    oneOf(c, config, base, "observer_prompt_mode", ["analysis_only", "interactive_chat"])
    const mode = oneOf(c, config, base, "message_delivery_mode", ["auto_send_assistant_text", "tool_only"])

    const enabled = array(c, config, base, "enabled_default_tools")
    enabled?.forEach((t, i) => {
      if (typeof t !== "string" || !(BuiltInAgentTools as ReadonlyArray<string>).includes(t)) {
        c.add(idx(at(base, "enabled_default_tools"), i), `must be one of ${BuiltInAgentTools.join(", ")}`)
      }
    })
    // send_notification_to_user is in every default set and never forced.
    if (mode === "tool_only" && enabled !== undefined && !enabled.includes("send_notification_to_user")) {
      c.add(at(base, "message_delivery_mode"), "tool_only requires send_notification_to_user in enabled_default_tools")
    }

    const toolConfigs = object(c, config, base, "default_tool_configs")
    if (toolConfigs !== undefined) {
      const path = at(base, "default_tool_configs")
      checkKeys(c, toolConfigs, path, ["emit_event"])
      const emit = object(c, toolConfigs, path, "emit_event")
      if (emit !== undefined) {
        const emitPath = at(path, "emit_event")
        checkKeys(c, emit, emitPath, ["event_definition_ids"])
        array(c, emit, emitPath, "event_definition_ids")?.forEach((id, i) => {
          const idPath = idx(at(emitPath, "event_definition_ids"), i)
          const valid = uuidValue(c, id, idPath, true)
          if (valid !== undefined) c.reference(idPath, "event_definition", valid)
        })
      }
    }

    const names = new Map<string, string>()
    const functionTools = items(
      c,
      config,
      base,
      "flow_agent_function_tools",
      ["name", "description", "function_id", "function_name", "input_schema"],
      (tool, path) => {
        toolName(c, tool, path, names)
        checkString(c, tool, path, "description")
        const id = uuid(c, tool, path, "function_id", true)
        if (id !== undefined) c.reference(at(path, "function_id"), "function", id)
        jsonSchema(c, tool, path, "input_schema")
        const { function_name: _, ...rest } = tool
        return rest
      }
    )
    items(
      c,
      config,
      base,
      "flow_agent_webhooks",
      [
        "name",
        "description",
        "url",
        "http_method",
        "headers",
        "body",
        "body_schema",
        "jmespath_query",
        "ai_field_config"
      ],
      (hook, path) => {
        toolName(c, hook, path, names)
        checkString(c, hook, path, "description")
        url(c, hook, path, "url", true)
        oneOf(c, hook, path, "http_method", HttpMethods)
        const headers = object(c, hook, path, "headers")
        if (headers !== undefined) headerValues(c, headers, at(path, "headers"), "headers", [])
        object(c, hook, path, "body")
        jsonSchema(c, hook, path, "body_schema")
        checkString(c, hook, path, "jmespath_query")
        object(c, hook, path, "ai_field_config")
      }
    )
    items(
      c,
      config,
      base,
      "flow_agent_knowledge_bases",
      ["name", "description", "knowledge_base_text"],
      (kb, path) => {
        toolName(c, kb, path, names)
        checkString(c, kb, path, "description")
        checkString(c, kb, path, "knowledge_base_text", { max: 200_000 })
      }
    )
    items(c, config, base, "flow_agent_mcp_servers", ["name", "description", "url", "headers"], (server, path) => {
      toolName(c, server, path, names)
      checkString(c, server, path, "description")
      url(c, server, path, "url", true)
      const headers = object(c, server, path, "headers")
      if (headers !== undefined) headerValues(c, headers, at(path, "headers"), "headers", [])
    })
    return {
      config: functionTools === undefined ? config : { ...config, flow_agent_function_tools: functionTools }
    }
  }
}

const JsonSchemaTypes = ["object", "array", "string", "number", "integer", "boolean", "null"]

/** A JSON Schema object: checked for shape (`type` a known name or a list of them, `properties` an object). */
function jsonSchema(c: Checker, obj: JsonObject, base: string, key: string): void {
  const schema = object(c, obj, base, key)
  if (schema === undefined) return
  const path = at(base, key)
  const type = schema["type"]
  const known = (t: unknown) => typeof t === "string" && JsonSchemaTypes.includes(t)
  if (type !== undefined && !(known(type) || (Array.isArray(type) && type.every(known)))) {
    c.add(at(path, "type"), `must be one of ${JsonSchemaTypes.join(", ")}`)
  }
  if (schema["properties"] !== undefined && !Predicate.isObject(schema["properties"])) {
    c.add(at(path, "properties"), "must be an object")
  }
}

const call: NodeConfigSpec = {
  keys: ["workflow_id", "save_error_to"],
  readOnly: ["workflow_name"],
  check(config, { base, checker: c, workflowId }) {
    const id = uuid(c, config, base, "workflow_id", true)
    if (id !== undefined) {
      if (workflowId !== undefined && id.toLowerCase() === workflowId.toLowerCase()) {
        c.add(at(base, "workflow_id"), "must name another workflow: a workflow cannot call itself")
      } else {
        c.reference(at(base, "workflow_id"), "workflow", id)
      }
    }
    variableName(c, config, base, "save_error_to")
  }
}

const handoff: NodeConfigSpec = {
  keys: ["reason", "context_data"],
  readOnly: [],
  check(config, { base, checker: c }) {
    checkString(c, config, base, "reason")
  }
}

const set_variable: NodeConfigSpec = {
  keys: ["variable_name", "variable_value", "value_type"],
  readOnly: [],
  check(config, { base, checker: c }) {
    variableName(c, config, base, "variable_name", true)
    if (config["variable_value"] === undefined) c.add(at(base, "variable_value"), "is required")
    oneOf(c, config, base, "value_type", ["string", "number", "boolean", "json"])
  }
}

const emit_event: NodeConfigSpec = {
  keys: ["event_name", "properties", "occurred_at"],
  readOnly: [],
  check(config, { base, checker: c }) {
    const name = checkString(c, config, base, "event_name", { required: true })
    if (name !== undefined && (charLength(name) > 128 || name !== name.toLowerCase())) {
      c.add(at(base, "event_name"), "must be lowercase, at most 128 characters")
    }
    const properties = object(c, config, base, "properties")
    if (properties !== undefined) {
      const path = at(base, "properties")
      const keys = Object.keys(properties)
      if (keys.length > 25) c.add(path, "may contain at most 25 keys")
      for (const key of keys) {
        const value = properties[key]
        if (charLength(key) > 64) c.add(at(path, key), "has a key longer than 64 characters")
        else if (!(value === null || ["string", "number", "boolean"].includes(typeof value))) {
          c.add(at(path, key), "must be a string, number, boolean or null")
        }
      }
    }
    const occurredAt = checkString(c, config, base, "occurred_at")
    if (
      occurredAt !== undefined && occurredAt.trim() !== "" && !hasPlaceholder(occurredAt) &&
      Option.isNone(DateTime.make(occurredAt))
    ) {
      c.add(at(base, "occurred_at"), "must be an ISO 8601 date-time or a placeholder")
    }
  }
}

/**
 * A split (issue 32 §4): weighted branches, each contact sticky to one; an optional experiment name and goal (a
 * project event, a reached node or a reply) for the experiment's report.
 */
const split: NodeConfigSpec = {
  keys: ["experiment", "branches", "goal"],
  readOnly: [],
  check(config, { base, checker: c }) {
    checkString(c, config, base, "experiment", { max: 100 })
    const list = array(c, config, base, "branches", { required: true, min: 2, max: 10 })
    const goal = object(c, config, base, "goal")
    if (goal !== undefined) {
      const path = at(base, "goal")
      const type = oneOf(c, goal, path, "type", ["event", "node", "reply"], true)
      checkKeys(c, goal, path, ["type", ...(type === "event" ? ["event_name"] : type === "node" ? ["node_id"] : [])])
      if (type === "event") checkString(c, goal, path, "event_name", { required: true, max: 128 })
      if (type === "node") checkString(c, goal, path, "node_id", { required: true, max: 200 })
    }
    if (list === undefined) return
    const before = c.problems.length
    const labels: Array<string> = []
    list.forEach((branch, i) => {
      const path = idx(at(base, "branches"), i)
      if (!Predicate.isObject(branch)) return c.add(path, "must be an object")
      checkKeys(c, branch, path, ["label", "weight"])
      const label = checkString(c, branch, path, "label", { required: true, max: 100 })
      num(c, branch, path, "weight", { required: true, integer: true, min: 1, max: 10_000 })
      if (label !== undefined) {
        if (labels.includes(label)) c.add(at(path, "label"), "must be unique within the node")
        labels.push(label)
      }
    })
    return { config, ...(c.problems.length === before ? { branches: labels } : {}) }
  }
}

const start: NodeConfigSpec = { keys: [], readOnly: [], check: () => undefined }

const specs: Record<NodeType, NodeConfigSpec> = {
  start,
  send_text,
  send_template,
  send_interactive,
  wait_for_response,
  decide,
  function: fn,
  webhook,
  agent,
  call,
  handoff,
  set_variable,
  emit_event,
  split
}

/**
 * Checks a node's config against its node_type's table (rule 4), reporting
 * into the context's checker, and returns the normalised config.
 */
export const checkConfig = (nodeType: NodeType, config: JsonObject, ctx: ConfigContext): CheckedConfig => {
  const spec = specs[nodeType]
  checkKeys(ctx.checker, config, ctx.base, [...spec.keys, ...spec.readOnly])
  // provider_model_name is only a lookup key when provider_model_id is absent; reads fill it from the id.
  const modelById = spec.keys.includes("provider_model_id") && typeof config["provider_model_id"] === "string"
  const kept: JsonObject = {}
  for (const [key, value] of Object.entries(config)) {
    if (!spec.readOnly.includes(key) && !(modelById && key === "provider_model_name")) kept[key] = value
  }
  return spec.check(kept, ctx) ?? { config: kept }
}

/** The display name a node gets when none is given. */
export const defaultDisplayNames: Record<NodeType, string> = {
  start: "Start",
  send_text: "Send text",
  send_template: "Send template",
  send_interactive: "Send interactive",
  wait_for_response: "Wait for response",
  decide: "Decide",
  function: "Function",
  webhook: "Webhook",
  agent: "Agent",
  call: "Call workflow",
  handoff: "Handoff",
  set_variable: "Set variable",
  emit_event: "Emit event",
  split: "Split"
}
