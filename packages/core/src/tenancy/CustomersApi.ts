/** The HTTP contract of customers (decisions 2.13, 4.8); connecting a number to one is a phone numbers endpoint. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../http/Middleware.ts"
import { NotFound, Unprocessable } from "../shared/ApiError.ts"
import { ListResponse, PagingQuery } from "../shared/Pagination.ts"
import { Customer, CustomerCreateInput, CustomerUpdateInput } from "./Customer.ts"
import { operation } from "../http/Operation.ts"

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })
const IdParams = { id: Schema.String }

export class CustomersApi extends HttpApiGroup.make("customers")
  .add(
    HttpApiEndpoint.get("list", "/customers", {
      query: {
        external_customer_id: Schema.optionalKey(Schema.String),
        name_contains: Schema.optionalKey(Schema.String),
        ...PagingQuery
      },
      success: ListResponse(Customer)
    }).annotateMerge(operation(
      "List customers",
      "The project's customers (the businesses it serves), filtered by `external_customer_id` and " +
        "`name_contains`."
    )),
    HttpApiEndpoint.post("create", "/customers", {
      payload: Schema.Struct({ customer: CustomerCreateInput }),
      success: data(Customer).pipe(HttpApiSchema.status(201)),
      error: Unprocessable
    }).annotateMerge(operation(
      "Create a customer",
      "Creates a customer from `customer { name, external_customer_id? }`."
    )),
    HttpApiEndpoint.get("get", "/customers/:id", { params: IdParams, success: data(Customer), error: NotFound }).annotateMerge(operation(
      "Get a customer",
      "One customer of the project by id; another project's id answers 404."
    )),
    HttpApiEndpoint.patch("update", "/customers/:id", {
      params: IdParams,
      payload: Schema.Struct({ customer: CustomerUpdateInput }),
      success: data(Customer),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation(
      "Update a customer",
      "Renames a customer or changes its external id."
    )),
    HttpApiEndpoint.delete("delete", "/customers/:id", {
      params: IdParams,
      success: HttpApiSchema.NoContent,
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation(
      "Delete a customer",
      "Deletes a customer; 422 while it still has connected numbers."
    ))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({ title: "Customers", description: "The businesses whose numbers a project connects" }))
{}
