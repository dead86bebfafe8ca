/**
 * A request example for every operation that takes a JSON body, written to work as it stands against a fresh
 * `npm start` (issue 29 §3; `openapi.examples.http.test.ts` sends each one): the sandbox number the simulator
 * connects at start (`100000000000001`, business account `200000000000001`, token `parley-simulator-token`), values
 * the rules accept, and `EXAMPLE_ID` where the reader names a resource of their own (a template, a user). What a
 * schema says by itself (a value of each field) is not an example anyone can send: `OpenApiExamples.ts` only fills
 * the answers, and the bodies of operations this table does not name.
 */

/** The sandbox number of `npm start` in simulator mode (`PARLEY_SIM_*` defaults, `messaging/simulator/Bootstrap.ts`). */
export const SANDBOX_PHONE_NUMBER_ID = "100000000000001"
export const SANDBOX_BUSINESS_ACCOUNT_ID = "200000000000001"
const SANDBOX_ACCESS_TOKEN = "parley-simulator-token"

/** Where an example names a resource the reader made before (its id comes from that answer). */
export const EXAMPLE_ID = "0193f1c2-7b4e-7a10-9c3d-5e6f7a8b9c0d"

const CONTACT = "+15551234567"

const FUNCTION_CODE = "export default {\n  async fetch(request, env) {\n    return Response.json({ hello: \"world\" })\n  }\n}"

const greeting = {
  nodes: [
    { id: "start", position: { x: 0, y: 0 }, data: { node_type: "start", config: {} } },
    { id: "hello", position: { x: 240, y: 0 }, data: { node_type: "send_text", config: { message: "Hi {{vars.name}}, how can we help?" } } }
  ],
  edges: [{ source: "start", target: "hello" }]
}

const connect = { msg_config: { phone_number_id: SANDBOX_PHONE_NUMBER_ID, business_account_id: SANDBOX_BUSINESS_ACCOUNT_ID, access_token: SANDBOX_ACCESS_TOKEN } }

const template = {
  name: "order_shipped",
  category: "UTILITY",
  language: "en_US",
  components: [{ type: "BODY", text: "Your order has shipped and arrives tomorrow." }]
}

const send = { messaging_product: "whatsapp", recipient_type: "individual", to: CONTACT.slice(1), type: "text", text: { body: "Hello! How can we help?" } }

const DAY_MS = 24 * 60 * 60 * 1000

/**
 * The examples by operation id (an unversioned proxy operation takes its versioned one's). `now` dates the one
 * example whose rule is relative to the present (a broadcast's schedule: 1 minute to 30 days ahead).
 */
