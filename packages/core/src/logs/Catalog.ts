/** What `GET /log_search/catalog` lists (decisions 4.7): the sources with their aliases, the filter keys, the detail fields. */
import { LOG_TEXT_FIELDS, type LogFilterKey, type LogSource } from "./LogSearch.ts"

export interface SourceInfo {
  readonly value: LogSource
  readonly label: string
  readonly color: string
  /** Other names `source` accepts for it. */
  readonly aliases: ReadonlyArray<string>
}

export const SOURCES: ReadonlyArray<SourceInfo> = [
  { value: "external_api_log", label: "API requests", color: "#2563eb", aliases: ["api", "api_log", "api_logs"] },
  { value: "msg_webhook_event", label: "Upstream webhook events", color: "#7c3aed", aliases: ["upstream", "webhook_event", "upstream_event"] },
  { value: "flow_event", label: "Workflow events", color: "#059669", aliases: ["workflow", "workflow_event", "execution", "step_event"] },
  { value: "webhook_delivery", label: "Webhook deliveries", color: "#d97706", aliases: ["delivery", "deliveries", "webhook_deliveries"] }
]

export interface FilterSuggestion {
  readonly key: LogFilterKey
  readonly label: string
  readonly description: string
  /** The key to send in `filters`. */
  readonly param_key: LogFilterKey
  readonly sources: ReadonlyArray<LogSource>
}

const filter = (key: LogFilterKey, label: string, description: string, sources: ReadonlyArray<LogSource>): FilterSuggestion => ({
  key,
  label,
  description,
  param_key: key,
  sources
})

export const FILTER_SUGGESTIONS: ReadonlyArray<FilterSuggestion> = [
  filter("flow_execution_id", "Execution", "Events of one workflow execution (its id)", ["flow_event"]),
  filter("flow_id", "Workflow", "Events of one workflow's executions (its id)", ["flow_event"]),
  filter("step_identifier", "Step", "Events of one node (its id in the graph)", ["flow_event"]),
  filter("event_type", "Event type", "A step event type (`step_failed`) or an upstream change's event (`message`, `delivered`)", ["flow_event", "msg_webhook_event"]),
  filter("endpoint_contains", "Endpoint contains", "Requests whose path holds this text, any case", ["external_api_log"]),
  filter("http_method", "HTTP method", "Requests of one method (`GET`, `POST`, ...)", ["external_api_log"]),
  filter("response_status", "Response status", "An HTTP status (integer): a request's answer or a delivery attempt's", ["external_api_log", "webhook_delivery"]),
  filter("api_key_id", "API key", "Requests made with one API key (its id)", ["external_api_log"]),
  filter("phone_number_id", "Phone number", "Events of one connected number (`phone_number_id`)", ["msg_webhook_event", "flow_event", "webhook_delivery"]),
  filter("webhook_id", "Webhook", "Delivery attempts of one webhook (its id)", ["webhook_delivery"]),
  filter("status", "Status", "A delivery's status (`pending`, `delivered`, `failed`), an execution event's or an upstream status", ["webhook_delivery", "flow_event", "msg_webhook_event"]),
  filter("resource_id", "Resource", "Events about one record: an execution, a delivery, a message", ["external_api_log", "msg_webhook_event", "flow_event", "webhook_delivery"])
]

/** Fields a detail view shows, in order: every text field of an entry, with the numbers and stored JSON beside them. */
export const DETAIL_FIELDS: ReadonlyArray<string> = [
  "occurred_at",
  "ingested_at",
  "source",
  "level",
  ...LOG_TEXT_FIELDS.flatMap((field) =>
    field === "status" ? [field, "message"] : field === "endpoint" ? [field, "response_status", "response_time_ms"] : [field]
  ),
  "attributes",
  "payload"
]
