/**
 * `LanguageModels` over any OpenAI-compatible endpoint (OpenAI, OpenRouter,
 * Ollama, vLLM, LM Studio, the model simulator): effect/ai's own
 * `LanguageModel.make` with the chat-completions wire format at
 * `<base_url>/chat/completions` (plain and `stream: true` server-sent
 * events), and `<base_url>/audio/transcriptions` for voice notes.
 *
 * The key is read at call time from the environment variable the model's
 * endpoint names (`Config.Redacted`), sent as a bearer token and never put in
 * an error: errors carry the status and the endpoint's own message.
 */
import { Config, ConfigProvider, Effect, Layer, Option, Redacted, Schema, Stream } from "effect"
import { AiError, LanguageModel, type Prompt, type Response, Tool } from "effect/ai"
import { Base64, Sse } from "effect/encoding"
import { HttpClient, HttpClientRequest, type HttpClientResponse } from "effect/http"
import { type AudioInput, LanguageModels, ModelCallSettings } from "./LanguageModels.ts"
import type { ModelEndpoint } from "./ProviderModel.ts"

const Module = "OpenAiCompatible"

// ---------------------------------------------------------------------------
// Wire format (only what Parley reads; other fields are ignored)
// ---------------------------------------------------------------------------

const Usage = Schema.Struct({
  prompt_tokens: Schema.optionalKey(Schema.Number),
  completion_tokens: Schema.optionalKey(Schema.Number),
  prompt_tokens_details: Schema.optionalKey(Schema.NullOr(Schema.Struct({ cached_tokens: Schema.optionalKey(Schema.Number) }))),
  completion_tokens_details: Schema.optionalKey(
    Schema.NullOr(Schema.Struct({ reasoning_tokens: Schema.optionalKey(Schema.Number) }))
  )
})
type Usage = typeof Usage.Type

const ChatCompletion = Schema.Struct({
  id: Schema.optionalKey(Schema.String),
  model: Schema.optionalKey(Schema.String),
  choices: Schema.Array(Schema.Struct({
    message: Schema.Struct({
      content: Schema.optionalKey(Schema.NullOr(Schema.String)),
      tool_calls: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.Struct({
        id: Schema.String,
        function: Schema.Struct({ name: Schema.String, arguments: Schema.String })
      }))))
    }),
    finish_reason: Schema.optionalKey(Schema.NullOr(Schema.String))
  })),
  usage: Schema.optionalKey(Schema.NullOr(Usage))
})

const ChatCompletionChunk = Schema.Struct({
  id: Schema.optionalKey(Schema.String),
  model: Schema.optionalKey(Schema.String),
  choices: Schema.Array(Schema.Struct({
    delta: Schema.optionalKey(Schema.NullOr(Schema.Struct({
      content: Schema.optionalKey(Schema.NullOr(Schema.String)),
      tool_calls: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.Struct({
        index: Schema.Number,
        id: Schema.optionalKey(Schema.NullOr(Schema.String)),
        function: Schema.optionalKey(Schema.NullOr(Schema.Struct({
          name: Schema.optionalKey(Schema.NullOr(Schema.String)),
          arguments: Schema.optionalKey(Schema.NullOr(Schema.String))
        })))
      }))))
    }))),
    finish_reason: Schema.optionalKey(Schema.NullOr(Schema.String))
  })),
  usage: Schema.optionalKey(Schema.NullOr(Usage))
})

const Transcription = Schema.Struct({ text: Schema.String })

/** `{ "error": { "message": ... } }` (OpenAI and most servers) or `{ "error": "..." }` (Ollama). */
const ErrorBody = Schema.Struct({
  error: Schema.Union([Schema.String, Schema.Struct({ message: Schema.String })])
})

const decodeCompletion = Schema.decodeUnknownEffect(Schema.fromJsonString(ChatCompletion))
const decodeChunk = Schema.decodeUnknownEffect(Schema.fromJsonString(ChatCompletionChunk))
const decodeTranscription = Schema.decodeUnknownEffect(Schema.fromJsonString(Transcription))
const decodeErrorBody = Schema.decodeUnknownOption(Schema.fromJsonString(ErrorBody))

// ---------------------------------------------------------------------------
// Prompt and tools → request
// ---------------------------------------------------------------------------

const jsonText = (value: unknown): string => (typeof value === "string" ? value : JSON.stringify(value) ?? "null")

const dataUrl = (mediaType: string, data: Uint8Array | string) =>
  `data:${mediaType};base64,${typeof data === "string" ? data : Base64.encode(data)}`

