import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import type { Unprocessable } from "../src/shared/ApiError.ts"
import { Ids } from "../src/shared/Ids.ts"
import { defaultDefinition, validateDefinition, type ValidateOptions, withReadOnlyNames } from "../src/workflows/Definition.ts"
import { BuiltInAgentTools, effectiveAgentTools } from "../src/workflows/NodeConfigs.ts"
import { DefinitionReferences, type ReferenceKind } from "../src/workflows/References.ts"
import type { Definition } from "../src/workflows/Workflow.ts"

// ---------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------

const PROJECT = "aaaaaaaa-0000-4000-8000-000000000000"
const FN = "11111111-1111-4111-8111-111111111111"
const FN2 = "11111111-1111-4111-8111-222222222222"
const WF = "22222222-2222-4222-8222-222222222222"
const SELF = "22222222-2222-4222-8222-333333333333"
const TPL = "33333333-3333-4333-8333-333333333333"
const MODEL = "44444444-4444-4444-8444-444444444444"
const MSGCFG = "55555555-5555-4555-8555-555555555555"
const EVDEF = "66666666-6666-4666-8666-666666666666"
const PHONE = "109876543210"
const UNKNOWN = "99999999-9999-4999-8999-999999999999"

const uuidN = (n: number) => `00000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`

const records: Record<ReferenceKind, Record<string, string>> = {
  function: { [FN]: "lookup_customer", [FN2]: "score_lead" },
  workflow: { [WF]: "Onboarding", [SELF]: "This workflow" },
  template: { [TPL]: "order_update" },
  provider_model: { [MODEL]: "gpt-test", "gpt-test": "gpt-test" },
  phone_number: { [PHONE]: "+1 555 0100" },
  msg_config: { [MSGCFG]: "Main number" },
  event_definition: { [EVDEF]: "order.paid" }
}

const lookups: Array<string> = []
const References = Layer.succeed(DefinitionReferences, {
  lookup: (projectId, kind, id) =>
    Effect.sync(() => {
      lookups.push(`${kind}:${id}`)
      return projectId === PROJECT ? Option.fromNullishOr(records[kind][id]) : Option.none()
    }),
  providerModel: (idOrName) =>
    Effect.succeed(
      records.provider_model[idOrName] === undefined ? Option.none() : Option.some({
        id: MODEL,
        name: "gpt-test",
        provider: "test",
        reasoning_model: true,
        thinking_mode: "manual" as const,
        supports_custom_sampling: true,
        supported_reasoning_efforts: ["low" as const, "medium" as const, "high" as const],
        default_reasoning_effort: "medium" as const,
        supported_prompt_cache_ttls: ["5m" as const, "1h" as const],
        default_prompt_cache_ttl: "5m" as const,
        api_surface: "chat_completions" as const
      })
    )
})

const options = (o: Partial<ValidateOptions> = {}): ValidateOptions => ({
  projectId: PROJECT,
  workflowId: SELF,
  previous: undefined,
  ...o
})

const validate = (input: unknown, o: Partial<ValidateOptions> = {}) =>
  validateDefinition(input, options(o)).pipe(Effect.provide(Layer.merge(References, Ids.layerSequential)))

const refuse = (input: unknown, o: Partial<ValidateOptions> = {}): Effect.Effect<Unprocessable, Definition> =>
  Effect.flip(validate(input, o))

type J = Record<string, unknown>

const start = { id: "start", position: { x: 0, y: 0 }, data: { node_type: "start", config: {} } }
const node = (id: string, node_type: string, config: unknown, extra: J = {}) => ({
  id,
  position: { x: 100, y: 50 },
  data: { node_type, config },
  ...extra
})
const edge = (source: string, target: string, extra: J = {}) => ({ source, target, ...extra })
/** start → n, with n of the given type and config. */
const single = (node_type: string, config: unknown) => ({
  nodes: [start, node("n", node_type, config)],
  edges: [edge("start", "n")]
})

const conditions = [{ label: "Yes", description: "agrees" }, { label: "No" }]
const decideNode = (id = "d", config: J = {}) =>
  node(id, "decide", { provider_model_id: MODEL, conditions, ...config })

// ---------------------------------------------------------------------------
// Tables
// ---------------------------------------------------------------------------

const long = (n: number, ch = "a") => ch.repeat(n)

