/**
 * Webhook custom headers at rest (issue 29 §4): encrypts, in place, the header values stored in plain text before
 * (an `Authorization: Bearer ...` for the customer's endpoint is a credential like the signing secret), with the key
 * the host uses. Names stay as they are. From here on the host only writes ciphertext (`@parley/core`
 * `SecretsAtRest.sealWebhookHeaders`).
 */
import { sealWebhookHeaders } from "@parley/core"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { migrationCipher } from "../HostCipher.ts"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const webhooks = yield* sql<{ readonly id: string; readonly headers: Readonly<Record<string, string>> }>`
    SELECT id, headers FROM webhooks WHERE headers <> '{}'::jsonb`
  // Nothing to encrypt: the key is left to the host.
  if (webhooks.length === 0) return
  const cipher = yield* migrationCipher
  for (const w of webhooks) {
    yield* sql`UPDATE webhooks SET headers = ${JSON.stringify(sealWebhookHeaders(cipher, w.id, w.headers))}::jsonb WHERE id = ${w.id}`
  }
})
