/**
 * Request decode failures in the spec's error shape: unparsable JSON or a
 * missing envelope answer 400, any other field 422 naming its path. A
 * response that fails to encode is our bug: 500, detail in the log only.
 */
import { BadRequest, InternalError, RequestErrors, Unprocessable } from "@parley/core"
import { Effect, SchemaIssue } from "effect"
import { HttpApiMiddleware } from "effect/http-api"

/** Keys that wrap a resource in write bodies (decisions 1.1). */
const ENVELOPES = new Set([
  "workflow",
  "flow",
  "workflow_execution",
  "trigger",
  "triggers",
  "function",
  "secret",
  "msg_webhook",
  "customer",
  "setup_link",
  "msg_config",
  "display_name_request",
  "inbox_embed",
  "msg_broadcast",
  "media_ingest",
  "msg_conversation"
])

const formatter = SchemaIssue.makeFormatterStandardSchemaV1()

const pathOf = (path: ReadonlyArray<unknown>) =>
  path.map((p, i) => typeof p === "number" ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`).join("")

export const RequestErrorsLive = HttpApiMiddleware.layerSchemaErrorTransform(
  RequestErrors,
  (error) =>
    Effect.gen(function*() {
      if (error.kind === "Body" || error.kind === "ResponseHeaders") {
        yield* Effect.logError("Response failed to encode", error.cause)
        return yield* new InternalError({ error: "Internal server error" })
      }
      const issues = formatter(error.cause.issue).issues
      const first = issues[0]
      if (error.kind === "Payload" && first !== undefined) {
        const path = first.path ?? []
        const top = path[0]
        if (path.length === 1 && typeof top === "string" && ENVELOPES.has(top) && first.message === "Missing key") {
          return yield* new BadRequest({ error: `Missing ${top} envelope in the request body`, code: "missing_envelope" })
        }
        if (path.length === 0) {
          return yield* new BadRequest({ error: "Request body must be a JSON object", code: "invalid_body" })
        }
      }
      const details = issues.map((issue) => ({
        path: issue.path === undefined || issue.path.length === 0 ? error.kind.toLowerCase() : pathOf(issue.path),
        message: issue.message
      }))
      const head = details[0]
      return yield* new Unprocessable({
        error: head === undefined ? "Invalid request" : `${head.path}: ${head.message}`,
        details
      })
    })
)
