/**
 * `parley test <files...>`: runs conversation scripts (JSON or YAML, see
 * docs/testing.md) against the workflow definitions they name, on memory
 * ports with a test clock: no database and no host, so any CI can run it.
 * Exit status 0 when every script holds, 1 otherwise (the report names the
 * failing script and step).
 *
 * `parley test-export <execution-id>`: reads a run from a host's API (its
 * workflow and step events) and writes the workflow file and a script that
 * replays the run (`recorded`); `parley test` on it after a change of the
 * workflow names, per node, the first thing the run does differently.
 *
 * The runner and the recorder are core's (`@parley/core/testing`): this is
 * the only production file that imports the test kit.
 */
import { ParleyClient } from "@parley/client"
import { contactOf, formatFlowResults, recordScript, runFlowScriptFiles, workflowBodyOf } from "@parley/core/testing"
import { Config, Console, Data, Effect, FileSystem, Path } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { FetchHttpClient } from "effect/http"

/** Some script did not hold: the report is already printed (`error` keeps the CLI from printing a stack). */
class FlowTestsFailed extends Data.TaggedError("FlowTestsFailed")<{ readonly error: string }> {}

export const testCommand = Command.make(
  "test",
  {
    files: Argument.String("files").pipe(
      Argument.withDescription("Conversation scripts (.json, .yaml or .yml)"),
      Argument.variadic({ min: 1 })
    )
  },
  Effect.fn(function*({ files }) {
    const results = yield* runFlowScriptFiles(files)
    yield* Console.log(formatFlowResults(results))
    const failed = results.filter((r) => !r.ok)
    if (failed.length > 0) return yield* new FlowTestsFailed({ error: `${failed.length} of ${results.length} conversation scripts failed` })
  })
).pipe(Command.withDescription("Run conversation scripts against workflow definitions, on memory ports (no database)"))

const PAGE = 100

export const testExportCommand = Command.make(
  "test-export",
  {
    executionId: Argument.String("execution-id").pipe(Argument.withDescription("The run to record (GET /workflow_executions/<id>)")),
    url: Flag.String("url").pipe(
      Flag.withDescription("The host's address (PARLEY_URL)"),
      Flag.withFallbackConfig(Config.String("PARLEY_URL")),
      Flag.withDefault("http://127.0.0.1:4000")
    ),
    key: Flag.Redacted("key").pipe(
      Flag.withDescription("The project's API key (PARLEY_API_KEY)"),
      Flag.withFallbackConfig(Config.Redacted("PARLEY_API_KEY"))
    ),
    out: Flag.String("out").pipe(Flag.withDescription("Where the workflow and the script are written"), Flag.withDefault("."))
  },
  Effect.fn(function*({ executionId, key, out, url }) {
    const client = yield* ParleyClient.make({ baseUrl: url, apiKey: key }).pipe(Effect.provide(FetchHttpClient.layer))
    // The host's refusal (`{ error }`) or the transport's failure, said on one line.
    const refuse = (e: { readonly error?: string; readonly message?: string }) => {
      const error = `parley test-export: ${e.error ?? e.message ?? "the host refused"}`
      return Effect.andThen(Console.error(error), Effect.fail(new FlowTestsFailed({ error })))
    }
    const { data: run } = yield* client.executions.get({ params: { id: executionId } }).pipe(Effect.catch(refuse))
    const { data: workflow } = yield* client.workflows.definition({ params: { id: run.workflow.id } }).pipe(Effect.catch(refuse))
    const events: Array<(typeof run.events)[number]> = []
    for (let page = 1;; page++) {
      const { body } = yield* client.executions.events({ params: { id: executionId }, query: { page: String(page), per_page: String(PAGE) } })
        .pipe(Effect.catch(refuse))
      events.push(...body.data)
      if (body.data.length < PAGE) break
    }

    const path = yield* Path.Path
    const fs = yield* FileSystem.FileSystem
    const workflowFile = `${workflow.slug}.workflow.json`
    const scriptFile = `${workflow.slug}.${executionId.slice(0, 8)}.flow.json`
    const body = workflowBodyOf(workflow)
    const script = recordScript({
      id: executionId,
      workflow: workflowFile,
      definition: body.workflow.definition,
      events: events.reverse(), // the API lists newest first
      contact: contactOf(run.execution_context.context)
    })
    yield* fs.makeDirectory(out, { recursive: true })
    yield* fs.writeFileString(path.join(out, workflowFile), `${JSON.stringify(body, null, 2)}\n`)
    yield* fs.writeFileString(path.join(out, scriptFile), `${JSON.stringify(script, null, 2)}\n`)
    yield* Console.log([
      `Wrote ${path.join(out, workflowFile)} (the workflow as the run had it)`,
      `Wrote ${path.join(out, scriptFile)} (${script.steps.length} steps; replay: parley test ${path.join(out, scriptFile)})`
    ].join("\n"))
  })
).pipe(Command.withDescription("Record a host's run as a conversation script that replays it (reads the API with a project key)"))