/** Valid node configs, one row per case: [name, node_type, config]. */
const validConfigs: ReadonlyArray<readonly [string, string, J]> = [
  ["start empty", "start-like", {}],
  ["send_text plain", "send_text", { message: "Hello {{vars.name}}" }],
  ["send_text object message", "send_text", { message: { order: "{{vars.order_id}}" } }],
  ["send_text with sender fields", "send_text", {
    message: "Hi",
    phone_number_id: PHONE,
    msg_config_id: null,
    to_phone_number: "{{vars.phone}}",
    delay_seconds: 3600,
    provider_model_id: null,
    ai_field_config: {}
  }],
  ["send_text long with placeholder", "send_text", { message: `${long(5000)}{{vars.x}}` }],
  ["send_text unknown msg_config ignored when phone_number_id set", "send_text", {
    message: "Hi",
    phone_number_id: PHONE,
    msg_config_id: UNKNOWN
  }],
  ["send_text known msg_config", "send_text", { message: "Hi", msg_config_id: MSGCFG }],
  ["send_text $ai", "send_text", {
    message: { $ai: {} },
    provider_model_name: "gpt-test",
    ai_field_config: { message: { mode: "prompt", prompt: "Greet {{vars.name}}" } }
  }],
  ["send_template", "send_template", { template_id: TPL, parameters: ["Ann", "{{vars.order}}"] }],
  ["send_template named parameters", "send_template", {
    template_id: TPL,
    parameters: { name: "Ann", header_text: "Hi", button_url_0: "abc" }
  }],
  ["send_interactive button", "send_interactive", {
    interactive_type: "button",
    body_text: "Pick one",
    footer_text: "footer",
    header_type: "text",
    header_text: "Header",
    buttons: [{ id: "yes", title: "Yes" }, { id: "no", title: "No" }]
  }],
  ["send_interactive list", "send_interactive", {
    interactive_type: "list",
    body_text: "Menu",
    list_button_text: "Open",
    list_sections: [
      { title: "Drinks", rows: [{ id: "tea", title: "Tea", description: "hot" }] },
      { rows: [{ id: "cake", title: "Cake" }] }
    ]
  }],
  ["send_interactive cta_url", "send_interactive", {
    interactive_type: "cta_url",
    body_text: "Visit",
    cta_display_text: "Open site",
    cta_url: "https://example.com/x?id={{vars.id}}"
  }],
  ["send_interactive flow", "send_interactive", {
    interactive_type: "flow",
    body_text: "Sign up",
    flow_id: "123456",
    flow_cta: "Start",
    flow_action: "navigate",
    flow_action_payload: { screen: "WELCOME", data: { a: 1 } }
  }],
  ["send_interactive product", "send_interactive", {
    interactive_type: "product",
    body_text: "Look",
    action_config: { catalog_id: "c1", product_retailer_id: "p1" }
  }],
  ["send_interactive location request with media header", "send_interactive", {
    interactive_type: "location_request_message",
    body_text: { $ai: {} },
    header_type: "image",
    header_media_url: "https://example.com/a.png",
    provider_model_id: MODEL,
    ai_field_config: { body_text: { mode: "prompt", prompt: "Ask for location" } }
  }],
  ["wait_for_response default", "wait_for_response", {}],
  ["wait_for_response timeout", "wait_for_response", { has_timeout: true, timeout_seconds: 604800, save_response_to: "answer" }],
  ["wait_for_response ignored timeout", "wait_for_response", { has_timeout: false, timeout_seconds: 5 }],
  ["decide ai", "decide", {
    decision_type: "ai",
    conditions: [{ label: "Yes", description: "The user agrees" }, { label: "No", description: null }],
    llm_configuration: { instructions: "Be strict", other: 1 },
    provider_model_id: MODEL,
    llm_temperature: 0,
    llm_max_tokens: 100000
  }],
  ["decide function", "decide", { decision_type: "function", function_id: FN, function_name: "stale", conditions: [{ label: "A" }] }],
  ["decide 20 conditions", "decide", {
    provider_model_name: "gpt-test",
    conditions: Array.from({ length: 20 }, (_, i) => ({ label: `c${i}` }))
  }],
  ["function", "function", { function_id: FN, function_name: "stale", save_response_to: "_result" }],
  ["webhook", "webhook", {
    url: "https://api.example.com/hook",
    method: "PUT",
    headers: { Authorization: "Bearer ${ENV:TOKEN}" },
    body_template: { id: "{{vars.id}}", nested: [1, 2] },
    save_response_to: "resp"
  }],
  ["webhook placeholder url", "webhook", { url: "{{vars.base_url}}/orders" }],
  ["webhook $ai in body", "webhook", {
    url: "http://api.example.com/hook",
    body_template: { summary: { $ai: {} } },
    provider_model_id: MODEL,
    ai_field_config: { "body_template.summary": { mode: "prompt", prompt: "Summarise" } }
  }],
  ["agent minimal", "agent", { provider_model_id: MODEL }],
  ["agent full", "agent", {
    system_prompt: "You are helpful",
    provider_model_name: "gpt-test",
    temperature: 2,
    max_iterations: 200,
    max_tokens: 128000,
    reasoning_effort: null,
    prompt_cache_ttl: "1h",
    observer_prompt_mode: "interactive_chat",
    message_delivery_mode: "tool_only",
    enabled_default_tools: ["send_notification_to_user", "complete_task", "get_whatsapp_context"],
    default_tool_configs: { emit_event: { event_definition_ids: [EVDEF] } },
    flow_agent_function_tools: [{
      name: "lookup",
      description: "Find the customer",
      function_id: FN,
      function_name: "x",
      input_schema: { type: "object", properties: { email: { type: "string" } } }
    }],
    flow_agent_webhooks: [{
      name: "crm-update",
      description: "Update CRM",
      url: "https://crm.example.com",
      http_method: "PATCH",
      headers: { "X-Key": "${ENV:CRM}" },
      body: { a: 1 },
      body_schema: { type: "object" },
      jmespath_query: "data.id",
      ai_field_config: {}
    }],
    flow_agent_knowledge_bases: [{ name: "faq", description: "FAQ", knowledge_base_text: long(200000) }],
    flow_agent_mcp_servers: [{ name: "docs", description: "Docs", url: "https://mcp.example.com/mcp", headers: {} }]
  }],
  ["call", "call", { workflow_id: WF, workflow_name: "stale", save_error_to: "child_error" }],
  ["handoff", "handoff", { reason: "Customer asked for {{vars.topic}}", context_data: [1, { a: null }] }],
  ["handoff empty", "handoff", {}],
  ["set_variable", "set_variable", { variable_name: "count", variable_value: "{{vars.n}}", value_type: "number" }],
  ["set_variable null value json", "set_variable", { variable_name: "x", variable_value: null, value_type: "json" }],
  ["emit_event", "emit_event", {
    event_name: "order.paid",
    properties: { amount: 10, currency: "EUR", vip: true, note: null },
    occurred_at: "2024-05-01T10:00:00+02:00"
  }],
  ["emit_event placeholder time", "emit_event", { event_name: "signup.completed", occurred_at: "{{vars.at}}" }]
]

