import {
  FunctionSecretKey,
  layerHostCipher,
  layerSealedRepos,
  MessageConfigsRepo,
  ProjectsRepo,
  WebhooksRepo
} from "@parley/core"
import { makeConfig, makeWebhook, secretsAtRestConformance } from "@parley/core/testing/conformance"
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { layerFromUrl } from "../src/Database.ts"
import migration0017 from "../src/migrations/0017_secrets_at_rest.ts"
import migration0027 from "../src/migrations/0027_webhook_headers_sealed.ts"
import { layerStorage } from "../src/Storage.ts"
import { freshDatabase, layerTestDatabase } from "./pg.ts"

secretsAtRestConformance("secrets at rest (postgres)", layerStorage.pipe(Layer.provideMerge(layerTestDatabase)))

const sealedRepos = layerSealedRepos.pipe(Layer.provideMerge(layerHostCipher))

const at = new Date(Date.UTC(2026, 2, 4)).toISOString()

/** A project with a config and a webhook with a custom header, written sealed, or through the bare adapters as before 0017. */
const givenCredentials = (sealing: boolean) =>
  Effect.gen(function*() {
    const project = { id: `prj_${crypto.randomUUID()}`, name: "Acme", disabled: false, created_at: at, updated_at: at }
    yield* (yield* ProjectsRepo).insert(project)
    const token = `EAAG-${crypto.randomUUID()}`
    const verifyToken = `verify-${crypto.randomUUID()}`
    const config = makeConfig(project.id, {
      access_token: Redacted.make(token),
      app_secret: Redacted.make("app-s3cret"),
      webhook_verify_token: Redacted.make(verifyToken)
    })
    const webhook = makeWebhook(project.id, {
      secret_key: `whsec-${crypto.randomUUID()}`,
      headers: { Authorization: `Bearer endpoint-${crypto.randomUUID()}`, "X-Tenant": "acme" }
    })
    const write = Effect.andThen(MessageConfigsRepo.use((r) => r.insert(config)), WebhooksRepo.use((r) => r.insert(webhook)))
    yield* sealing ? Effect.provide(write, sealedRepos) : write
    return { project, config, webhook, plain: [token, "app-s3cret", verifyToken, webhook.secret_key, webhook.headers.Authorization!] }
  })

/** Rows of the credential tables, whole, as text, that contain `value`. */
const rowsContaining = (value: string) =>
  SqlClient.SqlClient.use((sql) =>
    sql<{ readonly n: number }>`
      SELECT ((SELECT count(*) FROM msg_configs m WHERE m::text LIKE ${`%${value}%`})
        + (SELECT count(*) FROM webhooks w WHERE w::text LIKE ${`%${value}%`}))::int AS n`
  ).pipe(Effect.map((rows) => rows[0]!.n))

describe("secrets at rest in PostgreSQL", () => {
  it.live("leaves no credential in plain text in any column", () =>
    Effect.gen(function*() {
      const { plain } = yield* givenCredentials(true)
      for (const value of plain) assert.strictEqual(yield* rowsContaining(value), 0, "a credential stored in plain text")
      const columns = yield* SqlClient.SqlClient.use((sql) =>
        sql<{ readonly access_token: string; readonly app_secret: string }>`SELECT access_token, app_secret FROM msg_configs`
      )
      assert.match(columns[0]!.access_token, /^v1\./)
      assert.match(columns[0]!.app_secret, /^v1\./)
    }).pipe(Effect.provide(layerStorage.pipe(Layer.provideMerge(layerTestDatabase)))))

  const upgrade = (env: Record<string, string>, key: Layer.Layer<never>) =>
    Effect.gen(function*() {
      const url = yield* freshDatabase
      yield* Effect.gen(function*() {
        // As a host before 0017 stored them: the adapters keep what they are given.
        const { project, config, webhook, plain } = yield* givenCredentials(false)
        for (const value of plain) assert.strictEqual(yield* rowsContaining(value), 1)

        const environment = ConfigProvider.layer(ConfigProvider.fromEnvRecord(env))
        yield* migration0017.pipe(Effect.provide(environment))
        // Header values were sealed from 0027 on (issue 29 §4): the same key, the same scope.
        assert.strictEqual(yield* rowsContaining(webhook.headers.Authorization!), 1, "0017 leaves the headers")
        yield* migration0027.pipe(Effect.provide(environment))

        for (const value of plain) assert.strictEqual(yield* rowsContaining(value), 0, "a credential left in plain text")
        // The host, with the same key, reads them.
        const read = yield* Effect.provide(
          Effect.all([
            MessageConfigsRepo.use((r) => r.findById(project.id, config.id)),
            WebhooksRepo.use((r) => r.findById(project.id, webhook.id))
          ]),
          sealedRepos.pipe(Layer.provide(key))
        )
        const [storedConfig, storedWebhook] = [Option.getOrThrow(read[0]), Option.getOrThrow(read[1])]
        assert.deepStrictEqual(
          [
            Redacted.value(storedConfig.access_token),
            Redacted.value(storedConfig.app_secret!),
            Redacted.value(storedConfig.webhook_verify_token!),
            storedWebhook.secret_key,
            storedWebhook.headers.Authorization
          ],
          plain
        )
        assert.deepStrictEqual(storedWebhook.headers, webhook.headers)
      }).pipe(Effect.provide(layerStorage.pipe(Layer.provideMerge(layerFromUrl(url)))))
    })

  it.live("0017 and 0027 encrypt the credentials stored before them with the key stored in the database", () =>
    upgrade({}, Layer.empty))

  it.live("0017 and 0027 encrypt the credentials stored before them with PARLEY_SECRET_KEY", () =>
    upgrade(
      { PARLEY_SECRET_KEY: "an operator's key of 32 characters" },
      Layer.succeed(FunctionSecretKey, Redacted.make("an operator's key of 32 characters"))
    ))
})
