/**
 * `parley test <files...>`: runs conversation scripts (JSON or YAML, see
 * docs/testing.md) against the workflow definitions they name, on memory
 * ports with a test clock: no database and no host, so any CI can run it.
 * Exit status 0 when every script holds, 1 otherwise (the report names the
 * failing script and step). The runner is core's (`@parley/core/testing`):
 * this is the only production file that imports the test kit.
 */
import { formatFlowResults, runFlowScriptFiles } from "@parley/core/testing"
import { Console, Data, Effect } from "effect"
import { Argument, Command } from "effect/cli"

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