/** Invalid configs: [name, node_type, config, expected error]. The node is `n`. */
const invalidConfigs: ReadonlyArray<readonly [string, string, J, string]> = [
  // start
  ["start with config keys", "start-like", { foo: 1 }, "nodes.start.config.foo is not allowed"],
  // send_text
  ["send_text missing message", "send_text", {}, "nodes.n.config.message is required"],
  ["send_text numeric message", "send_text", { message: 5 }, "nodes.n.config.message must be a string or an object"],
  ["send_text array message", "send_text", { message: ["a"] }, "nodes.n.config.message must be a string or an object"],
  ["send_text blank message", "send_text", { message: "  " }, "nodes.n.config.message must not be empty"],
  ["send_text too long", "send_text", { message: long(4097) }, "nodes.n.config.message must be at most 4096 characters"],
  ["send_text delay range", "send_text", { message: "x", delay_seconds: 3601 }, "nodes.n.config.delay_seconds must be between 0 and 3600"],
  ["send_text delay negative", "send_text", { message: "x", delay_seconds: -1 }, "nodes.n.config.delay_seconds must be between 0 and 3600"],
  ["send_text delay fraction", "send_text", { message: "x", delay_seconds: 1.5 }, "nodes.n.config.delay_seconds must be an integer"],
  ["send_text extra key", "send_text", { message: "x", text: "y" }, "nodes.n.config.text is not allowed"],
  ["send_text read-only name of another type", "send_text", { message: "x", function_name: "f" }, "nodes.n.config.function_name is not allowed"],
  ["send_text msg_config_id not uuid", "send_text", { message: "x", msg_config_id: "abc" }, "nodes.n.config.msg_config_id must be a uuid"],
  ["send_text phone_number_id type", "send_text", { message: "x", phone_number_id: 123 }, "nodes.n.config.phone_number_id must be a string"],
  ["send_text ai_field_config type", "send_text", { message: "x", ai_field_config: "{}" }, "nodes.n.config.ai_field_config must be an object"],
  ["send_text $ai without model", "send_text", {
    message: { $ai: {} },
    ai_field_config: { message: { mode: "prompt", prompt: "p" } }
  }, "nodes.n.config.provider_model_id is required when a field holds the $ai marker (or give provider_model_name)"],
  ["send_text $ai without field config", "send_text", { message: { $ai: {} }, provider_model_id: MODEL }, "nodes.n.config.ai_field_config.message is required for the $ai marker in message"],
  ["send_text $ai bad mode", "send_text", {
    message: { $ai: {} },
    provider_model_id: MODEL,
    ai_field_config: { message: { mode: "auto", prompt: "p" } }
  }, "nodes.n.config.ai_field_config.message.mode must be prompt"],
  ["send_text $ai empty prompt", "send_text", {
    message: { $ai: {} },
    provider_model_id: MODEL,
    ai_field_config: { message: { mode: "prompt", prompt: "" } }
  }, "nodes.n.config.ai_field_config.message.prompt must not be empty"],
  ["send_text unknown phone number", "send_text", { message: "x", phone_number_id: "000" }, "nodes.n.config.phone_number_id does not name a phone number in this project"],
  ["send_text unknown msg config", "send_text", { message: "x", msg_config_id: UNKNOWN }, "nodes.n.config.msg_config_id does not name a message config in this project"],
  ["send_text unknown model name", "send_text", { message: "x", provider_model_name: "nope" }, "nodes.n.config.provider_model_name does not name a provider model in this project"],
  ["send_text unknown model id", "send_text", { message: "x", provider_model_id: UNKNOWN }, "nodes.n.config.provider_model_id does not name a provider model in this project"],
  // send_template
  ["send_template missing template", "send_template", {}, "nodes.n.config.template_id is required"],
  ["send_template template not uuid", "send_template", { template_id: "order_update" }, "nodes.n.config.template_id must be a uuid"],
  ["send_template unknown template", "send_template", { template_id: UNKNOWN }, "nodes.n.config.template_id does not name a template in this project"],
  ["send_template extra key", "send_template", { template_id: TPL, language: "en" }, "nodes.n.config.language is not allowed"],
  ["send_template $ai parameter without model", "send_template", { template_id: TPL, parameters: { "1": { $ai: {} } } }, "nodes.n.config.provider_model_id is required when a field holds the $ai marker (or give provider_model_name)"],
  // send_interactive
  ["send_interactive carousel", "send_interactive", { interactive_type: "carousel", body_text: "x" }, "nodes.n.config.interactive_type must not be carousel: send carousels through the messaging proxy"],
  ["send_interactive missing type", "send_interactive", { body_text: "x" }, "nodes.n.config.interactive_type is required"],
  ["send_interactive unknown type", "send_interactive", { interactive_type: "poll", body_text: "x" }, "nodes.n.config.interactive_type must be one of button, list, cta_url, flow, product, product_list, catalog_message, location_request_message"],
  ["send_interactive missing body", "send_interactive", { interactive_type: "location_request_message" }, "nodes.n.config.body_text is required"],
  ["send_interactive body too long", "send_interactive", { interactive_type: "location_request_message", body_text: long(1025) }, "nodes.n.config.body_text must be at most 1024 characters"],
  ["send_interactive footer too long", "send_interactive", { interactive_type: "location_request_message", body_text: "x", footer_text: long(61) }, "nodes.n.config.footer_text must be at most 60 characters"],
  ["send_interactive header_type", "send_interactive", { interactive_type: "location_request_message", body_text: "x", header_type: "audio" }, "nodes.n.config.header_type must be one of none, text, image, video, document"],
  ["send_interactive header text missing", "send_interactive", { interactive_type: "location_request_message", body_text: "x", header_type: "text" }, "nodes.n.config.header_text is required"],
  ["send_interactive header media missing", "send_interactive", { interactive_type: "location_request_message", body_text: "x", header_type: "video" }, "nodes.n.config.header_media_url is required"],
  ["send_interactive button without buttons", "send_interactive", { interactive_type: "button", body_text: "x" }, "nodes.n.config.buttons is required"],
  ["send_interactive four buttons", "send_interactive", {
    interactive_type: "button",
    body_text: "x",
    buttons: [1, 2, 3, 4].map((i) => ({ id: `b${i}`, title: `B${i}` }))
  }, "nodes.n.config.buttons must contain between 1 and 3 items"],
  ["send_interactive button title too long", "send_interactive", { interactive_type: "button", body_text: "x", buttons: [{ id: "a", title: long(21) }] }, "nodes.n.config.buttons[0].title must be at most 20 characters"],
  ["send_interactive duplicate button ids", "send_interactive", { interactive_type: "button", body_text: "x", buttons: [{ id: "a", title: "A" }, { id: "a", title: "B" }] }, "nodes.n.config.buttons[1].id must be unique within the node"],
  ["send_interactive button extra key", "send_interactive", { interactive_type: "button", body_text: "x", buttons: [{ id: "a", title: "A", type: "reply" }] }, "nodes.n.config.buttons[0].type is not allowed"],
  ["send_interactive list without button text", "send_interactive", { interactive_type: "list", body_text: "x", list_sections: [{ rows: [{ id: "r", title: "R" }] }] }, "nodes.n.config.list_button_text is required"],
  ["send_interactive list without sections", "send_interactive", { interactive_type: "list", body_text: "x", list_button_text: "Open" }, "nodes.n.config.list_sections is required"],
  ["send_interactive list too many rows", "send_interactive", {
    interactive_type: "list",
    body_text: "x",
    list_button_text: "Open",
    list_sections: [
      { title: "A", rows: [1, 2, 3, 4, 5, 6].map((i) => ({ id: `a${i}`, title: "t" })) },
      { title: "B", rows: [1, 2, 3, 4, 5].map((i) => ({ id: `b${i}`, title: "t" })) }
    ]
  }, "nodes.n.config.list_sections must contain at most 10 rows in total"],
  ["send_interactive list duplicate row ids across sections", "send_interactive", {
    interactive_type: "list",
    body_text: "x",
    list_button_text: "Open",
    list_sections: [{ rows: [{ id: "r", title: "R" }] }, { rows: [{ id: "r", title: "S" }] }]
  }, "nodes.n.config.list_sections[1].rows[0].id must be unique within the node"],
  ["send_interactive list section title too long", "send_interactive", {
    interactive_type: "list",
    body_text: "x",
    list_button_text: "Open",
    list_sections: [{ title: long(25), rows: [{ id: "r", title: "R" }] }]
  }, "nodes.n.config.list_sections[0].title must be at most 24 characters"],
  ["send_interactive cta missing url", "send_interactive", { interactive_type: "cta_url", body_text: "x", cta_display_text: "Go" }, "nodes.n.config.cta_url is required"],
  ["send_interactive cta bad scheme", "send_interactive", { interactive_type: "cta_url", body_text: "x", cta_display_text: "Go", cta_url: "ftp://example.com" }, "nodes.n.config.cta_url must be an http or https URL"],
  ["send_interactive flow without cta", "send_interactive", { interactive_type: "flow", body_text: "x", flow_id: "1" }, "nodes.n.config.flow_cta is required"],
  ["send_interactive flow_action", "send_interactive", { interactive_type: "flow", body_text: "x", flow_id: "1", flow_cta: "Go", flow_action: "open" }, "nodes.n.config.flow_action must be one of navigate, data_exchange"],
  ["send_interactive navigate payload without screen", "send_interactive", { interactive_type: "flow", body_text: "x", flow_id: "1", flow_cta: "Go", flow_action_payload: { data: {} } }, "nodes.n.config.flow_action_payload.screen is required"],
  ["send_interactive product without action_config", "send_interactive", { interactive_type: "product_list", body_text: "x" }, "nodes.n.config.action_config is required"],
  // wait_for_response
  ["wait timeout required", "wait_for_response", { has_timeout: true }, "nodes.n.config.timeout_seconds is required"],
  ["wait timeout too small", "wait_for_response", { has_timeout: true, timeout_seconds: 9 }, "nodes.n.config.timeout_seconds must be between 10 and 604800"],
  ["wait timeout too large", "wait_for_response", { has_timeout: true, timeout_seconds: 604801 }, "nodes.n.config.timeout_seconds must be between 10 and 604800"],
  ["wait timeout type when ignored", "wait_for_response", { timeout_seconds: "30" }, "nodes.n.config.timeout_seconds must be an integer"],
  ["wait has_timeout type", "wait_for_response", { has_timeout: "yes" }, "nodes.n.config.has_timeout must be a boolean"],
  ["wait variable pattern", "wait_for_response", { save_response_to: "1st" }, "nodes.n.config.save_response_to must match ^[A-Za-z_][A-Za-z0-9_]*$"],
  ["wait variable dotted", "wait_for_response", { save_response_to: "vars.name" }, "nodes.n.config.save_response_to must match ^[A-Za-z_][A-Za-z0-9_]*$"],
  ["wait variable too long", "wait_for_response", { save_response_to: long(65) }, "nodes.n.config.save_response_to must be at most 64 characters"],
  ["wait variable reserved", "wait_for_response", { save_response_to: "flow_id" }, "nodes.n.config.save_response_to must not be the reserved name flow_id"],
  ["wait extra key", "wait_for_response", { timeout: 10 }, "nodes.n.config.timeout is not allowed"],
  // decide (node n)
  ["decide missing conditions", "decide", { provider_model_id: MODEL }, "nodes.n.config.conditions is required"],
  ["decide empty conditions", "decide", { provider_model_id: MODEL, conditions: [] }, "nodes.n.config.conditions must contain between 1 and 20 items"],
  ["decide 21 conditions", "decide", {
    provider_model_id: MODEL,
    conditions: Array.from({ length: 21 }, (_, i) => ({ label: `c${i}` }))
  }, "nodes.n.config.conditions must contain between 1 and 20 items"],
  ["decide blank label", "decide", { provider_model_id: MODEL, conditions: [{ label: "" }] }, "nodes.n.config.conditions[0].label must not be empty"],
  ["decide label too long", "decide", { provider_model_id: MODEL, conditions: [{ label: long(101) }] }, "nodes.n.config.conditions[0].label must be at most 100 characters"],
  ["decide duplicate labels", "decide", { provider_model_id: MODEL, conditions: [{ label: "A" }, { label: "A" }] }, "nodes.n.config.conditions[1].label must be unique within the node"],
  ["decide condition extra key", "decide", { provider_model_id: MODEL, conditions: [{ label: "A", color: "red" }] }, "nodes.n.config.conditions[0].color is not allowed"],
  ["decide condition id not uuid", "decide", { provider_model_id: MODEL, conditions: [{ id: 1, label: "A" }] }, "nodes.n.config.conditions[0].id must be a uuid"],
  ["decide condition id unknown", "decide", { provider_model_id: MODEL, conditions: [{ id: UNKNOWN, label: "A" }] }, "nodes.n.config.conditions[0].id does not name an existing condition of this node"],
  ["decide ai without model", "decide", { conditions }, "nodes.n.config.provider_model_id is required (or give provider_model_name)"],
  ["decide function without function", "decide", { decision_type: "function", conditions }, "nodes.n.config.function_id is required"],
  ["decide unknown function", "decide", { decision_type: "function", function_id: UNKNOWN, conditions }, "nodes.n.config.function_id does not name a function in this project"],
  ["decide decision_type", "decide", { decision_type: "rules", conditions }, "nodes.n.config.decision_type must be one of ai, function"],
  ["decide temperature", "decide", { provider_model_id: MODEL, conditions, llm_temperature: 2.1 }, "nodes.n.config.llm_temperature must be between 0 and 2"],
  ["decide max tokens", "decide", { provider_model_id: MODEL, conditions, llm_max_tokens: 0 }, "nodes.n.config.llm_max_tokens must be between 1 and 100000"],
  ["decide instructions type", "decide", { provider_model_id: MODEL, conditions, llm_configuration: { instructions: 5 } }, "nodes.n.config.llm_configuration.instructions must be a string"],
  // function
  ["function missing id", "function", {}, "nodes.n.config.function_id is required"],
  ["function id not uuid", "function", { function_id: "lookup" }, "nodes.n.config.function_id must be a uuid"],
  ["function unknown", "function", { function_id: UNKNOWN }, "nodes.n.config.function_id does not name a function in this project"],
  ["function reserved variable", "function", { function_id: FN, save_response_to: "started_at" }, "nodes.n.config.save_response_to must not be the reserved name started_at"],
  ["function extra key", "function", { function_id: FN, timeout: 5 }, "nodes.n.config.timeout is not allowed"],
  // webhook
  ["webhook missing url", "webhook", {}, "nodes.n.config.url is required"],
  ["webhook bad scheme", "webhook", { url: "ftp://example.com" }, "nodes.n.config.url must be an http or https URL"],
  ["webhook not a url", "webhook", { url: "example.com/hook" }, "nodes.n.config.url must be an http or https URL"],
  ["webhook method", "webhook", { url: "https://x.example", method: "FETCH" }, "nodes.n.config.method must be one of GET, POST, PUT, PATCH, DELETE"],
  ["webhook lowercase method", "webhook", { url: "https://x.example", method: "post" }, "nodes.n.config.method must be one of GET, POST, PUT, PATCH, DELETE"],
  ["webhook headers bad json", "webhook", { url: "https://x.example", headers: "{nope" }, "nodes.n.config.headers must be an object of strings or a JSON string encoding one"],
  ["webhook headers json array", "webhook", { url: "https://x.example", headers: "[1]" }, "nodes.n.config.headers must be an object of strings or a JSON string encoding one"],
  ["webhook header value", "webhook", { url: "https://x.example", headers: { "X-Count": 3 } }, "nodes.n.config.headers.X-Count must be a string"],
  ["webhook legacy header value", "webhook", { url: "https://x.example", headers: "{\"X-Count\": 3}" }, "nodes.n.config.headers.X-Count must be a string"],
  ["webhook $ai body without field config", "webhook", { url: "https://x.example", provider_model_id: MODEL, body_template: { summary: { $ai: {} } } }, "nodes.n.config.ai_field_config.body_template.summary is required for the $ai marker in body_template.summary"],
  ["webhook variable", "webhook", { url: "https://x.example", save_response_to: "my-var" }, "nodes.n.config.save_response_to must match ^[A-Za-z_][A-Za-z0-9_]*$"],
  ["webhook extra key", "webhook", { url: "https://x.example", timeout: 10 }, "nodes.n.config.timeout is not allowed"],
  // agent
  ["agent without model", "agent", {}, "nodes.n.config.provider_model_id is required (or give provider_model_name)"],
  ["agent reasoning effort", "agent", { provider_model_id: MODEL, reasoning_effort: "max" }, "nodes.n.config.reasoning_effort must be one of none, minimal, low, medium, high, xhigh"],
  ["agent temperature", "agent", { provider_model_id: MODEL, temperature: 2.5 }, "nodes.n.config.temperature must be between 0 and 2"],
  ["agent iterations", "agent", { provider_model_id: MODEL, max_iterations: 201 }, "nodes.n.config.max_iterations must be between 1 and 200"],
  ["agent max tokens", "agent", { provider_model_id: MODEL, max_tokens: 128001 }, "nodes.n.config.max_tokens must be between 1 and 128000"],
  ["agent cache ttl", "agent", { provider_model_id: MODEL, prompt_cache_ttl: "10m" }, "nodes.n.config.prompt_cache_ttl must be one of 5m, 1h"],
  ["agent observer mode", "agent", { provider_model_id: MODEL, observer_prompt_mode: "silent" }, "nodes.n.config.observer_prompt_mode must be one of analysis_only, interactive_chat"],
  ["agent delivery mode", "agent", { provider_model_id: MODEL, message_delivery_mode: "silent" }, "nodes.n.config.message_delivery_mode must be one of auto_send_assistant_text, tool_only"],
  ["agent tool_only without notification tool", "agent", {
    provider_model_id: MODEL,
    message_delivery_mode: "tool_only",
    enabled_default_tools: ["complete_task"]
  }, "nodes.n.config.message_delivery_mode tool_only requires send_notification_to_user in enabled_default_tools"],
  ["agent unknown default tool", "agent", { provider_model_id: MODEL, enabled_default_tools: ["complete_task", "get_weather"] }, `nodes.n.config.enabled_default_tools[1] must be one of ${BuiltInAgentTools.join(", ")}`],
  ["agent default tools type", "agent", { provider_model_id: MODEL, enabled_default_tools: "complete_task" }, "nodes.n.config.enabled_default_tools must be an array"],
  ["agent tool name pattern", "agent", { provider_model_id: MODEL, flow_agent_function_tools: [{ name: "bad name", function_id: FN }] }, "nodes.n.config.flow_agent_function_tools[0].name must match ^[A-Za-z0-9_-]{1,64}$"],
  ["agent tool name too long", "agent", { provider_model_id: MODEL, flow_agent_knowledge_bases: [{ name: long(65) }] }, "nodes.n.config.flow_agent_knowledge_bases[0].name must match ^[A-Za-z0-9_-]{1,64}$"],
  ["agent duplicate tool names", "agent", {
    provider_model_id: MODEL,
    flow_agent_function_tools: [{ name: "lookup", function_id: FN }],
    flow_agent_webhooks: [{ name: "lookup", url: "https://x.example" }]
  }, "nodes.n.config.flow_agent_webhooks[0].name must be unique within the node (lookup is also used by nodes.n.config.flow_agent_function_tools[0])"],
  ["agent built-in tool name", "agent", { provider_model_id: MODEL, flow_agent_mcp_servers: [{ name: "complete_task", url: "https://x.example" }] }, "nodes.n.config.flow_agent_mcp_servers[0].name must not be the name of the built-in tool complete_task"],
  ["agent function tool unknown function", "agent", { provider_model_id: MODEL, flow_agent_function_tools: [{ name: "f", function_id: UNKNOWN }] }, "nodes.n.config.flow_agent_function_tools[0].function_id does not name a function in this project"],
  ["agent function tool without function", "agent", { provider_model_id: MODEL, flow_agent_function_tools: [{ name: "f" }] }, "nodes.n.config.flow_agent_function_tools[0].function_id is required"],
  ["agent input schema type", "agent", { provider_model_id: MODEL, flow_agent_function_tools: [{ name: "f", function_id: FN, input_schema: { type: "map" } }] }, "nodes.n.config.flow_agent_function_tools[0].input_schema.type must be one of object, array, string, number, integer, boolean, null"],
  ["agent webhook headers as string", "agent", { provider_model_id: MODEL, flow_agent_webhooks: [{ name: "w", url: "https://x.example", headers: "{}" }] }, "nodes.n.config.flow_agent_webhooks[0].headers must be an object"],
  ["agent webhook method", "agent", { provider_model_id: MODEL, flow_agent_webhooks: [{ name: "w", url: "https://x.example", http_method: "HEAD" }] }, "nodes.n.config.flow_agent_webhooks[0].http_method must be one of GET, POST, PUT, PATCH, DELETE"],
  ["agent mcp without url", "agent", { provider_model_id: MODEL, flow_agent_mcp_servers: [{ name: "docs" }] }, "nodes.n.config.flow_agent_mcp_servers[0].url is required"],
  ["agent knowledge base too long", "agent", { provider_model_id: MODEL, flow_agent_knowledge_bases: [{ name: "kb", knowledge_base_text: long(200001) }] }, "nodes.n.config.flow_agent_knowledge_bases[0].knowledge_base_text must be at most 200000 characters"],
  ["agent tool extra key", "agent", { provider_model_id: MODEL, flow_agent_knowledge_bases: [{ name: "kb", url: "x" }] }, "nodes.n.config.flow_agent_knowledge_bases[0].url is not allowed"],
  ["agent unknown event definition", "agent", { provider_model_id: MODEL, default_tool_configs: { emit_event: { event_definition_ids: [EVDEF, UNKNOWN] } } }, "nodes.n.config.default_tool_configs.emit_event.event_definition_ids[1] does not name an event definition in this project"],
  ["agent event definition not uuid", "agent", { provider_model_id: MODEL, default_tool_configs: { emit_event: { event_definition_ids: ["order.paid"] } } }, "nodes.n.config.default_tool_configs.emit_event.event_definition_ids[0] must be a uuid"],
  ["agent tool config extra key", "agent", { provider_model_id: MODEL, default_tool_configs: { send_media: {} } }, "nodes.n.config.default_tool_configs.send_media is not allowed"],
  ["agent extra key", "agent", { provider_model_id: MODEL, llm_configuration: {} }, "nodes.n.config.llm_configuration is not allowed"],
  // call
  ["call missing workflow", "call", {}, "nodes.n.config.workflow_id is required"],
  ["call itself", "call", { workflow_id: SELF }, "nodes.n.config.workflow_id must name another workflow: a workflow cannot call itself"],
  ["call unknown workflow", "call", { workflow_id: UNKNOWN }, "nodes.n.config.workflow_id does not name a workflow in this project"],
  ["call error variable", "call", { workflow_id: WF, save_error_to: "" }, "nodes.n.config.save_error_to must match ^[A-Za-z_][A-Za-z0-9_]*$"],
  ["call extra key", "call", { workflow_id: WF, inputs: {} }, "nodes.n.config.inputs is not allowed"],
  // handoff
  ["handoff reason type", "handoff", { reason: 42 }, "nodes.n.config.reason must be a string"],
  ["handoff extra key", "handoff", { team: "sales" }, "nodes.n.config.team is not allowed"],
  // set_variable
  ["set_variable missing name", "set_variable", { variable_value: 1 }, "nodes.n.config.variable_name is required"],
  ["set_variable missing value", "set_variable", { variable_name: "x" }, "nodes.n.config.variable_value is required"],
  ["set_variable reserved", "set_variable", { variable_name: "started_at", variable_value: 1 }, "nodes.n.config.variable_name must not be the reserved name started_at"],
  ["set_variable value_type", "set_variable", { variable_name: "x", variable_value: 1, value_type: "date" }, "nodes.n.config.value_type must be one of string, number, boolean, json"],
  // emit_event
  ["emit_event missing name", "emit_event", {}, "nodes.n.config.event_name is required"],
  ["emit_event uppercase", "emit_event", { event_name: "Order.Paid" }, "nodes.n.config.event_name must be lowercase, at most 128 characters"],
  ["emit_event too long", "emit_event", { event_name: long(129) }, "nodes.n.config.event_name must be lowercase, at most 128 characters"],
  ["emit_event nested property", "emit_event", { event_name: "a", properties: { address: { city: "x" } } }, "nodes.n.config.properties.address must be a string, number, boolean or null"],
  ["emit_event too many properties", "emit_event", {
    event_name: "a",
    properties: Object.fromEntries(Array.from({ length: 26 }, (_, i) => [`k${i}`, i]))
  }, "nodes.n.config.properties may contain at most 25 keys"],
  ["emit_event long key", "emit_event", { event_name: "a", properties: { [long(65)]: 1 } }, `nodes.n.config.properties.${long(65)} has a key longer than 64 characters`],
  ["emit_event occurred_at", "emit_event", { event_name: "a", occurred_at: "yesterday" }, "nodes.n.config.occurred_at must be an ISO 8601 date-time or a placeholder"],
  ["emit_event properties type", "emit_event", { event_name: "a", properties: [] }, "nodes.n.config.properties must be an object"]
]

