/**
 * A resource's fields with their descriptions (the specification's words), so `/openapi.json` and `/docs` say
 * what each field is (issue 29 §3). The schemas are unchanged otherwise: same types, same decoding.
 */
import type { Schema } from "effect"

export const described = <F extends Readonly<Record<string, Schema.Top>>>(
  fields: F,
  descriptions: { readonly [K in keyof F]?: string }
): F =>
  Object.fromEntries(
    Object.entries(fields).map(([name, schema]) => {
      const description = descriptions[name as keyof F]
      return [name, description === undefined ? schema : schema.annotate({ description })]
    })
  ) as F
