/**
 * Function secrets at rest: AES-256-GCM (node:crypto) under a host key.
 *
 * The key comes from `PARLEY_SECRET_KEY` (`FunctionSecretKey`), any string of
 * at least 16 characters, stretched with HKDF-SHA256. Without it, a random
 * key is generated on first use and stored in the database
 * (`SecretKeyStore`, which the functions store answers), shared by every host on that database: values
 * then never appear in clear in the database, its dumps or logs, but someone
 * holding the whole database holds the key too. Setting `PARLEY_SECRET_KEY`
 * keeps the key out of the database.
 *
 * A ciphertext is `v1.<key id>.<iv>.<tag>.<data>` (base64url), bound to its
 * function and secret name (GCM additional data): a value copied to another
 * function or name does not decrypt.
 */
import { Config, Context, Data, Effect, Layer, Option, Redacted } from "effect"
import * as Crypto from "node:crypto"

/** The configured key material (`PARLEY_SECRET_KEY`), or undefined for the stored one. */
export class FunctionSecretKey extends Context.Reference<Redacted.Redacted<string> | undefined>(
  "@parley/core/functions/FunctionSecretKey",
  { defaultValue: () => undefined }
) {
  /** From `PARLEY_SECRET_KEY`; unset or empty leaves the stored key in charge. */
  static readonly layerConfig = Layer.effect(FunctionSecretKey, Effect.suspend(() => configuredSecretKey))
}

/** `PARLEY_SECRET_KEY`, or undefined when unset or empty (also read by migrations that encrypt). */
export const configuredSecretKey: Effect.Effect<Redacted.Redacted<string> | undefined> = Effect.gen(function*() {
  const key = yield* Config.option(Config.Redacted("PARLEY_SECRET_KEY"))
  return Option.getOrUndefined(Option.filter(key, (k) => Redacted.value(k).length > 0))
}).pipe(Effect.orDie)

export const SECRET_KEY_MIN_LENGTH = 16

/** A value that cannot be decrypted: another key, or tampered data. */
export class SecretDecryptError extends Data.TaggedError("SecretDecryptError")<{ readonly message: string }> {}

export interface SecretCipher {
  /** Short fingerprint of the key, written into every ciphertext. */
  readonly keyId: string
  readonly encrypt: (functionId: string, name: string, plaintext: string) => string
  readonly decrypt: (functionId: string, name: string, ciphertext: string) => Effect.Effect<string, SecretDecryptError>
}

const additionalData = (functionId: string, name: string) => Buffer.from(`${functionId}\u0000${name}`, "utf8")

/** A cipher over key material (the configured string, or a stored random key). */
export const makeSecretCipher = (material: string): SecretCipher => {
  if (material.length < SECRET_KEY_MIN_LENGTH) {
    throw new Error(`PARLEY_SECRET_KEY must be at least ${SECRET_KEY_MIN_LENGTH} characters`)
  }
  const key = Buffer.from(Crypto.hkdfSync("sha256", Buffer.from(material, "utf8"), "parley", "function-secrets", 32))
  const keyId = Crypto.createHash("sha256").update(key).digest("hex").slice(0, 12)
  return {
    keyId,
    encrypt: (functionId, name, plaintext) => {
      const iv = Crypto.randomBytes(12)
      const cipher = Crypto.createCipheriv("aes-256-gcm", key, iv)
      cipher.setAAD(additionalData(functionId, name))
      const data = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
      return ["v1", keyId, iv.toString("base64url"), cipher.getAuthTag().toString("base64url"), data.toString("base64url")]
        .join(".")
    },
    decrypt: (functionId, name, ciphertext) =>
      Effect.suspend(() => {
        const [version, id, iv, tag, data] = ciphertext.split(".")
        if (version !== "v1" || iv === undefined || tag === undefined || data === undefined) {
          return Effect.fail(new SecretDecryptError({ message: "unreadable secret ciphertext" }))
        }
        if (id !== keyId) {
          return Effect.fail(
            new SecretDecryptError({ message: `secret encrypted with another key (${id}); this host's key is ${keyId}` })
          )
        }
        try {
          const decipher = Crypto.createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"))
          decipher.setAAD(additionalData(functionId, name))
          decipher.setAuthTag(Buffer.from(tag, "base64url"))
          const plain = Buffer.concat([decipher.update(Buffer.from(data, "base64url")), decipher.final()])
          return Effect.succeed(plain.toString("utf8"))
        } catch {
          return Effect.fail(new SecretDecryptError({ message: "secret failed authentication" }))
        }
      })
  }
}

/**
 * Where the generated host key is kept when none is configured: `secretKey(candidate)` stores the candidate unless a
 * key is stored already, and answers the stored one (so every host on a database agrees). `Parley.ts` answers it
 * from the functions store, which has kept it since functions had the only secrets.
 */
export class SecretKeyStore extends Context.Service<SecretKeyStore, {
  readonly secretKey: (candidate: string) => Effect.Effect<string>
}>()("@parley/core/shared/SecretKeyStore") {}

/** A fresh random key (stored as the host key when none is configured). */
export const generateSecretKeyMaterial = Effect.sync(() => Crypto.randomBytes(32).toString("base64url"))

/**
 * The host's cipher: over `FunctionSecretKey` when configured (checked when
 * the layer is built, so a short key stops the host at start), otherwise
 * over the key stored through `SecretKeyStore`, read on first use.
 */
export class FunctionSecretsCipher extends Context.Service<FunctionSecretsCipher, {
  readonly cipher: Effect.Effect<SecretCipher>
}>()("@parley/core/functions/FunctionSecretsCipher") {
  static readonly layer = Layer.effect(
    FunctionSecretsCipher,
    Effect.gen(function*() {
      const repo = yield* SecretKeyStore
      const configured = yield* FunctionSecretKey
      let current: SecretCipher | undefined = configured === undefined
        ? undefined
        : yield* Effect.try({
          try: () => makeSecretCipher(Redacted.value(configured)),
          catch: (error) => error
        }).pipe(Effect.orDie)
      const cipher = Effect.suspend(() =>
        current !== undefined
          ? Effect.succeed(current)
          : Effect.map(Effect.flatMap(generateSecretKeyMaterial, repo.secretKey), (material) => {
            current = makeSecretCipher(material)
            return current
          })
      )
      return FunctionSecretsCipher.of({ cipher })
    })
  )
}
