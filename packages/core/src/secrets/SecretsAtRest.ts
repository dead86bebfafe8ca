/**
 * Credentials at rest (issue 21 §5): message-config access tokens and app
 * secrets, and webhook signing secrets and custom header values (issue 29 §4), are stored encrypted with the host's
 * secret key and cipher (`FunctionSecretsCipher`: one key for every secret
 * Parley keeps), each bound to its record and field.
 *
 * The seal sits where the domain hands records to storage: these layers wrap
 * the `MessageConfigsRepo`, `WebhooksRepo` and `WebhookDeliveriesRepo`
 * adapters (memory or Postgres, which store what they are given), so every
 * service reading a config or a webhook gets the value and nothing else
 * changes. A config's credentials stay inside `Redacted` (no log line or
 * rendered record shows them) until a call to the network or a signature
 * check uses them; a webhook's `secret_key` signs deliveries and is part of
 * its read shape (spec).
 *
 * Every stored value is ciphertext: migrations 0017 and 0027 (header values) sealed the rows written
 * before, under the same key (`sealMessageConfigSecret`, `sealWebhookSecret`, `sealWebhookHeaders`),
 * so no value is ever guessed to be plain (a user's secret may look like
 * ciphertext).
 */
import { Effect, Layer, Option, Redacted } from "effect"
import { FunctionSecretsCipher, type SecretCipher } from "../shared/SecretCipher.ts"
import type { MessageConfigRecord } from "../messaging/numbers/MessageConfig.ts"
import { MessageConfigsRepo } from "../messaging/numbers/MessageConfigsRepo.ts"
import { WebhookDeliveriesRepo, WebhooksRepo } from "../webhooks/WebhooksRepo.ts"
import type { ListSlice } from "../shared/Pagination.ts"
import type { WebhookRecord } from "../webhooks/Webhook.ts"

/** Additional data of a config's credentials: a value copied to another config does not decrypt. */
export const messageConfigSecretScope = (configId: string) => `msg_config:${configId}`
/** Additional data of a webhook's signing secret. */
export const webhookSecretScope = (webhookId: string) => `webhook:${webhookId}`

// A value the host cannot decrypt (another key, tampered data) is a fault of the deployment, not of a
// caller: the defect says which record and field, never the value.
const open = (cipher: SecretCipher, scope: string, name: string, stored: string) =>
  cipher.decrypt(scope, name, stored).pipe(
    Effect.mapError((e) => new Error(`${name} of ${scope} could not be decrypted: ${e.message}`)),
    Effect.orDie
  )

/** One credential of a config, encrypted (also by migration 0017, for the rows stored before). */
export const sealMessageConfigSecret = (
  cipher: SecretCipher,
  configId: string,
  field: "access_token" | "app_secret" | "webhook_verify_token",
  value: string
) => cipher.encrypt(messageConfigSecretScope(configId), field, value)

/** A webhook's signing secret, encrypted (also by migration 0017). */
export const sealWebhookSecret = (cipher: SecretCipher, webhookId: string, value: string) =>
  cipher.encrypt(webhookSecretScope(webhookId), "secret_key", value)

/** The field a custom header's value is bound to: its name as given (a value moved to another header does not open). */
const headerField = (name: string) => `headers.${name}`

/**
 * A webhook's custom headers with each value encrypted (also by migration 0027): they carry credentials of the
 * customer's endpoint (`Authorization: Bearer ...`) as much as the signing secret does. The names stay readable.
 */
export const sealWebhookHeaders = (
  cipher: SecretCipher,
  webhookId: string,
  headers: Readonly<Record<string, string>>
): Record<string, string> =>
  Object.fromEntries(
    Object.entries(headers).map(([name, value]) => [name, cipher.encrypt(webhookSecretScope(webhookId), headerField(name), value)])
  )

const sealMessageConfig = (cipher: SecretCipher, c: MessageConfigRecord): MessageConfigRecord => ({
  ...c,
  access_token: Redacted.make(sealMessageConfigSecret(cipher, c.id, "access_token", Redacted.value(c.access_token))),
  app_secret: c.app_secret === null
    ? null
    : Redacted.make(sealMessageConfigSecret(cipher, c.id, "app_secret", Redacted.value(c.app_secret))),
  webhook_verify_token: c.webhook_verify_token === null
    ? null
    : Redacted.make(sealMessageConfigSecret(cipher, c.id, "webhook_verify_token", Redacted.value(c.webhook_verify_token)))
})

const openMessageConfig = Effect.fnUntraced(function*(cipher: SecretCipher, c: MessageConfigRecord) {
  const scope = messageConfigSecretScope(c.id)
  const accessToken = yield* open(cipher, scope, "access_token", Redacted.value(c.access_token))
  const appSecret = c.app_secret === null ? null : yield* open(cipher, scope, "app_secret", Redacted.value(c.app_secret))
  const verifyToken = c.webhook_verify_token === null
    ? null
    : yield* open(cipher, scope, "webhook_verify_token", Redacted.value(c.webhook_verify_token))
  return {
    ...c,
    access_token: Redacted.make(accessToken),
    app_secret: appSecret === null ? null : Redacted.make(appSecret),
    webhook_verify_token: verifyToken === null ? null : Redacted.make(verifyToken)
  }
})

const sealWebhook = (cipher: SecretCipher, w: WebhookRecord): WebhookRecord => ({
  ...w,
  secret_key: sealWebhookSecret(cipher, w.id, w.secret_key),
  headers: sealWebhookHeaders(cipher, w.id, w.headers)
})

