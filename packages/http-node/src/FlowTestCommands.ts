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
 * The runner and the recorder are the test kit's (`@parley/core/testing`), in
 * `testing/FlowTests.ts`, loaded only when one of these commands runs.
 */
import { Config, Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"

const flowTests = Effect.promise(() => import("./testing/FlowTests.ts"))

export const testCommand = Command.make(
  "test",
  {
    files: Argument.String("files").pipe(
      Argument.withDescription("Conversation scripts (.json, .yaml or .yml)"),
      Argument.variadic({ min: 1 })
    )
  },
  ({ files }) => Effect.flatMap(flowTests, (kit) => kit.runScripts(files))
).pipe(Command.withDescription("Run conversation scripts against workflow definitions, on memory ports (no database)"))

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
  (options) => Effect.flatMap(flowTests, (kit) => kit.exportRun(options))
).pipe(Command.withDescription("Record a host's run as a conversation script that replays it (reads the API with a project key)"))
