/**
 * The messaging network, as Parley asks things of it: send a message envelope,
 * mark read, media, templates, block lists, interactive-form metadata,
 * usernames, facts about numbers and the checks health needs; and `forward`
 * for any other edge, as given.
 *
 * Every call carries the credentials of the number (or business account) it
 * acts for: its access token, and the version segment to call (`v24.0`
 * unless the caller forwards another one, decisions §9). Ids are the network's
 * opaque ids.
 *
 * Answers come back as the network sent them: `status`, `contentType` and the
 * `body` bytes unchanged, plus a typed `value` decoded from them. A network
 * error object is the typed failure `NetworkRefused`, carrying the same three
 * plus the decoded `error`, so a pass-through caller forwards either without
 * touching a byte (`rawAnswer`). Only a network that could not be reached, or
 * that answered something that is not its own format, fails with
 * `NetworkUnavailable`.
 *
 * Adapters: `CloudApi` (HTTP to the real network, `messaging/CloudApi.ts`) and
 * the in-process simulator (`NetworkSimulator.layerMessagingNetwork`).
 */
import { Context, Effect, type Redacted, Schema } from "effect"
import type {
  BlockedUsersPage,
  BlockUsersAnswer,
  HealthStatusAnswer,
  MediaInfo,
  MediaUploaded,
  NetworkTemplate,
  PhoneNumberFacts,
  PhoneNumberPage,
  SendAnswer,
  SignupToken,
  SubscribedApps,
  SuccessAnswer,
  TemplateCreated,
  TemplatePage,
  UploadedAsset,
  UsernameAnswer,
  UsernameSuggestions
} from "./NetworkObjects.ts"
import { NetworkErrorDetail as NetworkErrorDetailSchema } from "./NetworkObjects.ts"

/** Who a call acts as. */
export interface NetworkAccess {
  /** The number's (or business account's) access token; never logged. */
  readonly accessToken: Redacted.Redacted<string>
  /** Version segment (`vNN.N`) forwarded as given; `v24.0` when absent. */
  readonly version?: string | undefined
}

/** A request body: bytes are forwarded unchanged, anything else is sent as its JSON. */
export type NetworkBody = Uint8Array | object

/** The network's answer as it sent it. */
export interface RawNetworkAnswer {
  readonly status: number
  readonly contentType: string
  readonly body: Uint8Array
}

/** A successful answer: the raw answer and its typed view. */
export interface NetworkAnswer<A> extends RawNetworkAnswer {
  readonly value: A
}

/** The network answered with its error object (decisions §7.3); `body` holds it byte for byte. */
export class NetworkRefused extends Schema.TaggedError<NetworkRefused>()("NetworkRefused", {
  status: Schema.Number,
  contentType: Schema.String,
  body: Schema.Uint8Array,
  error: NetworkErrorDetailSchema
}) {
  /** The network's error code (`131047`, `130429`, ...). */
  get code(): number {
    return this.error.code
  }
  override get message(): string {
    return `network refused (HTTP ${this.status}): ${this.error.message}`
  }
}

/**
 * The network could not be asked (`Transport`, `Timeout`), or answered
 * something that is not its format (`UnexpectedAnswer`: then `status` and
 * `body` hold what came back).
 */
export class NetworkUnavailable extends Schema.TaggedError<NetworkUnavailable>()("NetworkUnavailable", {
  reason: Schema.Literals(["Transport", "Timeout", "UnexpectedAnswer"]),
  detail: Schema.String,
  status: Schema.optionalKey(Schema.Number),
  contentType: Schema.optionalKey(Schema.String),
  body: Schema.optionalKey(Schema.Uint8Array)
}) {
  override get message(): string {
    return `network unavailable (${this.reason}): ${this.detail}`
  }
}

export type NetworkError = NetworkRefused | NetworkUnavailable

/** Query of a template list: the network's filters, forwarded as given. */
export interface TemplateQuery {
  readonly name?: string | undefined
  readonly status?: string | undefined
  readonly category?: string | undefined
  readonly language?: string | undefined
  readonly limit?: string | number | undefined
  readonly before?: string | undefined
  readonly after?: string | undefined
  readonly fields?: string | undefined
}

export interface PageQuery {
  readonly limit?: string | number | undefined
  readonly before?: string | undefined
  readonly after?: string | undefined
}

/** A file to upload. */
export interface MediaFile {
  readonly bytes: Uint8Array
  readonly mimeType: string
  readonly filename: string
}

