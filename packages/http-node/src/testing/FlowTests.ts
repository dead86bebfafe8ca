/**
 * What `parley test` and `parley test-export` do (`FlowTestCommands.ts` declares them): the test kit's runner and
 * recorder (`@parley/core/testing`), loaded only when one of them runs, so the operator commands never load the kit.
 */
import { ParleyClient } from "@parley/client"
import { contactOf, formatFlowResults, recordScript, runFlowScriptFiles, workflowBodyOf } from "@parley/core/testing"
import { Console, Data, Effect, FileSystem, Path, type Redacted } from "effect"
import { FetchHttpClient } from "effect/http"

/** Some script did not hold, or the host refused: the report is already printed (`error` keeps the CLI from printing a stack). */
export class FlowTestsFailed extends Data.TaggedError("FlowTestsFailed")<{ readonly error: string }> {}

/** Runs the scripts and prints the report; fails when one did not hold. */
export const runScripts = Effect.fn("FlowTests.run")(function*(files: ReadonlyArray<string>) {
  const results = yield* runFlowScriptFiles(files)
  yield* Console.log(formatFlowResults(results))
  const failed = results.filter((r) => !r.ok)
  if (failed.length > 0) return yield* new FlowTestsFailed({ error: `${failed.length} of ${results.length} conversation scripts failed` })
})

const PAGE = 100

/** Writes a host's run as a workflow file and a script that replays it. */
export const exportRun = Effect.fn("FlowTests.export")(function*({ executionId, key, out, url }: {
  readonly executionId: string
  readonly key: Redacted.Redacted<string>
  readonly out: string
  readonly url: string
}) {
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