/** "start-like" rows put the config on the start node itself. */
const withConfig = (type: string, config: J) =>
  type === "start-like"
    ? { nodes: [{ ...start, data: { node_type: "start", config } }], edges: [] }
    : single(type, config)

// ---------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------

describe("validateDefinition: node configs", () => {
  for (const [name, type, config] of validConfigs) {
    it.effect(`accepts ${name}`, () =>
      Effect.gen(function*() {
        const result = yield* validate(withConfig(type, config))
        assert.strictEqual(result.nodes.length, type === "start-like" ? 1 : 2)
      }))
  }

  for (const [name, type, config, error] of invalidConfigs) {
    it.effect(`refuses ${name}`, () =>
      Effect.gen(function*() {
        const e = yield* refuse(withConfig(type, config))
        assert.strictEqual(e.error, error)
        const first = e.details?.[0]
        assert.isDefined(first)
        assert.strictEqual(`${first!.path} ${first!.message}`, error)
      }))
  }

  it.effect("every node type has valid and invalid cases", () =>
    Effect.sync(() => {
      const types = ["send_text", "send_template", "send_interactive", "wait_for_response", "decide", "function", "webhook", "agent", "call", "handoff", "set_variable", "emit_event"]
      for (const t of types) {
        assert.isTrue(validConfigs.some(([, type]) => type === t), `valid ${t}`)
        assert.isTrue(invalidConfigs.filter(([, type]) => type === t).length >= 2, `invalid ${t}`)
      }
    }))

  it.effect("drops read-only names and stores configs as given", () =>
    Effect.gen(function*() {
      const result = yield* validate({
        nodes: [
          start,
          node("f", "function", { function_id: FN, function_name: "stale" }),
          node("c", "call", { workflow_id: WF, workflow_name: "stale" }),
          node("t", "send_template", { template_id: TPL, template_name: "stale", parameters: { "1": "x" } }),
          node("a", "agent", {
            provider_model_id: MODEL,
            provider_model_name: "stale: the id wins",
            flow_agent_function_tools: [{ name: "lookup", function_id: FN, function_name: "stale" }]
          })
        ],
        edges: []
      })
      assert.deepStrictEqual(result.nodes.map((n) => n.data.config), [
        {},
        { function_id: FN },
        { workflow_id: WF },
        { template_id: TPL, parameters: { "1": "x" } },
        {
          provider_model_id: MODEL,
          flow_agent_function_tools: [{ name: "lookup", function_id: FN }]
        }
      ])
    }))

  it.effect("parses legacy webhook headers", () =>
    Effect.gen(function*() {
      const result = yield* validate(single("webhook", { url: "https://x.example", headers: "{\"X-Key\":\"k\"}" }))
      assert.deepStrictEqual(result.nodes[1]!.data.config, { url: "https://x.example", headers: { "X-Key": "k" } })
      const blank = yield* validate(single("webhook", { url: "https://x.example", headers: " " }))
      assert.deepStrictEqual(blank.nodes[1]!.data.config["headers"], {})
    }))
})

