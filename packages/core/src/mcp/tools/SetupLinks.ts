/** `setup_links`: a customer's onboarding links (decisions 2.13, 4.8). */
import { Schema } from "effect"
import { SetupLinksApi } from "../../tenancy/SetupLinksApi.ts"
import { action, callEndpoint, endpoint, type Tool } from "../Action.ts"

export const SetupLinks: Tool = {
  name: "setup_links",
  description: "Onboarding links a customer opens to connect a phone number.",
  actions: [
    endpoint("list", SetupLinksApi.endpoints.list),
    endpoint("create", SetupLinksApi.endpoints.create),
    endpoint("update", SetupLinksApi.endpoints.update),
    action(
      "revoke",
      "Revokes an active setup link at once (its page then answers `link_expired`)",
      Schema.Struct({ customer_id: Schema.String, id: Schema.String }),
      ({ customer_id, id }) =>
        callEndpoint(SetupLinksApi.endpoints.update, { customer_id, id, setup_link: { status: "revoked" } })
    )
  ]
}