/** An embedded-signup code and the app that exchanges it (decisions 2.13). */
export interface SignupCodeExchange {
  readonly appId: string
  readonly appSecret: Redacted.Redacted<string>
  readonly code: string
  /** The address the dialog returned to, when the dialog was opened with one (the network compares them). */
  readonly redirectUri?: string | undefined
  readonly version?: string | undefined
}

/** A request on an edge the port has no operation for: the proxy's pass-through, sent as given. */
export interface ForwardRequest {
  readonly method: "GET" | "POST" | "DELETE"
  /** After the version segment, unencoded segments joined by `/`: `<phone_number_id>/whatsapp_business_profile`. */
  readonly path: string
  readonly query?: URLSearchParams | string | undefined
  /** Sent byte for byte with `contentType` (default `application/json`); none when empty. */
  readonly body?: Uint8Array | undefined
  readonly contentType?: string | undefined
}

type Call<A> = Effect.Effect<NetworkAnswer<A>, NetworkError>

export class MessagingNetwork extends Context.Service<MessagingNetwork, {
  /** `POST /<phone_number_id>/messages`: any envelope (message or mark read), forwarded byte for byte. */
  readonly send: (access: NetworkAccess, phoneNumberId: string, envelope: NetworkBody) => Call<SendAnswer>
  /** Marks an inbound message (and the thread before it) read; `typingIndicator` also shows typing for up to 25 s. */
  readonly markRead: (
    access: NetworkAccess,
    phoneNumberId: string,
    input: { readonly messageId: string; readonly typingIndicator?: boolean | undefined }
  ) => Call<SuccessAnswer>

  /** `POST /<phone_number_id>/media` (multipart): answers the media id. */
  readonly uploadMedia: (access: NetworkAccess, phoneNumberId: string, file: MediaFile) => Call<MediaUploaded>
  /**
   * The resumable upload: `POST /app/uploads?file_name=&file_length=&file_type=` opens a session, `POST /<session
   * id>` with the bytes (offset 0) answers the asset handle `h` (template header examples take it).
   */
  readonly uploadAsset: (access: NetworkAccess, file: MediaFile) => Call<UploadedAsset>
  /** `GET /<media_id>`; with `phoneNumberId` the network also checks the media belongs to that number. */
  readonly getMedia: (
    access: NetworkAccess,
    mediaId: string,
    options?: { readonly phoneNumberId?: string | undefined }
  ) => Call<MediaInfo>
  readonly deleteMedia: (
    access: NetworkAccess,
    mediaId: string,
    options?: { readonly phoneNumberId?: string | undefined }
  ) => Call<SuccessAnswer>
  /**
   * Fetches the bytes behind a `MediaInfo.url` (bearer-only, short-lived).
   * Pass only addresses the network itself answered: the token goes with the request.
   */
  readonly downloadMedia: (access: NetworkAccess, url: string) => Call<Uint8Array>

  /** `GET /<waba_id>/message_templates` with the network's filters and paging. */
  readonly listTemplates: (access: NetworkAccess, businessAccountId: string, query?: TemplateQuery) => Call<TemplatePage>
  /** `GET /<template_id>`. */
  readonly getTemplate: (access: NetworkAccess, templateId: string) => Call<NetworkTemplate>
  /** `POST /<waba_id>/message_templates`: `name`, `category`, `language`, `components[]`. */
  readonly createTemplate: (access: NetworkAccess, businessAccountId: string, definition: NetworkBody) => Call<TemplateCreated>
  /** `POST /<template_id>` (the proxy's `?hsm_id=` edit). */
  readonly editTemplate: (access: NetworkAccess, templateId: string, definition: NetworkBody) => Call<SuccessAnswer>
  /** `DELETE /<waba_id>/message_templates?name=&hsm_id=`: `name` alone deletes every language. */
  readonly deleteTemplate: (
    access: NetworkAccess,
    businessAccountId: string,
    target: { readonly name?: string | undefined; readonly hsmId?: string | undefined }
  ) => Call<SuccessAnswer>

  /** `GET /<phone_number_id>/block_users`. */
  readonly listBlockedUsers: (access: NetworkAccess, phoneNumberId: string, query?: PageQuery) => Call<BlockedUsersPage>
  /** `POST /<phone_number_id>/block_users` with `{ messaging_product, block_users: [{ user }] }`. */
  readonly blockUsers: (access: NetworkAccess, phoneNumberId: string, body: NetworkBody) => Call<BlockUsersAnswer>
  /** `DELETE /<phone_number_id>/block_users`, same body. */
  readonly unblockUsers: (access: NetworkAccess, phoneNumberId: string, body: NetworkBody) => Call<BlockUsersAnswer>

