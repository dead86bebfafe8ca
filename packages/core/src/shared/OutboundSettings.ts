/** The operator's webhook settings, from the environment by default. */
import { Config, Context, Effect, Layer } from "effect"

export class WebhookSettings extends Context.Service<WebhookSettings, {
  /**
   * Private, loopback and link-local targets (and plain `http`) are allowed:
   * local development and tests only (`PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS=true`).
   */
  readonly allowPrivateUrls: boolean
}>()("@parley/core/webhooks/WebhookSettings") {
  static readonly layer = (settings: { readonly allowPrivateUrls: boolean }) =>
    Layer.succeed(WebhookSettings, WebhookSettings.of(settings))

  static readonly layerConfig = Layer.effect(
    WebhookSettings,
    Effect.gen(function*() {
      const allowPrivateUrls = yield* Config.Boolean("PARLEY_ALLOW_PRIVATE_WEBHOOK_URLS").pipe(Config.withDefault(false))
      return WebhookSettings.of({ allowPrivateUrls })
    })
  ).pipe(Layer.orDie)
}
