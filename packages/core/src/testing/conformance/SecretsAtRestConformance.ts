/**
 * Credentials at rest over each storage adapter: written through the sealed
 * repos (`secrets/SecretsAtRest.ts`, as every service does), the adapter holds
 * ciphertext under the host key, and every read through them gives the value
 * back.
 */
import { assert, layer } from "@effect/vitest"
import { Effect, Layer, Option, Redacted } from "effect"
import { type FunctionsRepo, layerHostCipher } from "../../functions/FunctionsRepo.ts"
import { FunctionSecretsCipher } from "../../shared/SecretCipher.ts"
import { MessageConfigsRepo } from "../../messaging/numbers/MessageConfigsRepo.ts"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import { WebhookDeliveriesRepo, WebhooksRepo } from "../../webhooks/WebhooksRepo.ts"
import type { ListWindow } from "../../shared/Pagination.ts"
import { layerSealedRepos, messageConfigSecretScope, webhookSecretScope } from "../../secrets/SecretsAtRest.ts"
import { at, dies, givenProject } from "./fixtures.ts"
import { makeConfig } from "./MessagingStorageConformance.ts"
import { makeDelivery, makeWebhook } from "./WebhooksStorageConformance.ts"

export type SecretsAtRestPorts = ProjectsRepo | FunctionsRepo | MessageConfigsRepo | WebhooksRepo | WebhookDeliveriesRepo

const window: ListWindow = { mode: "cursor", limit: 50 }

/** Through the sealed repos, over the adapters in context (what the test reads directly is what they store). */
const sealed = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.provide(effect, layerSealedRepos.pipe(Layer.provideMerge(layerHostCipher)))

// Plain texts long enough that a random ciphertext cannot contain one by chance (a 2-character one did, once in ~50 runs).
const assertCiphertext = (stored: string, plain: string) => {
  assert.notStrictEqual(stored, plain)
  assert.notInclude(stored, plain)
  assert.match(stored, /^v1\./)
}