describe("validateDefinition: definition and node shape", () => {
  const cases: ReadonlyArray<readonly [string, unknown, string]> = [
    ["a string", "nodes", "definition must be an object"],
    ["an array", [], "definition must be an object"],
    ["extra key", { nodes: [start], edges: [], viewport: {} }, "viewport is not allowed"],
    ["nodes not an array", { nodes: {}, edges: [] }, "nodes must be an array"],
    ["edges null", { nodes: [start], edges: null }, "edges must be an array"],
    ["no nodes", { nodes: [], edges: [] }, "nodes must contain exactly one start node (found 0)"],
    ["omitted nodes without previous", { edges: [] }, "nodes must contain exactly one start node (found 0)"],
    ["two starts", { nodes: [start, { ...start, id: "start2" }], edges: [] }, "nodes must contain exactly one start node (found 2)"],
    ["too many nodes", {
      nodes: [start, ...Array.from({ length: 500 }, (_, i) => node(`h${i}`, "handoff", {}))],
      edges: []
    }, "nodes must contain at most 500 nodes"],
    ["too many edges", {
      nodes: [start, node("h", "handoff", {})],
      edges: Array.from({ length: 1001 }, () => edge("start", "h"))
    }, "edges must contain at most 1000 edges"],
    ["node not an object", { nodes: [start, "x"], edges: [] }, "nodes[1] must be an object"],
    ["missing id", { nodes: [start, { position: { x: 0, y: 0 }, data: { node_type: "handoff", config: {} } }], edges: [] }, "nodes[1].id is required"],
    ["numeric id", { nodes: [start, node(1 as unknown as string, "handoff", {})], edges: [] }, "nodes[1].id must be a string"],
    ["id pattern", { nodes: [start, node("1st", "handoff", {})], edges: [] }, "nodes[1].id must match ^[A-Za-z][A-Za-z0-9_-]*$"],
    ["id with space", { nodes: [start, node("ask name", "handoff", {})], edges: [] }, "nodes[1].id must match ^[A-Za-z][A-Za-z0-9_-]*$"],
    ["id too long", { nodes: [start, node(`a${long(100)}`, "handoff", {})], edges: [] }, "nodes[1].id must be at most 100 characters"],
    ["duplicate id", { nodes: [start, node("h", "handoff", {}), node("h", "handoff", {})], edges: [] }, "nodes[2].id must be unique (h is already used by another node)"],
    ["node extra key", { nodes: [start, node("h", "handoff", {}, { selected: true })], edges: [] }, "nodes.h.selected is not allowed"],
    ["node type not a string", { nodes: [start, node("h", "handoff", {}, { type: 1 })], edges: [] }, "nodes.h.type must be a string"],
    ["missing position", { nodes: [start, { id: "h", data: { node_type: "handoff", config: {} } }], edges: [] }, "nodes.h.position is required"],
    ["position x not a number", { nodes: [start, node("h", "handoff", {}, { position: { x: "1", y: 0 } })], edges: [] }, "nodes.h.position.x must be a number"],
    ["position extra key", { nodes: [start, node("h", "handoff", {}, { position: { x: 1, y: 0, z: 0 } })], edges: [] }, "nodes.h.position.z is not allowed"],
    ["missing data", { nodes: [start, { id: "h", position: { x: 0, y: 0 } }], edges: [] }, "nodes.h.data is required"],
    ["data extra key", { nodes: [start, node("h", "handoff", {}, { data: { node_type: "handoff", config: {}, label: "x" } })], edges: [] }, "nodes.h.data.label is not allowed"],
    ["missing node_type", { nodes: [start, node("h", "handoff", {}, { data: { config: {} } })], edges: [] }, "nodes.h.data.node_type is required"],
    ["unknown node_type", { nodes: [start, node("h", "delay", {})], edges: [] }, "nodes.h.data.node_type must be one of start, send_text, send_template, send_interactive, wait_for_response, decide, function, webhook, agent, call, handoff, set_variable, emit_event, split"],
    ["display_name not a string", { nodes: [start, node("h", "handoff", {}, { data: { node_type: "handoff", config: {}, display_name: 5 } })], edges: [] }, "nodes.h.data.display_name must be a string"],
    ["missing config", { nodes: [start, node("h", "handoff", undefined)], edges: [] }, "nodes.h.config is required"],
    ["config not an object", { nodes: [start, node("h", "handoff", [])], edges: [] }, "nodes.h.config must be an object"]
  ]
  for (const [name, input, error] of cases) {
    it.effect(`refuses ${name}`, () =>
      Effect.gen(function*() {
        const e = yield* refuse(input)
        assert.strictEqual(e.error, error)
      }))
  }

  it.effect("collects every problem in details, first one in error", () =>
    Effect.gen(function*() {
      const e = yield* refuse({
        nodes: [
          start,
          node("ask_name", "wait_for_response", { has_timeout: true, timeout_seconds: 5 }),
          node("2bad", "handoff", { reason: 1 }),
          node("f", "function", { function_id: UNKNOWN })
        ],
        edges: [edge("start", "ask_name", { label: "go" }), edge("ask_name", "start")]
      })
      assert.strictEqual(e.error, "nodes.ask_name.config.timeout_seconds must be between 10 and 604800")
      assert.deepStrictEqual(e.details, [
        { path: "nodes.ask_name.config.timeout_seconds", message: "must be between 10 and 604800" },
        { path: "nodes[2].id", message: "must match ^[A-Za-z][A-Za-z0-9_-]*$" },
        { path: "nodes[2].config.reason", message: "must be a string" },
        { path: "edges[0].label", message: "must be next" },
        { path: "edges[1].target", message: "must not be the start node" },
        { path: "nodes.f.config.function_id", message: "does not name a function in this project" }
      ])
    }))

  it.effect("a node type is never defaulted", () =>
    Effect.gen(function*() {
      const e = yield* refuse({ nodes: [start, node("h", "", {})], edges: [] })
      assert.strictEqual(e.details?.[0]?.path, "nodes.h.data.node_type")
    }))

  it.effect("looks references up in the caller's project only, once per record", () =>
    Effect.gen(function*() {
      lookups.length = 0
      const input = {
        nodes: [
          start,
          node("f1", "function", { function_id: FN }),
          node("f2", "function", { function_id: FN })
        ],
        edges: []
      }
      yield* validate(input)
      assert.deepStrictEqual(lookups, [`function:${FN}`])
      const e = yield* refuse(input, { projectId: "other" })
      assert.strictEqual(e.error, "nodes.f1.config.function_id does not name a function in this project")
      assert.strictEqual(e.details?.length, 2)
    }))

  it.effect("on create any workflow may be called", () =>
    Effect.gen(function*() {
      const result = yield* validate(single("call", { workflow_id: SELF }), { workflowId: undefined })
      assert.strictEqual(result.nodes[1]!.data.config["workflow_id"], SELF)
    }))
})