/**
 * A file of a user message: an image (or a URL of unknown type) as `image_url`, other bytes as a `file` part; a
 * non-image URL, which chat completions cannot fetch as a file, as a text line naming it.
 */
const filePart = (p: Prompt.FilePart): Record<string, unknown> => {
  const isImage = p.mediaType.startsWith("image/")
  if (p.data instanceof URL) {
    return isImage || p.mediaType === "application/octet-stream"
      ? { type: "image_url", image_url: { url: p.data.toString() } }
      : { type: "text", text: `[file: ${p.data.toString()}]` }
  }
  if (isImage) return { type: "image_url", image_url: { url: dataUrl(p.mediaType, p.data) } }
  return { type: "file", file: { filename: p.fileName ?? "file", file_data: dataUrl(p.mediaType, p.data) } }
}

/** Prompt messages as chat-completions messages. */
export const toMessages = (prompt: Prompt.Prompt): Array<Record<string, unknown>> => {
  const messages: Array<Record<string, unknown>> = []
  for (const message of prompt.content) {
    switch (message.role) {
      case "system":
        messages.push({ role: "system", content: message.content })
        break
      case "user": {
        const files = message.content.some((p) => p.type === "file")
        // Text alone is one string; with files, the parts in order (vision and file inputs).
        const content = files
          ? message.content.map((p) => (p.type === "text" ? { type: "text", text: p.text } : filePart(p)))
          : message.content.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("\n")
        messages.push({ role: "user", content })
        break
      }
      case "assistant": {
        const text = message.content.flatMap((p) => (p.type === "text" ? [p.text] : [])).join("")
        const calls = message.content.flatMap((p) =>
          p.type === "tool-call" && !p.providerExecuted
            ? [{ id: p.id, type: "function", function: { name: p.name, arguments: JSON.stringify(p.params ?? {}) } }]
            : []
        )
        messages.push({ role: "assistant", content: text === "" ? null : text, ...(calls.length > 0 ? { tool_calls: calls } : {}) })
        break
      }
      case "tool":
        for (const part of message.content) {
          if (part.type === "tool-result") messages.push({ role: "tool", tool_call_id: part.id, content: jsonText(part.result) })
        }
        break
    }
  }
  return messages
}

const toolChoiceOf = (
  choice: LanguageModel.ProviderOptions["toolChoice"],
  tools: ReadonlyArray<Tool.Any>
): { readonly tools: ReadonlyArray<Tool.Any>; readonly tool_choice: unknown } => {
  if (typeof choice === "string") return { tools, tool_choice: choice }
  if ("tool" in choice) return { tools, tool_choice: { type: "function", function: { name: choice.tool } } }
  // A subset: offer only those tools.
  return { tools: tools.filter((t) => choice.oneOf.includes(t.name)), tool_choice: choice.mode ?? "auto" }
}

/** The request body of one call, with the call settings of the caller's context. */
export const requestBody = (
  upstreamModel: string,
  options: LanguageModel.ProviderOptions,
  settings: ModelCallSettings,
  stream: boolean
): Record<string, unknown> => {
  const userTools = options.tools.filter((t) => !Tool.isProviderDefined(t))
  const choice = toolChoiceOf(options.toolChoice, userTools)
  return {
    model: upstreamModel,
    messages: toMessages(options.prompt),
    ...(choice.tools.length > 0
      ? {
        tools: choice.tools.map((t) => ({
          type: "function",
          function: { name: t.name, description: t.description ?? "", parameters: Tool.getJsonSchema(t) }
        })),
        tool_choice: choice.tool_choice
      }
      : {}),
    ...(options.responseFormat.type === "json" ? { response_format: { type: "json_object" } } : {}),
    ...(settings.temperature !== undefined ? { temperature: settings.temperature } : {}),
    ...(settings.maxTokens !== undefined ? { max_tokens: settings.maxTokens } : {}),
    // `promptCacheTtl` has no chat-completions field: OpenAI-compatible endpoints cache prompts on their own.
    ...(settings.reasoningEffort !== undefined ? { reasoning_effort: settings.reasoningEffort } : {}),
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {})
  }
}

// ---------------------------------------------------------------------------
// Response → parts
// ---------------------------------------------------------------------------

const finishReason = (reason: string | null | undefined): Response.FinishReason => {
  switch (reason) {
    case "stop":
      return "stop"
    case "length":
      return "length"
    case "tool_calls":
    case "function_call":
      return "tool-calls"
    case "content_filter":
      return "content-filter"
    case null:
    case undefined:
      return "unknown"
    default:
      return "other"
  }
}

