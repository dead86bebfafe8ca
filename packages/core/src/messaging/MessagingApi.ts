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

export class SandboxApi extends HttpApiGroup.make("sandbox")
  .add(
    HttpApiEndpoint.post("inbound", "/sandbox/inbound", {
      payload: SandboxInboundInput,
      success: Schema.Struct({ id: Schema.String }).pipe(HttpApiSchema.status(202)),
      error: [NotFound, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Simulate an inbound message (sandbox)" })),
    HttpApiEndpoint.get("outbox", "/sandbox/outbox", {
      query: { phone_number_id: Schema.String },
      success: Schema.Struct({ data: Schema.Array(SandboxOutboxEntry) }),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "Messages the sandbox number sent" }))
  )
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({
    title: "Sandbox",
    description: "Simulator mode only: simulated contacts write to the project's numbers; the outbox shows what reached them"
  }))
{}
