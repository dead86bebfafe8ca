/**
 * The HTTP contract of the sandbox (simulator mode only; 404 in cloud mode):
 * simulated contacts write to the project's numbers, and the outbox shows what
 * the simulated network delivered to them.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../http/Middleware.ts"
import { NotFound, Unprocessable } from "../shared/ApiError.ts"
import { SandboxInboundInput, SandboxOutboxEntry } from "./Sandbox.ts"
import { operation } from "../http/Operation.ts"

export class SandboxApi extends HttpApiGroup.make("sandbox")
  .add(
    HttpApiEndpoint.post("inbound", "/sandbox/inbound", {
      payload: SandboxInboundInput,
      success: Schema.Struct({ id: Schema.String }).pipe(HttpApiSchema.status(202)),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation(
      "Simulate an inbound message (sandbox)",
      "Makes a simulated contact write to the sandbox number, as the network would deliver it: the " +
        "message is stored and routed to workflows. For trying flows without a real number."
    )),
    HttpApiEndpoint.get("outbox", "/sandbox/outbox", {
      query: { phone_number_id: Schema.String },
      success: Schema.Struct({ data: Schema.Array(SandboxOutboxEntry) }),
      error: NotFound
    }).annotateMerge(operation(
      "Messages the sandbox number sent",
      "What the sandbox number sent, in order, as the simulated network received it."
    ))
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({
    title: "Sandbox",
    description: "Simulator mode only: simulated contacts write to the project's numbers; the outbox shows what reached them"
  }))
{}