const openWebhook = Effect.fnUntraced(function*(cipher: SecretCipher, w: WebhookRecord) {
  const scope = webhookSecretScope(w.id)
  const headers = yield* Effect.forEach(
    Object.entries(w.headers),
    ([name, value]) => Effect.map(open(cipher, scope, headerField(name), value), (plain) => [name, plain] as const)
  )
  return { ...w, secret_key: yield* open(cipher, scope, "secret_key", w.secret_key), headers: Object.fromEntries(headers) }
})

const openOption = <A>(opened: (a: A) => Effect.Effect<A>) => (found: Option.Option<A>) =>
  Option.isNone(found) ? Effect.succeed(found) : Effect.map(opened(found.value), Option.some)

const openSlice = <A>(opened: (a: A) => Effect.Effect<A>) => (slice: ListSlice<A>) =>
  Effect.map(Effect.forEach(slice.items, opened), (items) => ({ ...slice, items }))

/** `MessageConfigsRepo` over the adapter's, sealing credentials on write and opening them on read. */
export const layerSealedMessageConfigsRepo = Layer.effect(
  MessageConfigsRepo,
  Effect.gen(function*() {
    const stored = yield* MessageConfigsRepo
    const keys = yield* FunctionSecretsCipher
    const sealed = (c: MessageConfigRecord) => Effect.map(keys.cipher, (cipher) => sealMessageConfig(cipher, c))
    const opened = (c: MessageConfigRecord) => Effect.flatMap(keys.cipher, (cipher) => openMessageConfig(cipher, c))
    const openFound = openOption(opened)
    return MessageConfigsRepo.of({
      insert: (c) => Effect.flatMap(sealed(c), stored.insert),
      findById: (projectId, id) => Effect.flatMap(stored.findById(projectId, id), openFound),
      findLiveById: (id) => Effect.flatMap(stored.findLiveById(id), openFound),
      findByPhoneNumberId: (phoneNumberId) => Effect.flatMap(stored.findByPhoneNumberId(phoneNumberId), openFound),
      listByBusinessAccount: (businessAccountId) =>
        Effect.flatMap(stored.listByBusinessAccount(businessAccountId), (all) => Effect.forEach(all, opened)),
      list: (projectId, filter, window) => Effect.flatMap(stored.list(projectId, filter, window), openSlice(opened)),
      update: (c) => Effect.flatMap(Effect.flatMap(sealed(c), stored.update), openFound),
      listIdleProvisioned: (before, limit) =>
        Effect.flatMap(stored.listIdleProvisioned(before, limit), (all) => Effect.forEach(all, opened)),
      markDeleted: (projectId, id, at) => Effect.flatMap(stored.markDeleted(projectId, id, at), openFound),
      changes: stored.changes
    })
  })
)

/** `WebhooksRepo` over the adapter's, sealing `secret_key` on write and opening it on read. */
export const layerSealedWebhooksRepo = Layer.effect(
  WebhooksRepo,
  Effect.gen(function*() {
    const stored = yield* WebhooksRepo
    const keys = yield* FunctionSecretsCipher
    const sealed = (w: WebhookRecord) => Effect.map(keys.cipher, (cipher) => sealWebhook(cipher, w))
    const opened = (w: WebhookRecord) => Effect.flatMap(keys.cipher, (cipher) => openWebhook(cipher, w))
    const openFound = openOption(opened)
    return WebhooksRepo.of({
      insert: (w) => Effect.flatMap(sealed(w), stored.insert),
      findById: (projectId, id) => Effect.flatMap(stored.findById(projectId, id), openFound),
      list: (projectId, filter, window) => Effect.flatMap(stored.list(projectId, filter, window), openSlice(opened)),
      update: (w) => Effect.flatMap(Effect.flatMap(sealed(w), stored.update), openFound),
      delete: stored.delete,
      deleteByPhoneNumber: stored.deleteByPhoneNumber,
      listActive: (projectId, phoneNumberId) =>
        Effect.flatMap(stored.listActive(projectId, phoneNumberId), (all) => Effect.forEach(all, opened)),
      pause: (projectId, id, at, reason) => Effect.flatMap(stored.pause(projectId, id, at, reason), openFound),
      changes: stored.changes
    })
  })
)

/** `WebhookDeliveriesRepo` over the adapter's: the webhook an attempt starts from comes with its secret opened. */
export const layerSealedWebhookDeliveriesRepo = Layer.effect(
  WebhookDeliveriesRepo,
  Effect.gen(function*() {
    const stored = yield* WebhookDeliveriesRepo
    const keys = yield* FunctionSecretsCipher
    const openWebhookFound = openOption((w: WebhookRecord) => Effect.flatMap(keys.cipher, (cipher) => openWebhook(cipher, w)))
    return WebhookDeliveriesRepo.of({
      ...stored,
      findWithWebhook: (projectId, id) =>
        Effect.flatMap(
          stored.findWithWebhook(projectId, id),
          openOption(({ delivery, webhook }) => Effect.map(openWebhookFound(webhook), (opened) => ({ delivery, webhook: opened })))
        )
    })
  })
)

/** The sealed repos, over the adapters' and the host's cipher. */
export const layerSealedRepos = Layer.mergeAll(
  layerSealedMessageConfigsRepo,
  layerSealedWebhooksRepo,
  layerSealedWebhookDeliveriesRepo
)