export const secretsAtRestConformance = <E>(name: string, storage: Layer.Layer<SecretsAtRestPorts, E>): void =>
  layer(storage, { excludeTestServices: true })(name, (it) => {
    it.effect("stores a config's access token, app secret and verify token encrypted with the host key, and reads them back", () =>
      Effect.gen(function*() {
        const project = yield* givenProject()
        const token = `EAAG-${crypto.randomUUID()}`
        const config = makeConfig(project.id, {
          access_token: Redacted.make(token),
          app_secret: Redacted.make("app-s3cret"),
          webhook_verify_token: Redacted.make("verify-t0ken")
        })
        yield* sealed(MessageConfigsRepo.use((repo) => repo.insert(config)))

        const stored = Option.getOrThrow(yield* (yield* MessageConfigsRepo).findById(project.id, config.id))
        assertCiphertext(Redacted.value(stored.access_token), token)
        assertCiphertext(Redacted.value(stored.app_secret!), "app-s3cret")
        assertCiphertext(Redacted.value(stored.webhook_verify_token!), "verify-t0ken")
        // The key of function and project secrets, bound to the config and the field.
        const cipher = yield* sealed(FunctionSecretsCipher.use((keys) => keys.cipher))
        const scope = messageConfigSecretScope(config.id)
        assert.strictEqual(yield* cipher.decrypt(scope, "access_token", Redacted.value(stored.access_token)), token)
        assert.strictEqual(yield* cipher.decrypt(scope, "app_secret", Redacted.value(stored.app_secret!)), "app-s3cret")

        const reads = yield* sealed(Effect.gen(function*() {
          const repo = yield* MessageConfigsRepo
          return [
            yield* repo.findById(project.id, config.id),
            yield* repo.findLiveById(config.id),
            yield* repo.findByPhoneNumberId(config.phone_number_id),
            Option.fromNullishOr((yield* repo.listByBusinessAccount(config.business_account_id))[0]),
            Option.fromNullishOr((yield* repo.list(project.id, {}, window)).items[0])
          ]
        }))
        for (const read of reads) {
          const found = Option.getOrThrow(read)
          assert.strictEqual(Redacted.value(found.access_token), token)
          assert.strictEqual(Redacted.value(found.app_secret!), "app-s3cret")
          assert.strictEqual(Redacted.value(found.webhook_verify_token!), "verify-t0ken")
        }

        const updated = yield* sealed(MessageConfigsRepo.use((repo) =>
          repo.update({ ...config, access_token: Redacted.make("rotated-token"), app_secret: null, updated_at: at(1) })
        ))
        assert.strictEqual(Redacted.value(Option.getOrThrow(updated).access_token), "rotated-token")
        const restored = Option.getOrThrow(yield* (yield* MessageConfigsRepo).findById(project.id, config.id))
        assertCiphertext(Redacted.value(restored.access_token), "rotated-token")
        assert.isNull(restored.app_secret)
        const deleted = yield* sealed(MessageConfigsRepo.use((repo) => repo.markDeleted(project.id, config.id, at(2))))
        assert.strictEqual(Redacted.value(Option.getOrThrow(deleted).access_token), "rotated-token")
      }))

    it.effect("refuses a config's ciphertext copied to another config", () =>
      Effect.gen(function*() {
        const project = yield* givenProject()
        const a = makeConfig(project.id)
        const b = makeConfig(project.id)
        yield* sealed(MessageConfigsRepo.use((repo) => Effect.andThen(repo.insert(a), repo.insert(b))))
        const repo = yield* MessageConfigsRepo
        const storedA = Option.getOrThrow(yield* repo.findById(project.id, a.id))
        const storedB = Option.getOrThrow(yield* repo.findById(project.id, b.id))
        yield* repo.update({ ...storedB, access_token: storedA.access_token })
        yield* dies(sealed(MessageConfigsRepo.use((sealedRepo) => sealedRepo.findById(project.id, b.id))))
      }))

    it.effect("stores a webhook's signing secret encrypted with the host key, and reads it back", () =>
      Effect.gen(function*() {
        const project = yield* givenProject()
        const webhook = makeWebhook(project.id, { secret_key: "whsec-plain", headers: { Authorization: "Bearer endpoint-t0ken" } })
        const delivery = makeDelivery(webhook)
        yield* sealed(WebhooksRepo.use((repo) => repo.insert(webhook)))
        yield* (yield* WebhookDeliveriesRepo).insert(delivery)

        const stored = Option.getOrThrow(yield* (yield* WebhooksRepo).findById(project.id, webhook.id))
        assertCiphertext(stored.secret_key, "whsec-plain")
        // Custom header values are credentials of the customer's endpoint: sealed the same way, names kept (issue 29 §4).
        assert.deepStrictEqual(Object.keys(stored.headers), ["Authorization"])
        assertCiphertext(stored.headers.Authorization!, "Bearer endpoint-t0ken")
        const cipher = yield* sealed(FunctionSecretsCipher.use((keys) => keys.cipher))
        assert.strictEqual(
          yield* cipher.decrypt(webhookSecretScope(webhook.id), "secret_key", stored.secret_key),
          "whsec-plain"
        )

        const reads = yield* sealed(Effect.gen(function*() {
          const repo = yield* WebhooksRepo
          return [
            yield* repo.findById(project.id, webhook.id),
            Option.fromNullishOr((yield* repo.list(project.id, {}, window)).items[0]),
            Option.fromNullishOr((yield* repo.listActive(project.id, webhook.phone_number_id))[0]),
            // What an attempt signs with.
            Option.flatMap(
              yield* (yield* WebhookDeliveriesRepo).findWithWebhook(project.id, delivery.id),
              (found) => found.webhook
            )
          ]
        }))
        for (const read of reads) {
          assert.strictEqual(Option.getOrThrow(read).secret_key, "whsec-plain")
          assert.deepStrictEqual(Option.getOrThrow(read).headers, { Authorization: "Bearer endpoint-t0ken" })
        }

        const updated = yield* sealed(WebhooksRepo.use((repo) =>
          repo.update({ ...webhook, secret_key: "whsec-rotated", headers: { "X-Key": "key-rotated-2" }, updated_at: at(1) })
        ))
        assert.strictEqual(Option.getOrThrow(updated).secret_key, "whsec-rotated")
        assert.deepStrictEqual(Option.getOrThrow(updated).headers, { "X-Key": "key-rotated-2" })
        const restored = Option.getOrThrow(yield* (yield* WebhooksRepo).findById(project.id, webhook.id))
        assertCiphertext(restored.secret_key, "whsec-rotated")
        assertCiphertext(restored.headers["X-Key"]!, "key-rotated-2")
        const paused = yield* sealed(WebhooksRepo.use((repo) => repo.pause(project.id, webhook.id, at(2), "failure_rate")))
        assert.strictEqual(Option.getOrThrow(paused).secret_key, "whsec-rotated")
      }))
  })