export const requestExamples = (now: number): Readonly<Record<string, unknown>> => ({
  "workflows.create": { workflow: { name: "Support bot", description: "Greets whoever writes in", definition: greeting } },
  "workflows.update": { workflow: { description: "Greets whoever writes in, by name", status: "active" } },
  "triggers.create": { trigger: { trigger_type: "inbound_message", phone_number_id: SANDBOX_PHONE_NUMBER_ID } },
  "triggers.replace": {
    triggers: [
      { trigger_type: "inbound_message", phone_number_id: SANDBOX_PHONE_NUMBER_ID },
      { trigger_type: "api_call" }
    ]
  },
  "triggers.update": { trigger: { active: false } },
  "flows.update": { flow: { description: "Greets whoever writes in, by name", definition: greeting } },
  "workflowLifecycle.saveRevision": { revision: { definition: greeting } },
  "workflowLifecycle.restoreRevision": {},
  "workflowLifecycle.migrateRuns": { on_missing_node: "stay", dry_run: true },
  "workflowLifecycle.startRollout": { rollout: { revision_id: EXAMPLE_ID, percent: 10 } },
  "workflowLifecycle.promoteRollout": {},
  "executions.start": {
    workflow_execution: { phone_number: CONTACT, phone_number_id: SANDBOX_PHONE_NUMBER_ID, variables: { name: "Ada", order_id: "A-1042" } }
  },
  "executions.update": { workflow_execution: { status: "ended" } },
  "executions.resume": { message: { kind: "text", data: "Yes, please" }, variables: { confirmed: true } },
  "events.emit": { name: "order.shipped", properties: { order_id: "A-1042", total: 42.5 } },
  "eventDefinitions.save": {
    name: "order.shipped",
    description: "An order left the warehouse",
    property_schema: { order_id: { type: "string" }, total: { type: "number" } }
  },
  "eventDefinitions.update": {
    description: "An order left the warehouse (with its carrier)",
    property_schema: { order_id: { type: "string" }, total: { type: "number" }, carrier: { type: "string" } }
  },
  "phoneNumbers.connect": connect,
  "phoneNumbers.connectToCustomer": connect,
  "phoneNumbers.requestDisplayName": { display_name_request: { new_display_name: "Acme Support" } },
  "customers.create": { customer: { name: "Acme Inc", external_customer_id: "crm-1042" } },
  "customers.update": { customer: { name: "Acme Incorporated" } },
  "msgConfigs.update": { msg_config: { name: "Support line", inbound_processing_enabled: true } },
  "sandbox.inbound": {
    phone_number_id: SANDBOX_PHONE_NUMBER_ID,
    from: CONTACT.slice(1),
    profile_name: "Ada",
    message: { type: "text", text: { body: "Hi! Where is my order?" } }
  },
  "msgConversations.update": { msg_conversation: { status: "ended" } },
  "proxy.send": send,
  "proxy.createTemplate": template,
  "proxy.blockUsers": { messaging_product: "whatsapp", block_users: [{ user: CONTACT.slice(1) }] },
  "proxy.unblockUsers": { messaging_product: "whatsapp", block_users: [{ user: CONTACT.slice(1) }] },
  "proxy.setUsername": { username: "acmesupport" },
  "proxy.updateFlowMetadata": { name: "Appointment booking", categories: ["APPOINTMENT_BOOKING"], endpoint_uri: "https://example.com/forms/booking" },
  "functions.create": { function: { name: "Hello", code: FUNCTION_CODE } },
  "functions.update": { function: { description: "Says hello", public_endpoint: true } },
  "functions.saveSecret": { secret: { name: "API_TOKEN", value: "a-secret-value" } },
  "functionInvoke.invoke": { name: "Ada" },
  "webhooks.createForNumber": {
    msg_webhook: {
      url: "https://example.com/hooks/parley",
      secret_key: "a-long-random-signing-secret",
      events: ["msg.message.received", "msg.message.delivered"]
    }
  },
  "webhooks.updateForNumber": { msg_webhook: { events: ["msg.message.received"], headers: { Authorization: "Bearer your-endpoint-token" } } },
  "webhooks.create": {
    msg_webhook: {
      url: "https://example.com/hooks/parley",
      secret_key: "a-long-random-signing-secret",
      events: ["workflow.execution.failed"]
    }
  },
  "webhooks.update": { msg_webhook: { active: false } },
  "webhooks.test": { event_type: "workflow.execution.failed" },
  "setupLinks.create": {
    setup_link: {
      success_redirect_url: "https://example.com/onboarding/done",
      failure_redirect_url: "https://example.com/onboarding/failed",
      language: "en"
    }
  },
  "setupLinks.update": { setup_link: { status: "revoked" } },
  "inboxEmbeds.create": { inbox_embed: { scope_type: "project", name: "Support team inbox" } },
  "inboxEmbeds.update": { inbox_embed: { name: "Support inbox", allowed_origins: ["https://app.example.com"], language: "en" } },
  "inbox.reply": { text: "Hello! How can we help?" },
  "workflowEmbeds.create": { workflow_embed: { scope_type: "workflow", scope_id: EXAMPLE_ID, name: "Support bot board", access: "view" } },
  "workflowEmbeds.update": { workflow_embed: { name: "Support bot board", allowed_origins: ["https://app.example.com"], language: "en" } },
  "viewer.validate": { definition: greeting },
  "viewer.save": { definition: greeting, lock_version: 0 },
  "viewer.testRun": { phone_number: CONTACT },
  "logSearch.searchPost": { query: "timeout", source: "all", period: "7d", problems_only: true, limit: 20 },
  "msgMedia.ingest": { media_ingest: { phone_number_id: SANDBOX_PHONE_NUMBER_ID, source: "https://example.com/brochure.pdf" } },
  "msgBroadcasts.create": {
    msg_broadcast: { name: "Spring sale", phone_number_id: SANDBOX_PHONE_NUMBER_ID, msg_template_id: EXAMPLE_ID }
  },
  "msgBroadcasts.update": { name: "Spring sale (final)" },
  "msgBroadcasts.schedule": { scheduled_at: new Date(Math.floor(now / DAY_MS) * DAY_MS + 2 * DAY_MS + 9 * 60 * 60 * 1000).toISOString() },
  "msgBroadcasts.addRecipients": {
    recipients: [{ phone_number: CONTACT }, { phone_number: "+15557654321" }]
  },
  // Another contact than the one the sends write to: an opt-out would refuse them.
  "guardrails.addOptOut": { opt_out: { phone_number: "+15550100999" } },
  "guardrails.putSettings": {
    guardrails: {
      opt_out_keywords: ["STOP", "UNSUBSCRIBE", "PARAR"],
      opt_in_keywords: null,
      opt_out_confirmation: "You will get no more offers from us. Reply START to get them again.",
      opt_in_confirmation: null,
      quiet_hours: null,
      frequency_caps: { marketing_per_day: 1, marketing_per_week: 3, scope: "project" }
    }
  },
  "guardrails.setTimeZone": { time_zone: "America/Chicago" }
})
