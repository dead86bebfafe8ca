/**
 * The HTTP contract of functions (spec "Functions", decisions 4.4): records,
 * deploys, deployments, secrets and invocations under the API key; the invoke
 * route, documented here but served raw (no key for public functions, any
 * body forwarded); and the older surface's function list.
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../http/Middleware.ts"
import { BadGateway, BadRequest, Conflict, NotFound, PayloadTooLarge, TooManyRequests, Unprocessable } from "../shared/ApiError.ts"
import { ListResponse, PageResponse, PagingQuery, wholeNumberQuery } from "../shared/Pagination.ts"
import {
  FunctionDeployAccepted,
  FunctionDeployment,
  FunctionCreateInput,
  FunctionResource,
  FunctionUpdateInput,
  FunctionInvocationList,
  FunctionInvocationOutcome,
  FunctionSecret,
  FunctionSecretInput,
  FunctionSecretSaved
} from "./Function.ts"
import { FunctionInvocationFailed } from "./Invoker.ts"

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })
const IdParams = { id: Schema.String }

export class FunctionsApi extends HttpApiGroup.make("functions")
  .add(
    HttpApiEndpoint.get("list", "/functions", { query: PagingQuery, success: ListResponse(FunctionResource) }).annotateMerge(OpenApi.annotations({ summary: "List functions" })),
    HttpApiEndpoint.post("create", "/functions", {
      payload: Schema.Struct({ function: FunctionCreateInput }),
      success: data(FunctionResource).pipe(HttpApiSchema.status(201)),
      error: Unprocessable
    }).annotateMerge(OpenApi.annotations({ summary: "Create a function" })),
    HttpApiEndpoint.get("get", "/functions/:id", { params: IdParams, success: data(FunctionResource), error: NotFound }).annotateMerge(OpenApi.annotations({ summary: "Get a function" })),
    HttpApiEndpoint.patch("update", "/functions/:id", {
      params: IdParams,
      payload: Schema.Struct({ function: FunctionUpdateInput }),
      success: data(FunctionResource),
      error: [NotFound, Unprocessable, Conflict]
    }).annotateMerge(OpenApi.annotations({ summary: "Update a function (with its `lock_version`)" })),
    HttpApiEndpoint.delete("delete", "/functions/:id", {
      params: IdParams,
      success: HttpApiSchema.NoContent,
      error: [NotFound, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Delete a function" })),
    HttpApiEndpoint.post("deploy", "/functions/:id/deploy", {
      params: IdParams,
      success: FunctionDeployAccepted.pipe(HttpApiSchema.status(202)),
      error: [NotFound, Conflict]
    }).annotateMerge(OpenApi.annotations({ summary: "Deploy a function's current code" })),
    HttpApiEndpoint.get("deployments", "/functions/:id/deployments", {
      params: IdParams,
      query: PagingQuery,
      success: ListResponse(FunctionDeployment),
      error: NotFound
    }).annotateMerge(OpenApi.annotations({ summary: "List a function's deployments" })),
    HttpApiEndpoint.get("invocations", "/functions/:id/invocations", {
      params: IdParams,
      query: { status: Schema.optionalKey(FunctionInvocationOutcome), limit: Schema.optionalKey(wholeNumberQuery("^0*(?:[1-9]|1[0-9]|20)$", "Invocations to list, 1-20 (default 10)")) },
      success: data(FunctionInvocationList),
      error: [NotFound, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "List a function's recent invocations" })),
    HttpApiEndpoint.get("listSecrets", "/functions/:id/secrets", {
      params: IdParams,
      success: data(Schema.Array(FunctionSecret)),
      error: [NotFound, BadGateway]
    }).annotateMerge(OpenApi.annotations({ summary: "List a function's secrets (names and types, never values)" })),
    HttpApiEndpoint.post("saveSecret", "/functions/:id/secrets", {
      params: IdParams,
      payload: Schema.Struct({ secret: FunctionSecretInput }),
      success: FunctionSecretSaved.pipe(HttpApiSchema.status(201)),
      error: [NotFound, Unprocessable, BadGateway]
    }).annotateMerge(OpenApi.annotations({ summary: "Set a function secret" })),
    HttpApiEndpoint.delete("deleteSecret", "/functions/:id/secrets/:name", {
      params: { id: Schema.String, name: Schema.String },
      success: HttpApiSchema.NoContent,
      error: [NotFound, Unprocessable]
    }).annotateMerge(OpenApi.annotations({ summary: "Delete a function secret" }))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({
    title: "Functions",
    description: "Serverless functions: code, deploys (asynchronous), secrets (write-only values) and the invocation log"
  }))
{}

/**
 * The invoke route. Not behind `Authentication`: a public function needs no
 * key, and for a private one a missing or wrong key answers 404 like an
 * unknown function (decisions 5). The host serves it with a raw handler: the
 * body is forwarded as received, whatever its type.
 */
export class FunctionInvokeApi extends HttpApiGroup.make("functionInvoke")
  .add(
    HttpApiEndpoint.post("invoke", "/functions/:id/invoke", {
      params: IdParams,
      headers: {
        "x-api-key": Schema.optionalKey(Schema.String).annotate({
          description: "A key of the owning project; required for private functions, ignored (and stripped) for public ones"
        })
      },
      payload: Schema.Unknown.annotate({ description: "Any body, forwarded to the function with its Content-Type" }),
      success: Schema.Unknown.annotate({
        description: "passthrough: the function's status, body and Content-Type; wrapped: a 2xx answer under `data`"
      }),
      error: [BadRequest, NotFound, PayloadTooLarge, Unprocessable, TooManyRequests, FunctionInvocationFailed, BadGateway]
    }).annotateMerge(OpenApi.annotations({
      summary: "Invoke a deployed function",
      description:
        "Private functions need X-API-Key (or Authorization: Bearer) of the owning project; an unknown function and a private " +
        "one without a valid key both answer 404. Public functions take no key and are limited to 600 invokes a minute."
    }))
  )
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({ title: "Function invoke", description: "Calling deployed functions" }))
{}

/** The older surface's function list (spec "Older surface": `data` is an array of Function; page mode). */
export class LegacyFunctionsApi extends HttpApiGroup.make("legacyFunctions")
  .add(
    HttpApiEndpoint.get("list", "/functions", {
      query: { page: PagingQuery.page, per_page: PagingQuery.per_page },
      success: PageResponse(FunctionResource)
    }).annotateMerge(OpenApi.annotations({ summary: "List functions (older surface)" }))
  )
  .middleware(Authentication)
  .prefix("/api/v1")
  .annotateMerge(OpenApi.annotations({ title: "Functions (older surface)", description: "The same functions, page mode" }))
{}
