/** Customers of a project: the businesses whose numbers it connects (spec "Customer", decisions 2.13). */
import { Schema } from "effect"

export interface CustomerRecord {
  readonly id: string
  readonly project_id: string
  readonly name: string
  /** The project's own id for the customer; unique in the project when set. */
  readonly external_customer_id: string | null
  readonly created_at: string
  readonly updated_at: string
}

export const Customer = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  external_customer_id: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
})
export type Customer = typeof Customer.Type

export const toCustomer = (c: CustomerRecord): Customer => ({
  id: c.id,
  name: c.name,
  external_customer_id: c.external_customer_id,
  created_at: c.created_at,
  updated_at: c.updated_at
})

/** Body of `POST /customers` inside the `customer` envelope. */
export const CustomerCreateInput = Schema.Struct({
  name: Schema.String,
  external_customer_id: Schema.optionalKey(Schema.NullOr(Schema.String))
})
export type CustomerCreateInput = typeof CustomerCreateInput.Type

/** Body of `PATCH /customers/<id>`: every field optional. */
export const CustomerUpdateInput = Schema.Struct({
  name: Schema.optionalKey(Schema.String),
  external_customer_id: Schema.optionalKey(Schema.NullOr(Schema.String))
})
export type CustomerUpdateInput = typeof CustomerUpdateInput.Type

export interface CustomerFilter {
  readonly external_customer_id?: string | undefined
  /** Case-insensitive substring of the name. */
  readonly name_contains?: string | undefined
}
