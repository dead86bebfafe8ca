/**
 * Credentials at rest (issue 21 §5): encrypts the message-config access tokens,
 * app secrets and webhook verify tokens and the webhook signing secrets stored in plain text before,
 * in place, with the key the host uses (`PARLEY_SECRET_KEY`, else the key
 * stored in `host_keys`, created here as the host would on first use). From
 * here on the host only writes ciphertext (`@parley/core` `SecretsAtRest`).
 */
import { configuredSecretKey, generateSecretKeyMaterial, makeSecretCipher, sealMessageConfigSecret, sealWebhookSecret } from "@parley/core"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const configs = yield* sql<{
    readonly id: string
    readonly access_token: string
    readonly app_secret: string | null
    readonly webhook_verify_token: string | null
  }>`SELECT id, access_token, app_secret, webhook_verify_token FROM msg_configs`
  const webhooks = yield* sql<{ readonly id: string; readonly secret_key: string }>`SELECT id, secret_key FROM webhooks`
  // A new database has nothing to encrypt: its key is left to the host.
  if (configs.length === 0 && webhooks.length === 0) return

  const configured = yield* configuredSecretKey
  const material = configured !== undefined ? Redacted.value(configured) : yield* Effect.gen(function*() {
    // As `FunctionsRepo.secretKey`: the first offer wins.
    const candidate = yield* generateSecretKeyMaterial
    yield* sql`INSERT INTO host_keys (name, key) VALUES ('function_secrets', ${candidate}) ON CONFLICT (name) DO NOTHING`
    const rows = yield* sql<{ readonly key: string }>`SELECT key FROM host_keys WHERE name = 'function_secrets'`
    return rows[0]!.key
  })
  const cipher = yield* Effect.try({ try: () => makeSecretCipher(material), catch: (error) => error }).pipe(Effect.orDie)

  for (const c of configs) {
    const appSecret = c.app_secret === null ? null : sealMessageConfigSecret(cipher, c.id, "app_secret", c.app_secret)
    const verifyToken = c.webhook_verify_token === null
      ? null
      : sealMessageConfigSecret(cipher, c.id, "webhook_verify_token", c.webhook_verify_token)
    yield* sql`
      UPDATE msg_configs SET access_token = ${sealMessageConfigSecret(cipher, c.id, "access_token", c.access_token)},
        app_secret = ${appSecret}, webhook_verify_token = ${verifyToken}
      WHERE id = ${c.id}`
  }
  for (const w of webhooks) {
    yield* sql`UPDATE webhooks SET secret_key = ${sealWebhookSecret(cipher, w.id, w.secret_key)} WHERE id = ${w.id}`
  }
})