describe("validateDefinition: edges", () => {
  const decideGraph = (edges: ReadonlyArray<unknown>) => ({
    nodes: [start, decideNode(), node("y", "handoff", {}), node("n", "handoff", {})],
    edges: [edge("start", "d"), ...edges]
  })
  const cases: ReadonlyArray<readonly [string, unknown, string]> = [
    ["edge not an object", { nodes: [start], edges: [1] }, "edges[0] must be an object"],
    ["edge extra key", { nodes: [start, node("h", "handoff", {})], edges: [edge("start", "h", { animated: true })] }, "edges[0].animated is not allowed"],
    ["missing source", { nodes: [start, node("h", "handoff", {})], edges: [{ target: "h" }] }, "edges[0].source is required"],
    ["missing target", { nodes: [start], edges: [{ source: "start" }] }, "edges[0].target is required"],
    ["unknown target", { nodes: [start], edges: [edge("start", "ghost")] }, "edges[0].target does not name a node (ghost)"],
    ["unknown source", { nodes: [start, node("h", "handoff", {})], edges: [edge("ghost", "h")] }, "edges[0].source does not name a node (ghost)"],
    ["edge into start", { nodes: [start, node("h", "handoff", {})], edges: [edge("h", "start")] }, "edges[0].target must not be the start node"],
    ["non-decide label", { nodes: [start, node("h", "handoff", {})], edges: [edge("start", "h", { label: "yes" })] }, "edges[0].label must be next"],
    ["two outgoing edges", {
      nodes: [start, node("a", "handoff", {}), node("b", "handoff", {})],
      edges: [edge("start", "a"), edge("start", "b")]
    }, "edges[1].source names node start, which already has an outgoing edge"],
    ["handoff with two next edges", {
      nodes: [start, node("h", "handoff", {}), node("a", "set_variable", { variable_name: "a", variable_value: 1 }), node("b", "emit_event", { event_name: "b" })],
      edges: [edge("start", "h"), edge("h", "a"), edge("h", "b")]
    }, "edges[2].source names node h, which already has an outgoing edge"],
    ["condition id on a non-decide edge", { nodes: [start, node("h", "handoff", {})], edges: [edge("start", "h", { flow_condition_id: UNKNOWN })] }, "edges[0].flow_condition_id must be null: only edges leaving a decide node carry a condition"],
    ["condition id not a uuid", { nodes: [start, node("h", "handoff", {})], edges: [edge("start", "h", { flow_condition_id: "yes" })] }, "edges[0].flow_condition_id must be a uuid"],
    ["id not a string", { nodes: [start, node("h", "handoff", {})], edges: [edge("start", "h", { id: 3 })] }, "edges[0].id must be a string"],
    ["label not a string", { nodes: [start, node("h", "handoff", {})], edges: [edge("start", "h", { label: 3 })] }, "edges[0].label must be a string"],
    ["decide label unknown", decideGraph([edge("d", "y", { label: "Maybe" })]), "edges[1].label must equal a condition label of decide node d (Yes, No)"],
    ["decide label omitted", decideGraph([edge("d", "y")]), "edges[1].label must equal a condition label of decide node d (Yes, No)"],
    ["decide two edges per condition", decideGraph([edge("d", "y", { label: "Yes" }), edge("d", "n", { label: "Yes" })]), "edges[2].label names condition Yes of decide node d, which already has an edge"],
    ["decide unknown condition id", decideGraph([edge("d", "y", { flow_condition_id: UNKNOWN })]), "edges[1].flow_condition_id does not name a condition of decide node d"]
  ]
  for (const [name, input, error] of cases) {
    it.effect(`refuses ${name}`, () =>
      Effect.gen(function*() {
        const e = yield* refuse(input)
        assert.strictEqual(e.error, error)
      }))
  }

  it.effect("cycles, unreachable nodes and conditions without edges are allowed", () =>
    Effect.gen(function*() {
      const result = yield* validate({
        nodes: [
          start,
          node("ask", "send_text", { message: "Name?" }),
          node("wait", "wait_for_response", { save_response_to: "name" }),
          decideNode(),
          node("orphan", "handoff", {})
        ],
        edges: [edge("start", "ask"), edge("ask", "wait"), edge("wait", "d"), edge("d", "ask", { label: "No" })]
      })
      assert.strictEqual(result.edges.length, 4)
    }))
})

