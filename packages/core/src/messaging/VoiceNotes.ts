/**
 * Voice notes (issue 18 §1): an inbound audio message gets `ext.transcript`
 * (and the transcript in `ext.content`) from the transcription model, a
 * declared provider model whose endpoint answers `/audio/transcriptions`.
 * Off the ingestion path: recording the message queues a job
 * (`ai.voice-transcript`); the job reads Parley's copy of the file, asks the
 * model and updates the message. A message recorded while no model is
 * configured keeps no transcript.
 */
import { Clock, Config, Context, Effect, Layer, Option, Schema } from "effect"
import { decodingPayload, JobQueue } from "../ports/JobQueue.ts"
import { LanguageModels } from "../ai/LanguageModels.ts"
import { MediaRepo, MessagesRepo } from "./MessagingRepo.ts"
import type { MessageRecord } from "./Message.ts"
import { UpstreamMode } from "../network/UpstreamMode.ts"
import { ProviderModels } from "../ai/ProviderModels.ts"
import { SimulatedModelName } from "../ai/ProviderModel.ts"

export const VOICE_TRANSCRIPT_QUEUE = "ai.voice-transcript"

/** The provider model name that transcribes voice notes (`PARLEY_TRANSCRIPTION_MODEL`); null: none. */
export const TranscriptionModel = Context.Reference<string | null>("@parley/core/ai/TranscriptionModel", {
  defaultValue: () => null
})

/**
 * `TranscriptionModel` from `PARLEY_TRANSCRIPTION_MODEL` (empty: none); unset, `parley-sim` in simulator mode
 * (`PARLEY_UPSTREAM`), else none.
 */
export const layerTranscriptionModelConfig = Layer.effect(
  TranscriptionModel,
  Effect.gen(function*() {
    const configured = yield* Config.option(Config.String("PARLEY_TRANSCRIPTION_MODEL"))
    if (Option.isSome(configured)) return configured.value.trim() === "" ? null : configured.value.trim()
    return (yield* UpstreamMode) === "simulator" ? SimulatedModelName : null
  })
)

const TranscriptJob = Schema.Struct({ project_id: Schema.String, message_id: Schema.String })
type TranscriptJob = typeof TranscriptJob.Type

/** Queues the transcript of `message` when it is an inbound audio message with a stored file and a model is set. */
export const requestTranscript = (jobs: JobQueue["Service"], model: string | null, message: MessageRecord) =>
  model === null || message.direction !== "inbound" || message.type !== "audio" || message.media === null
    ? Effect.void
    : Effect.asVoid(jobs.enqueue(
      VOICE_TRANSCRIPT_QUEUE,
      { project_id: message.project_id, message_id: message.id } satisfies TranscriptJob,
      { dedupeKey: message.id, retryLimit: 5, retryDelayMs: 5_000 }
    ))

/** The job's consumer, for as long as the layer lives; the model is looked up by name at each job. */
export const layerVoiceNoteWorkers = Layer.effectDiscard(Effect.gen(function*() {
  const jobs = yield* JobQueue
  const messages = yield* MessagesRepo
  const media = yield* MediaRepo
  const models = yield* ProviderModels
  const languageModels = yield* LanguageModels
  const modelName = yield* TranscriptionModel

  const transcribe = (job: TranscriptJob) =>
    Effect.gen(function*() {
      if (modelName === null) return
      const message = yield* messages.findById(job.project_id, job.message_id)
      if (Option.isNone(message) || message.value.transcript !== null || message.value.media === null) return
      const file = yield* media.find(job.project_id, message.value.media.id)
      if (Option.isNone(file)) return
      const model = yield* models.find({ name: modelName })
      if (Option.isNone(model)) {
        return yield* Effect.logWarning("The transcription model is not declared; voice note kept without a transcript").pipe(
          Effect.annotateLogs({ model: modelName, message_id: job.message_id })
        )
      }
      const transcript = yield* languageModels.transcribe(model.value.endpoint, {
        bytes: file.value.bytes,
        mimeType: file.value.content_type,
        filename: file.value.filename
      })
      // Read again: the message may have changed (statuses) while the model answered.
      const current = yield* messages.findById(job.project_id, job.message_id)
      if (Option.isNone(current) || current.value.transcript !== null) return
      const content = [current.value.content, `Transcript: ${transcript}`].filter((l) => l !== null && l !== "").join("\n")
      yield* messages.update({
        ...current.value,
        transcript,
        content,
        updated_at: new Date(yield* Clock.currentTimeMillis).toISOString()
      })
    })

  yield* jobs.work(VOICE_TRANSCRIPT_QUEUE, { concurrency: 2 }, decodingPayload(TranscriptJob, transcribe))
}))