const usageOf = (usage: Usage | null | undefined) => ({
  inputTokens: {
    total: usage?.prompt_tokens,
    cacheRead: usage?.prompt_tokens_details?.cached_tokens
  },
  outputTokens: {
    total: usage?.completion_tokens,
    reasoning: usage?.completion_tokens_details?.reasoning_tokens
  }
})

// ---------------------------------------------------------------------------
// The adapter
// ---------------------------------------------------------------------------

const fail = (method: string, reason: AiError.AiErrorReason) => AiError.make({ module: Module, method, reason })

const invalidResponse = (method: string, url: string, what: string) =>
  fail(method, new AiError.InvalidResponseError({ description: `${url}: ${what}` }))

/** The endpoint's own message for a failed call, without anything of the request. */
const endpointMessage = (body: string): string => {
  const decoded = decodeErrorBody(body)
  if (Option.isSome(decoded)) return typeof decoded.value.error === "string" ? decoded.value.error : decoded.value.error.message
  return body.slice(0, 300)
}

export const make = Effect.gen(function*() {
  const http = yield* HttpClient.HttpClient
  // Keys come from the configuration the adapter was built in (the host's environment), read again at every call.
  const configuration = yield* ConfigProvider.ConfigProvider

  /** `Authorization: Bearer` from the endpoint's variable, read now; a missing one names the variable. */
  const authorize = (method: string, endpoint: ModelEndpoint, request: HttpClientRequest.HttpClientRequest) => {
    const variable = endpoint.api_key_env
    if (variable === null) return Effect.succeed(request)
    const missing = fail(method, new AiError.AuthenticationError({ kind: "MissingKey", description: `environment variable ${variable} is not set` }))
    return Config.Redacted(variable).pipe(
      Effect.provideService(ConfigProvider.ConfigProvider, configuration),
      Effect.mapError(() => missing),
      Effect.flatMap((key) =>
        Redacted.value(key) === "" ? Effect.fail(missing) : Effect.succeed(HttpClientRequest.bearerToken(request, Redacted.value(key))))
    )
  }

  /** Sends the request; any status ≥ 400 fails with the status and the endpoint's message. */
  const send = (method: string, endpoint: ModelEndpoint, url: string, request: HttpClientRequest.HttpClientRequest) =>
    authorize(method, endpoint, request).pipe(
      Effect.flatMap((authorized) => http.execute(authorized)),
      Effect.catchTag("HttpClientError", (error) =>
        // The message names the method and the URL, never a header; the error itself (holding the request) stays here.
        Effect.fail(fail(method, new AiError.NetworkError({ reason: "TransportError", method: "POST", url, description: error.message })))),
      Effect.flatMap((response: HttpClientResponse.HttpClientResponse) =>
        response.status < 400 ? Effect.succeed(response) : Effect.flatMap(
          Effect.orElseSucceed(response.text, () => ""),
          (body) =>
            Effect.fail(fail(
              method,
              AiError.reasonFromHttpStatus({
                status: response.status,
                description: `HTTP ${response.status} from POST ${url}: ${endpointMessage(body)}`
              })
            ))
        ))
    )

  const readText = (method: string, url: string, response: HttpClientResponse.HttpClientResponse) =>
    Effect.mapError(response.text, () => invalidResponse(method, url, "the answer could not be read"))

  const languageModel = (endpoint: ModelEndpoint) => {
    const url = `${endpoint.base_url}/chat/completions`
    const post = (method: string, options: LanguageModel.ProviderOptions, stream: boolean) =>
      Effect.flatMap(Effect.service(ModelCallSettings), (settings) =>
        send(
          method,
          endpoint,
          url,
          HttpClientRequest.post(url).pipe(
            HttpClientRequest.bodyJsonUnsafe(requestBody(endpoint.upstream_model, options, settings, stream)),
            HttpClientRequest.acceptJson
          )
        ))

    const toolCall = (method: string, id: string, name: string, args: string) =>
      Effect.try({
        try: (): Response.ToolCallPartEncoded => ({ type: "tool-call", id, name, params: args.trim() === "" ? {} : JSON.parse(args) }),
        catch: () => invalidResponse(method, url, `the arguments of tool call ${id} (${name}) are not JSON`)
      })

    const generateText = (options: LanguageModel.ProviderOptions) =>
      Effect.gen(function*() {
        const response = yield* post("generateText", options, false)
        const text = yield* readText("generateText", url, response)
        const completion = yield* Effect.mapError(
          decodeCompletion(text),
          (e) => invalidResponse("generateText", url, `not a chat completion (${e.message})`)
        )
        const parts: Array<Response.PartEncoded> = [{
          type: "response-metadata",
          id: completion.id,
          modelId: completion.model
        }]
        const choice = completion.choices[0]
        if (choice === undefined) return yield* invalidResponse("generateText", url, "no choices in the answer")
        const content = choice.message.content
        if (typeof content === "string" && content !== "") parts.push({ type: "text", text: content })
        for (const call of choice.message.tool_calls ?? []) {
          parts.push(yield* toolCall("generateText", call.id, call.function.name, call.function.arguments))
        }
        parts.push({ type: "finish", reason: finishReason(choice.finish_reason), usage: usageOf(completion.usage) })
        return parts
      })

    const streamText = (options: LanguageModel.ProviderOptions): Stream.Stream<Response.StreamPartEncoded, AiError.AiError> =>
      Stream.unwrap(Effect.map(post("streamText", options, true), (response) => {
        let started = false
        let textOpen = false
        let reason: string | null | undefined = undefined
        let usage: Usage | null | undefined = undefined
        const calls = new Map<number, { id: string; name: string; args: string }>()

        const onChunk = (data: string): Effect.Effect<ReadonlyArray<Response.StreamPartEncoded>, AiError.AiError> =>
          data.trim() === "[DONE]" ? Effect.succeed([]) : Effect.map(
            Effect.mapError(decodeChunk(data), (e) => invalidResponse("streamText", url, `not a chat completion chunk (${e.message})`)),
            (chunk) => {
              const out: Array<Response.StreamPartEncoded> = []
              if (!started) {
                started = true
                out.push({ type: "response-metadata", id: chunk.id, modelId: chunk.model })
              }
              if (chunk.usage !== undefined && chunk.usage !== null) usage = chunk.usage
              const choice = chunk.choices[0]
              if (choice === undefined) return out
              if (choice.finish_reason !== undefined && choice.finish_reason !== null) reason = choice.finish_reason
              const content = choice.delta?.content
              if (typeof content === "string" && content !== "") {
                if (!textOpen) {
                  textOpen = true
                  out.push({ type: "text-start", id: "0" })
                }
                out.push({ type: "text-delta", id: "0", delta: content })
              }
              for (const delta of choice.delta?.tool_calls ?? []) {
                const call = calls.get(delta.index) ?? { id: "", name: "", args: "" }
                if (typeof delta.id === "string") call.id = delta.id
                if (typeof delta.function?.name === "string") call.name += delta.function.name
                if (typeof delta.function?.arguments === "string") call.args += delta.function.arguments
                calls.set(delta.index, call)
              }
              return out
            }
          )

        // Tool calls are complete only at the end of the stream: they come out whole, then the finish.
        const ending = Effect.gen(function*() {
          const out: Array<Response.StreamPartEncoded> = []
          if (textOpen) out.push({ type: "text-end", id: "0" })
          for (const [, call] of [...calls].sort(([a], [b]) => a - b)) {
            out.push(yield* toolCall("streamText", call.id, call.name, call.args))
          }
          out.push({ type: "finish", reason: finishReason(reason), usage: usageOf(usage) })
          return out
        })

        return response.stream.pipe(
          Stream.decodeText(),
          Stream.pipeThroughChannel(Sse.decode()),
          Stream.mapError(() => invalidResponse("streamText", url, "the event stream broke off")),
          Stream.mapEffect((event) => onChunk(event.data)),
          Stream.concat(Stream.fromEffect(ending)),
          Stream.flatMap((parts) => Stream.fromIterable(parts))
        )
      }))

    return LanguageModel.make({ generateText, streamText })
  }

  const transcribe = (endpoint: ModelEndpoint, audio: AudioInput) =>
    Effect.gen(function*() {
      const url = `${endpoint.base_url}/audio/transcriptions`
      const form = new FormData()
      form.append("model", endpoint.upstream_model)
      form.append("file", new Blob([new Uint8Array(audio.bytes)], { type: audio.mimeType }), audio.filename)
      const response = yield* send(
        "transcribe",
        endpoint,
        url,
        HttpClientRequest.post(url).pipe(HttpClientRequest.bodyFormData(form), HttpClientRequest.acceptJson)
      )
      const body = yield* readText("transcribe", url, response)
      const decoded = yield* Effect.mapError(
        decodeTranscription(body),
        (e) => invalidResponse("transcribe", url, `not a transcription (${e.message})`)
      )
      return decoded.text
    })

  return LanguageModels.of({ languageModel, transcribe })
})

/** The adapter over the `HttpClient` the caller provides (`NodeHttpClient` in the host). */
export const layer: Layer.Layer<LanguageModels, never, HttpClient.HttpClient> = Layer.effect(LanguageModels, make)