describe("validateDefinition: normalisation", () => {
  it.effect("stores node and edge types, labels, display names and new ids", () =>
    Effect.gen(function*() {
      const result = yield* validate({
        nodes: [
          { ...start, type: "custom" },
          node("ask", "send_text", { message: "Hi" }, { data: { node_type: "send_text", config: { message: "Hi" }, display_name: "Greet" } }),
          node("d", "decide", { provider_model_id: MODEL, conditions }),
          node("y", "handoff", {}),
          node("n", "handoff", {}, { data: { node_type: "handoff", config: {}, display_name: " " } })
        ],
        edges: [
          edge("start", "ask", { type: "smoothstep", label: null }),
          edge("ask", "d", { label: "next" }),
          edge("d", "n", { label: "No" }),
          edge("d", "y", { label: "Yes", id: "not-a-previous-edge" })
        ]
      })
      assert.deepStrictEqual(result, {
        nodes: [
          { id: "start", type: "flow-node", position: { x: 0, y: 0 }, data: { node_type: "start", config: {}, display_name: "Start" } },
          { id: "ask", type: "flow-node", position: { x: 100, y: 50 }, data: { node_type: "send_text", config: { message: "Hi" }, display_name: "Greet" } },
          {
            id: "d",
            type: "flow-node",
            position: { x: 100, y: 50 },
            data: {
              node_type: "decide",
              config: {
                provider_model_id: MODEL,
                conditions: [{ id: uuidN(1), label: "Yes", description: "agrees" }, { id: uuidN(2), label: "No" }]
              },
              display_name: "Decide"
            }
          },
          { id: "y", type: "flow-node", position: { x: 100, y: 50 }, data: { node_type: "handoff", config: {}, display_name: "Handoff" } },
          { id: "n", type: "flow-node", position: { x: 100, y: 50 }, data: { node_type: "handoff", config: {}, display_name: "Handoff" } }
        ],
        edges: [
          { id: uuidN(3), source: "start", target: "ask", type: "default", label: "next", flow_condition_id: null },
          { id: uuidN(4), source: "ask", target: "d", type: "default", label: "next", flow_condition_id: null },
          { id: uuidN(5), source: "d", target: "n", type: "default", label: "No", flow_condition_id: uuidN(2) },
          { id: uuidN(6), source: "d", target: "y", type: "default", label: "Yes", flow_condition_id: uuidN(1) }
        ]
      })
    }))

  it.effect("derives the display name of every node type", () =>
    Effect.gen(function*() {
      const configs: Record<string, J> = {
        start: {},
        send_text: { message: "x" },
        send_template: { template_id: TPL },
        send_interactive: { interactive_type: "location_request_message", body_text: "x" },
        wait_for_response: {},
        decide: { provider_model_id: MODEL, conditions },
        function: { function_id: FN },
        webhook: { url: "https://x.example" },
        agent: { provider_model_id: MODEL },
        call: { workflow_id: WF },
        handoff: {},
        set_variable: { variable_name: "x", variable_value: 1 },
        emit_event: { event_name: "x" }
      }
      const result = yield* validate({
        nodes: Object.entries(configs).map(([type, config]) => node(type === "start" ? "start" : `n_${type}`, type, config)),
        edges: []
      })
      assert.deepStrictEqual(result.nodes.map((n) => n.data.display_name), [
        "Start",
        "Send text",
        "Send template",
        "Send interactive",
        "Wait for response",
        "Decide",
        "Function",
        "Webhook",
        "Agent",
        "Call workflow",
        "Handoff",
        "Set variable",
        "Emit event"
      ])
    }))

  const previous: Definition = {
    nodes: [
      { id: "start", type: "flow-node", position: { x: 0, y: 0 }, data: { node_type: "start", config: {}, display_name: "Start" } },
      {
        id: "d",
        type: "flow-node",
        position: { x: 1, y: 1 },
        data: {
          node_type: "decide",
          config: {
            provider_model_id: MODEL,
            conditions: [{ id: uuidN(101), label: "Yes" }, { id: uuidN(102), label: "No" }]
          },
          display_name: "Decide"
        }
      },
      { id: "h", type: "flow-node", position: { x: 2, y: 2 }, data: { node_type: "handoff", config: {}, display_name: "Handoff" } }
    ],
    edges: [
      { id: uuidN(201), source: "start", target: "d", type: "default", label: "next", flow_condition_id: null },
      { id: uuidN(202), source: "d", target: "h", type: "default", label: "Yes", flow_condition_id: uuidN(101) }
    ]
  }

  it.effect("keeps previous edge ids once, and condition ids of the same node", () =>
    Effect.gen(function*() {
      const result = yield* validate({
        nodes: [
          start,
          node("d", "decide", {
            provider_model_id: MODEL,
            conditions: [{ id: uuidN(101), label: "Yes" }, { label: "Maybe" }]
          }),
          node("h", "handoff", {}),
          node("h2", "handoff", {})
        ],
        edges: [
          edge("start", "d", { id: uuidN(201) }),
          edge("d", "h", { id: uuidN(202), label: "Yes" }),
          edge("d", "h2", { id: uuidN(202), label: "Maybe" })
        ]
      }, { previous })
      assert.deepStrictEqual(result.nodes[1]!.data.config["conditions"], [
        { id: uuidN(101), label: "Yes" },
        { id: uuidN(1), label: "Maybe" }
      ])
      assert.deepStrictEqual(result.edges.map((e) => [e.id, e.label, e.flow_condition_id]), [
        [uuidN(201), "next", null],
        [uuidN(202), "Yes", uuidN(101)],
        [uuidN(2), "Maybe", uuidN(1)]
      ])
    }))

  it.effect("a condition id of another node is refused", () =>
    Effect.gen(function*() {
      const e = yield* refuse({
        nodes: [start, node("d2", "decide", { provider_model_id: MODEL, conditions: [{ id: uuidN(101), label: "Yes" }] })],
        edges: []
      }, { previous })
      assert.strictEqual(e.error, "nodes.d2.config.conditions[0].id does not name an existing condition of this node")
    }))

  it.effect("duplicate condition ids are refused", () =>
    Effect.gen(function*() {
      const e = yield* refuse({
        nodes: [start, node("d", "decide", { provider_model_id: MODEL, conditions: [{ id: uuidN(101), label: "Yes" }, { id: uuidN(101), label: "No" }] })],
        edges: []
      }, { previous })
      assert.strictEqual(e.error, "nodes.d.config.conditions[1].id must be unique within the node")
    }))

  it.effect("a given flow_condition_id decides over the label (renamed condition)", () =>
    Effect.gen(function*() {
      const result = yield* validate({
        nodes: [
          start,
          node("d", "decide", { provider_model_id: MODEL, conditions: [{ id: uuidN(101), label: "Sure" }, { id: uuidN(102), label: "No" }] }),
          node("h", "handoff", {})
        ]
      }, { previous })
      assert.deepStrictEqual(result.edges, [
        { id: uuidN(201), source: "start", target: "d", type: "default", label: "next", flow_condition_id: null },
        { id: uuidN(202), source: "d", target: "h", type: "default", label: "Sure", flow_condition_id: uuidN(101) }
      ])
    }))

  it.effect("omitted nodes or edges are taken from the previous definition", () =>
    Effect.gen(function*() {
      const onlyEdges = yield* validate({ edges: [edge("start", "d", { id: uuidN(201) })] }, { previous })
      assert.deepStrictEqual(onlyEdges.nodes, previous.nodes)
      assert.deepStrictEqual(onlyEdges.edges.map((e) => e.id), [uuidN(201)])
      const nothing = yield* validate({}, { previous })
      assert.deepStrictEqual(nothing, previous)
      const e = yield* refuse({ nodes: [start, previous.nodes[1]] }, { previous })
      assert.strictEqual(e.error, "edges[1].target does not name a node (h)")
    }))

  it.effect("the default definition is a lone start and validates to itself", () =>
    Effect.gen(function*() {
      const def = defaultDefinition()
      assert.deepStrictEqual(def, {
        nodes: [{ id: "start", type: "flow-node", position: { x: 0, y: 0 }, data: { node_type: "start", config: {}, display_name: "Start" } }],
        edges: []
      })
      assert.deepStrictEqual(yield* validate(def), def)
    }))
})

