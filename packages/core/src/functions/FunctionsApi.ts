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
import { operation } from "../http/Operation.ts"

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })
const IdParams = { id: Schema.String }

export class FunctionsApi extends HttpApiGroup.make("functions")
  .add(
    HttpApiEndpoint.get("list", "/functions", { query: PagingQuery, success: ListResponse(FunctionResource) }).annotateMerge(operation(
      "List functions",
      "The project's serverless functions, with their status and deployed version."
    )),
    HttpApiEndpoint.post("create", "/functions", {
      payload: Schema.Struct({ function: FunctionCreateInput }),
      success: data(FunctionResource).pipe(HttpApiSchema.status(201)),
      error: Unprocessable
    }).annotateMerge(operation(
      "Create a function",
      "Creates a function from its code (`async function handler(request, env)` or `export default { " +
        "fetch }`); deploy it to make it invocable."
    )),
    HttpApiEndpoint.get("get", "/functions/:id", { params: IdParams, success: data(FunctionResource), error: NotFound }).annotateMerge(operation(
      "Get a function",
      "One function with its code, status and deployment facts."
    )),
    HttpApiEndpoint.patch("update", "/functions/:id", {
      params: IdParams,
      payload: Schema.Struct({ function: FunctionUpdateInput }),
      success: data(FunctionResource),
      error: [NotFound, Unprocessable, Conflict]
    }).annotateMerge(operation(
      "Update a function (with its `lock_version`)",
      "Changes a function's code, name or visibility; send the `lock_version` you read (409 when " +
        "stale). The deployed version keeps running until the next deploy."
    )),
    HttpApiEndpoint.delete("delete", "/functions/:id", {
      params: IdParams,
      success: HttpApiSchema.NoContent,
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation(
      "Delete a function",
      "Deletes a function, its deployments and secrets."
    )),
    HttpApiEndpoint.post("deploy", "/functions/:id/deploy", {
      params: IdParams,
      success: FunctionDeployAccepted.pipe(HttpApiSchema.status(202)),
      error: [NotFound, Conflict]
    }).annotateMerge(operation(
      "Deploy a function's current code",
      "Deploys the current code to the Workers runtime; 409 while a deploy is already running."
    )),
    HttpApiEndpoint.get("deployments", "/functions/:id/deployments", {
      params: IdParams,
      query: PagingQuery,
      success: ListResponse(FunctionDeployment),
      error: NotFound
    }).annotateMerge(operation(
      "List a function's deployments",
      "The function's deployments, newest first, with their outcome."
    )),
    HttpApiEndpoint.get("invocations", "/functions/:id/invocations", {
      params: IdParams,
      query: { status: Schema.optionalKey(FunctionInvocationOutcome), limit: Schema.optionalKey(wholeNumberQuery("^0*(?:[1-9]|1[0-9]|20)$", "Invocations to list, 1-20 (default 10)")) },
      success: data(FunctionInvocationList),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation(
      "List a function's recent invocations",
      "Recent invocations with status, duration and (capped) logs."
    )),
    HttpApiEndpoint.get("listSecrets", "/functions/:id/secrets", {
      params: IdParams,
      success: data(Schema.Array(FunctionSecret)),
      error: [NotFound, BadGateway]
    }).annotateMerge(operation(
      "List a function's secrets (names and types, never values)",
      "The function's secrets by name and type; values are never returned."
    )),
    HttpApiEndpoint.post("saveSecret", "/functions/:id/secrets", {
      params: IdParams,
      payload: Schema.Struct({ secret: FunctionSecretInput }),
      success: FunctionSecretSaved.pipe(HttpApiSchema.status(201)),
      error: [NotFound, Unprocessable, BadGateway]
    }).annotateMerge(operation(
      "Set a function secret",
      "Sets a secret the function reads from `env`; stored encrypted."
    )),
    HttpApiEndpoint.delete("deleteSecret", "/functions/:id/secrets/:name", {
      params: { id: Schema.String, name: Schema.String },
      success: HttpApiSchema.NoContent,
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation(
      "Delete a function secret",
      "Removes a secret; the next invocation no longer sees it."
    ))
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
    }).annotateMerge(operation(
      "List functions (older surface)",
      "The older surface's list of functions, page-numbered with `meta`."
    ))
  )
  .middleware(Authentication)
  .prefix("/api/v1")
  .annotateMerge(OpenApi.annotations({ title: "Functions (older surface)", description: "The same functions, page mode" }))
{}
