/** The HTTP contract of provider models (decisions 2.18, 4.7): `GET /provider_models`, public fields only. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Authentication } from "../http/Middleware.ts"
import { ProviderModel } from "./ProviderModel.ts"
import { operation } from "../http/Operation.ts"

export class ProviderModelsApi extends HttpApiGroup.make("providerModels")
  .add(
    HttpApiEndpoint.get("list", "/provider_models", {
      success: Schema.Struct({ data: Schema.Array(ProviderModel) })
    }).annotateMerge(operation(
      "List the models agents can use",
      "The language models the host's operator declared for agents and AI fields, ordered by provider " +
        "then name; keys are never shown."
    ))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({
    title: "Provider models",
    description: "The language models the operator declared, ordered by provider then name; endpoints and keys are never shown"
  }))
{}