describe("withReadOnlyNames", () => {
  it.effect("fills names on read and the read form validates back to the stored form", () =>
    Effect.gen(function*() {
      const stored = yield* validate({
        nodes: [
          start,
          node("f", "function", { function_id: FN }),
          node("d", "decide", { decision_type: "function", function_id: FN2, conditions: [{ label: "A" }] }),
          node("c", "call", { workflow_id: WF }),
          node("t", "send_template", { template_id: TPL, provider_model_id: MODEL }),
          node("a", "agent", { provider_model_name: "gpt-test", flow_agent_function_tools: [{ name: "x", function_id: FN }] })
        ],
        edges: [edge("start", "f"), edge("f", "d"), edge("d", "c", { label: "A" }), edge("c", "t"), edge("t", "a")]
      })
      const read = yield* withReadOnlyNames(PROJECT, stored).pipe(Effect.provide(References))
      assert.deepStrictEqual(read.nodes.map((n) => n.data.config), [
        {},
        { function_id: FN, function_name: "lookup_customer" },
        { decision_type: "function", function_id: FN2, conditions: [{ id: uuidN(1), label: "A" }], function_name: "score_lead" },
        { workflow_id: WF, workflow_name: "Onboarding" },
        { template_id: TPL, provider_model_id: MODEL, template_name: "order_update", provider_model_name: "gpt-test" },
        { provider_model_name: "gpt-test", flow_agent_function_tools: [{ name: "x", function_id: FN, function_name: "lookup_customer" }] }
      ])
      assert.deepStrictEqual(read.edges, stored.edges)
      const again = yield* validate(read, { previous: stored })
      assert.deepStrictEqual(again, stored)
    }))

  it.effect("unresolvable references read as null names", () =>
    Effect.gen(function*() {
      const stored: Definition = {
        nodes: [{ id: "f", type: "flow-node", position: { x: 0, y: 0 }, data: { node_type: "function", config: { function_id: UNKNOWN }, display_name: "Function" } }],
        edges: []
      }
      const read = yield* withReadOnlyNames(PROJECT, stored).pipe(Effect.provide(References))
      assert.deepStrictEqual(read.nodes[0]!.data.config, { function_id: UNKNOWN, function_name: null })
    }))
})

describe("agent tools", () => {
  it("effective tools add the forced ones", () => {
    assert.deepStrictEqual(effectiveAgentTools([], 2), ["complete_task"])
    assert.deepStrictEqual(effectiveAgentTools([], null), ["complete_task", "handoff_to_human"])
    assert.isFalse(effectiveAgentTools(undefined, 2).includes("emit_event"))
    assert.isTrue(effectiveAgentTools(undefined, 2).includes("contact_conversations"))
    assert.isFalse(effectiveAgentTools(undefined, 1).includes("contact_conversations"))
  })
})
