/** The HTTP contract of setup links (spec "Setup link", decisions 2.13, 4.8) on the Platform API and the older surface. */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Authentication } from "../http/Middleware.ts"
import { operation } from "../http/Operation.ts"
import { NotFound, Unprocessable } from "../shared/ApiError.ts"
import { PageResponse, PagingQuery } from "../shared/Pagination.ts"
import { SetupLink, SetupLinkCreateInput, SetupLinkUpdateInput } from "./SetupLink.ts"

const data = <S extends Schema.Top>(schema: S) => Schema.Struct({ data: schema })
const CustomerParams = { customer_id: Schema.String }
const LinkParams = { customer_id: Schema.String, id: Schema.String }
const PageQuery = { page: PagingQuery.page, per_page: PagingQuery.per_page }

const listEndpoint = HttpApiEndpoint.get("list", "/customers/:customer_id/setup_links", {
  params: CustomerParams,
  query: PageQuery,
  success: PageResponse(SetupLink),
  error: NotFound
})

export class SetupLinksApi extends HttpApiGroup.make("setupLinks")
  .add(
    listEndpoint.annotateMerge(operation(
      "List a customer's setup links",
      "The customer's setup links, newest first, in page mode (`page`, `per_page`); `token` and `url` are never listed."
    )),
    HttpApiEndpoint.post("create", "/customers/:customer_id/setup_links", {
      params: CustomerParams,
      payload: Schema.Struct({ setup_link: SetupLinkCreateInput }),
      success: data(SetupLink).pipe(HttpApiSchema.status(201)),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation(
      "Create a setup link",
      "Creates the customer's onboarding link and revokes its active one. The answer carries `token` and `url` once; " +
        "later answers omit them. The link expires 30 days after creation; theme colours are `#RRGGBB`."
    )),
    HttpApiEndpoint.get("get", "/customers/:customer_id/setup_links/:id", {
      params: LinkParams,
      success: data(SetupLink),
      error: NotFound
    }).annotateMerge(operation(
      "Get a setup link",
      "One setup link of the customer by id, with its state (`status`, `msg_setup_status`, `error_code`)."
    )),
    HttpApiEndpoint.patch("update", "/customers/:customer_id/setup_links/:id", {
      params: LinkParams,
      payload: Schema.Struct({ setup_link: SetupLinkUpdateInput }),
      success: data(SetupLink),
      error: [NotFound, Unprocessable]
    }).annotateMerge(operation(
      "Change or revoke a setup link",
      "`status: revoked`, redirects, theme, language; only active links change (422 otherwise)."
    ))
  )
  .middleware(Authentication)
  .prefix("/platform/v1")
  .annotateMerge(OpenApi.annotations({ title: "Setup links", description: "Onboarding pages for a customer's number" }))
{}

/** The older surface's list of a customer's setup links (page mode). */
export class LegacySetupLinksApi extends HttpApiGroup.make("legacySetupLinks")
  .add(listEndpoint.annotateMerge(operation(
    "List a customer's setup links (older surface)",
    "The same setup links as the Platform API, newest first, in page mode (`page`, `per_page`)."
  )))
  .middleware(Authentication)
  .prefix("/api/v1")
  .annotateMerge(OpenApi.annotations({ title: "Setup links (older surface)", description: "The same setup links, page mode" }))
{}