  /** `POST /<flow_id>`: interactive form metadata (`name`, `categories`, `endpoint_uri`, `application_id`). */
  readonly updateFlowMetadata: (access: NetworkAccess, flowId: string, body: NetworkBody) => Call<SuccessAnswer>

  /** `GET /<phone_number_id>/username`. */
  readonly getUsername: (access: NetworkAccess, phoneNumberId: string) => Call<UsernameAnswer>
  /** `POST /<phone_number_id>/username` with `{ username, transfer_action? }`. */
  readonly setUsername: (access: NetworkAccess, phoneNumberId: string, body: NetworkBody) => Call<UsernameAnswer>
  /** `DELETE /<phone_number_id>/username`. */
  readonly deleteUsername: (access: NetworkAccess, phoneNumberId: string) => Call<SuccessAnswer>
  /** `GET /<phone_number_id>/username_suggestions`. */
  readonly usernameSuggestions: (access: NetworkAccess, phoneNumberId: string) => Call<UsernameSuggestions>

  /** `GET /<phone_number_id>?fields=...`: `PhoneNumberFields` unless other fields are asked. Also the access check. */
  readonly getPhoneNumber: (
    access: NetworkAccess,
    phoneNumberId: string,
    options?: { readonly fields?: ReadonlyArray<string> | undefined }
  ) => Call<PhoneNumberFacts>
  /** `GET /<waba_id>/phone_numbers`: the account's numbers with `PhoneNumberFields`. */
  readonly listPhoneNumbers: (access: NetworkAccess, businessAccountId: string) => Call<PhoneNumberPage>
  /** `GET /<phone_number_id>?fields=health_status`: can the number send, and what limits it. */
  readonly getHealthStatus: (access: NetworkAccess, phoneNumberId: string) => Call<HealthStatusAnswer>
  /** `GET /<waba_id>/subscribed_apps`: is an app subscribed to the account's webhooks. */
  readonly listSubscribedApps: (access: NetworkAccess, businessAccountId: string) => Call<SubscribedApps>
  /** `POST /<waba_id>/subscribed_apps`, optionally overriding the callback for this account. */
  readonly subscribeApp: (
    access: NetworkAccess,
    businessAccountId: string,
    options?: { readonly overrideCallbackUri?: string | undefined; readonly verifyToken?: string | undefined }
  ) => Call<SuccessAnswer>
  /** `DELETE /<waba_id>/subscribed_apps`. */
  readonly unsubscribeApp: (access: NetworkAccess, businessAccountId: string) => Call<SuccessAnswer>

  /**
   * `GET oauth/access_token?client_id=&client_secret=&code=`: the token a
   * customer's embedded signup granted. Authenticated by the app, not a bearer token.
   */
  readonly exchangeSignupCode: (exchange: SignupCodeExchange) => Call<SignupToken>
  /**
   * `POST /<phone_number_id>` with `{ new_display_name }`: submits a display name change for review; where it
   * stands is read back from the number's `new_display_name`, `new_name_status` and `verified_name` fields.
   */
  readonly requestDisplayName: (access: NetworkAccess, phoneNumberId: string, newDisplayName: string) => Call<SuccessAnswer>
  /** `POST /<phone_number_id>/deregister`: gives the number up (a provisioned number goes back to the network). */
  readonly releaseNumber: (access: NetworkAccess, phoneNumberId: string) => Call<SuccessAnswer>

  /** Any other request, answered as the network sent it: the `value` is the answer's bytes. */
  readonly forward: (access: NetworkAccess, request: ForwardRequest) => Call<Uint8Array>
}>()("@parley/core/ports/MessagingNetwork") {}

/**
 * The network's answer as bytes, whether it accepted or refused: what a
 * pass-through route forwards. Fails only when nothing came back from the
 * network (transport failure or timeout).
 */
export const rawAnswer = <A, R>(
  call: Effect.Effect<NetworkAnswer<A>, NetworkError, R>
): Effect.Effect<RawNetworkAnswer, NetworkUnavailable, R> =>
  call.pipe(
    Effect.map(({ body, contentType, status }): RawNetworkAnswer => ({ status, contentType, body })),
    Effect.catchTag("NetworkRefused", ({ body, contentType, status }) => Effect.succeed({ status, contentType, body })),
    Effect.catchTag("NetworkUnavailable", (error) =>
      error.status !== undefined && error.body !== undefined
        ? Effect.succeed({ status: error.status, contentType: error.contentType ?? "", body: error.body })
        : Effect.fail(error))
  )

