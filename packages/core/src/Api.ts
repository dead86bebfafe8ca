/**
 * The whole HTTP contract of Parley. Every capability adds its groups here;
 * the host serves it, `/openapi.json` documents it and `@parley/client` calls it.
 */
import { HttpApi, type HttpApiGroup, OpenApi } from "effect/http-api"
import { FlowsApi, TriggersApi, WorkflowsApi } from "./workflows/WorkflowsApi.ts"
import { RequestErrors } from "./http/Middleware.ts"
import { completeDocument } from "./openapi/OpenApiDocument.ts"
import { EventDefinitionsApi, EventsApi } from "./events/EventsApi.ts"
import { MsgConfigsApi, MsgMediaApi, PhoneNumbersApi } from "./messaging/numbers/NumbersApi.ts"
import { CustomersApi } from "./tenancy/CustomersApi.ts"
import { SandboxApi } from "./messaging/MessagingApi.ts"
import { MsgConversationsApi } from "./messaging/ConversationsApi.ts"
import { MessagingProxyApi } from "./messaging/ProxyApi.ts"
import { FunctionInvokeApi, FunctionsApi, LegacyFunctionsApi } from "./functions/FunctionsApi.ts"
import { WebhookDeliveriesApi, WebhooksApi } from "./webhooks/WebhooksApi.ts"
import { MsgTemplatesApi } from "./messaging/templates/TemplatesApi.ts"
import { ExecutionsApi, FlowExecutionsApi } from "./executions/ExecutionsApi.ts"
import { ProviderModelsApi } from "./ai/ProviderModelsApi.ts"
import { LegacySetupLinksApi, SetupLinksApi } from "./tenancy/SetupLinksApi.ts"
import { InboxEmbedsApi } from "./inbox/InboxEmbedsApi.ts"
import { InboxApi } from "./inbox/InboxApi.ts"
import { ViewerApi } from "./viewer/ViewerApi.ts"
import { WorkflowEmbedsApi } from "./viewer/WorkflowEmbedsApi.ts"
import { MsgContactsApi } from "./erasure/ContactsApi.ts"
import { VoiceAgentsApi } from "./voice/VoiceAgentsApi.ts"
import { ApiLogsApi } from "./logs/ApiLogsApi.ts"
import { LogSearchApi } from "./logs/LogSearchApi.ts"
import { LegacyBroadcastsApi, MsgBroadcastsApi } from "./broadcasts/BroadcastsApi.ts"
import { GuardrailsApi } from "./guardrails/GuardrailsApi.ts"
import { WorkflowLifecycleApi } from "./executions/lifecycle/LifecycleApi.ts"

/**
 * The contract's groups, in one list. The contract's type names them (with the middleware every endpoint has), so
 * the emitted declarations refer to each group's class instead of spelling every endpoint of every group out a
 * second time (about 260 KB of `.d.ts` that a consumer's type-check read for nothing). A new group goes here.
 */
const groups = [
  WorkflowsApi,
  TriggersApi,
  FlowsApi,
  WorkflowLifecycleApi,
  ExecutionsApi,
  FlowExecutionsApi,
  EventsApi,
  EventDefinitionsApi,
  PhoneNumbersApi,
  CustomersApi,
  MsgConfigsApi,
  SandboxApi,
  MsgConversationsApi,
  MessagingProxyApi,
  FunctionsApi,
  FunctionInvokeApi,
  LegacyFunctionsApi,
  WebhooksApi,
  WebhookDeliveriesApi,
  MsgTemplatesApi,
  ProviderModelsApi,
  SetupLinksApi,
  LegacySetupLinksApi,
  InboxEmbedsApi,
  InboxApi,
  WorkflowEmbedsApi,
  ViewerApi,
  MsgContactsApi,
  VoiceAgentsApi,
  LogSearchApi,
  ApiLogsApi,
  MsgMediaApi,
  MsgBroadcastsApi,
  LegacyBroadcastsApi,
  GuardrailsApi
] as const

const ParleyApiBase: HttpApi.HttpApi<"parley", HttpApiGroup.AddMiddleware<(typeof groups)[number], RequestErrors>> = HttpApi
  .make("parley")
  .add(...groups)
  .middleware(RequestErrors)
  .annotateMerge(OpenApi.annotations({
    title: "Parley",
    version: "0.1.0",
    description: "Self-hostable engine for automating conversations over a messaging network.\n\n" +
      "Authentication: the project's API key in `X-API-Key` (or `Authorization: Bearer`). Errors answer " +
      "`{ \"error\": \"...\" }` (with `code` and `details` naming the field where there is one). Every string a " +
      "request carries (query value, path segment, JSON text) must be storable text: a NUL character or an unpaired " +
      "surrogate answers 422 naming the field (on the proxy, 400 in the network's shape). Unknown body fields are ignored.",
    transform: completeDocument
  }))

export class ParleyApi extends ParleyApiBase {}
