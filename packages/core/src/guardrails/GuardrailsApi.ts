/** The Platform API of guardrails (issue 32 §1, §2): opt-outs, the project's and numbers' settings, contacts' time zones. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { operation } from "../http/Operation.ts"
import { Authentication } from "../http/Middleware.ts"
import { NotFound, Unprocessable } from "../shared/ApiError.ts"
import { PageResponse, PagingQuery } from "../shared/Pagination.ts"
import { GuardrailSettings, GuardrailSettingsInput, OptOut, OptOutCreateInput } from "./Guardrail.ts"

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })

export class GuardrailsApi extends HttpApiGroup.make("guardrails")
  .add(
    HttpApiEndpoint.get("listOptOuts", "/msg/opt_outs", {
      query: {
        msg_config_id: Schema.optionalKey(Schema.String),
        phone_number: Schema.optionalKey(Schema.String),
        page: PagingQuery.page,
        per_page: PagingQuery.per_page
      },
      success: PageResponse(OptOut),
      error: Unprocessable
    }).annotateMerge(operation("List opt-outs", "The project's opt-outs, newest first, filtered by `msg_config_id` (that number's own) and `phone_number` (in any written form; a value that is neither a phone number nor a business-scoped id matches none); page paging.")),
    HttpApiEndpoint.post("addOptOut", "/msg/opt_outs", {
      payload: Schema.Struct({ opt_out: OptOutCreateInput }),
      success: data(OptOut).pipe(HttpApiSchema.status(201)),
      error: Unprocessable
    }).annotateMerge(operation("Add an opt-out", "Opts the contact out of one number's marketing messages (`msg_config_id`) or every number's of the project; an existing opt-out of the same scope is answered as it is. Writes `msg.contact.opted_out`.")),
    HttpApiEndpoint.delete("removeOptOut", "/msg/opt_outs/:id", { params: { id: Schema.String }, success: HttpApiSchema.NoContent, error: NotFound })
      .annotateMerge(operation("Remove an opt-out", "The contact receives that scope's marketing messages again. Writes `msg.contact.opted_in`.")),
    HttpApiEndpoint.get("listSettings", "/msg/guardrails", { success: data(Schema.Array(GuardrailSettings)) })
      .annotateMerge(operation("List guardrail settings", "The project's settings (`msg_config_id` null) and each number's that has its own.")),
    HttpApiEndpoint.put("putSettings", "/msg/guardrails", {
      payload: Schema.Struct({ msg_config_id: Schema.optionalKey(Schema.NullOr(Schema.String)), guardrails: GuardrailSettingsInput }),
      success: data(GuardrailSettings),
      error: Unprocessable
    }).annotateMerge(operation("Set guardrail settings", "Replaces the settings of the project (no `msg_config_id`) or of one number: opt-out and resubscribe keywords with their confirmations, quiet hours, marketing frequency caps. A number's null field takes the project's.")),
    HttpApiEndpoint.put("setTimeZone", "/msg/contact_time_zones/:phone_number", {
      params: { phone_number: Schema.String },
      payload: Schema.Struct({ time_zone: Schema.String }),
      success: HttpApiSchema.NoContent,
      error: Unprocessable
    }).annotateMerge(operation("Set a contact's time zone", "The IANA zone the contact's quiet hours are read in, instead of its phone number's country's.")),
    HttpApiEndpoint.delete("clearTimeZone", "/msg/contact_time_zones/:phone_number", {
      params: { phone_number: Schema.String },
      success: HttpApiSchema.NoContent,
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation("Clear a contact's time zone", "Its quiet hours are read in its phone number's country's zone again."))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({ title: "Guardrails", description: "Opt-outs, quiet hours and frequency caps every send honours" }))
{}
