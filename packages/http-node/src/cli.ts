/**
 * `parley`: the operator's command line. Projects are tenants: create, list,
 * disable or enable them, create, list or revoke their API keys, and set,
 * list or delete their secrets (`${ENV:NAME}`; there is no dashboard). It uses
 * the same database as the host (`DATABASE_URL`, or the embedded server in
 * `PARLEY_DATA_DIR`).
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { FunctionSecretKey, Ids, notFoundNamed, Projects, ProjectSecrets, ProviderModels, Unprocessable, VoiceAgents } from "@parley/core"
import { Parley } from "@parley/core"
import { Cause, Console, Effect, Layer, Predicate, Stdio, Stream } from "effect"
import { Argument, CliError, Command, Flag } from "effect/cli"
import { testCommand, testExportCommand } from "./FlowTestCommands.ts"
import { layerCliStorage } from "./Ports.ts"
import * as Simulators from "./simulators/Choice.ts"
import { EventPlans } from "@parley/core"
import { layerJobQueue } from "@parley/store-pg"
import { Option } from "effect"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print JSON"), Flag.withDefault(false))

const print = (asJson: boolean, value: unknown, lines: () => ReadonlyArray<string>) =>
  Console.log(asJson ? JSON.stringify(value, null, 2) : lines().join("\n"))

const projectsCreate = Command.make(
  "create",
  { name: Argument.String("name").pipe(Argument.withDescription("Project name")), json },
  Effect.fn(function*({ name, json }) {
    const projects = yield* Projects
    const project = yield* projects.create(name)
    const key = yield* projects.createKey(project.id, "default")
    yield* print(json, { project, api_key: key.secret }, () => [
      `Created project ${project.name} (${project.id})`,
      `API key: ${key.secret}`,
      "shown once: keep it somewhere safe"
    ])
  })
).pipe(Command.withDescription("Create a project and its first API key"))

const projectsList = Command.make(
  "list",
  { json },
  Effect.fn(function*({ json }) {
    const all = yield* (yield* Projects).list
    yield* print(json, all, () =>
      all.length === 0 ? ["No projects"] : all.map((p) => `${p.id}  ${p.disabled ? "disabled" : "active  "}  ${p.name}`))
  })
).pipe(Command.withDescription("List projects"))

const setDisabled = (name: string, disabled: boolean, description: string) =>
  Command.make(
    name,
    { id: Argument.String("project-id"), json },
    Effect.fn(function*({ id, json }) {
      const project = yield* (yield* Projects).setDisabled(id, disabled)
      yield* print(json, project, () => [`Project ${project.name} (${project.id}) is ${disabled ? "disabled" : "enabled"}`])
    })
  ).pipe(Command.withDescription(description))

const projectsPlan = Command.make(
  "plan",
  {
    id: Argument.String("project-id"),
    events: Flag.Literals("events", ["on", "off"]).pipe(Flag.withDescription("Project events on the plan"), Flag.optional),
    allowance: Flag.Int("allowance").pipe(Flag.withDescription("Events per calendar month (UTC)"), Flag.optional),
    metered: Flag.Literals("metered", ["true", "false"]).pipe(
      Flag.withDescription("Past the allowance, keep recording and count the overage"),
      Flag.optional
    ),
    retentionDays: Flag.Int("retention-days").pipe(Flag.withDescription("Days events are kept"), Flag.optional),
    json
  },
  Effect.fn(function*({ allowance, events, id, json, metered, retentionDays }) {
    const plans = yield* EventPlans
    const changes = {
      ...Option.match(events, { onNone: () => ({}), onSome: (v) => ({ events_enabled: v === "on" }) }),
      ...Option.match(allowance, { onNone: () => ({}), onSome: (v) => ({ monthly_allowance: v }) }),
      ...Option.match(metered, { onNone: () => ({}), onSome: (v) => ({ metered_overage: v === "true" }) }),
      ...Option.match(retentionDays, { onNone: () => ({}), onSome: (v) => ({ retention_days: v }) })
    }
    const plan = Object.keys(changes).length === 0 ? yield* plans.get(id) : yield* plans.set(id, changes)
    yield* print(json, plan, () => [
      `Project ${plan.project_id}`,
      `  project events    ${plan.events_enabled ? "on" : "off"}`,
      `  monthly allowance ${plan.monthly_allowance} (${plan.used_this_period} used in ${plan.period})`,
      `  metered overage   ${plan.metered_overage}`,
      `  retention         ${plan.retention_days} days`
    ])
  })
).pipe(Command.withDescription("Show or change a project's plan: project events, monthly allowance, overage, retention"))

const projects = Command.make("projects").pipe(
  Command.withDescription("Manage projects (tenants)"),
  Command.withSubcommands([
    projectsCreate,
    projectsList,
    setDisabled("disable", true, "Disable a project: its keys stop working"),
    setDisabled("enable", false, "Enable a disabled project"),
    projectsPlan
  ])
)

const keysCreate = Command.make(
  "create",
  {
    project: Argument.String("project-id"),
    name: Flag.String("name").pipe(Flag.withDescription("A label for the key"), Flag.withDefault("default")),
    json
  },
  Effect.fn(function*({ project, name, json }) {
    const created = yield* (yield* Projects).createKey(project, name)
    yield* print(json, { id: created.key.id, name: created.key.name, api_key: created.secret }, () => [
      `Created key ${created.key.name} (${created.key.id})`,
      `API key: ${created.secret}`,
      "shown once: keep it somewhere safe"
    ])
  })
).pipe(Command.withDescription("Create an API key for a project"))

const keysList = Command.make(
  "list",
  { project: Argument.String("project-id"), json },
  Effect.fn(function*({ project, json }) {
    const keys = yield* (yield* Projects).listKeys(project)
    const shown = keys.map(({ key_hash: _hash, ...rest }) => rest)
    yield* print(json, shown, () =>
      shown.length === 0
        ? ["No keys"]
        : shown.map((k) => `${k.id}  ${k.prefix}…  ${k.revoked_at === null ? "live   " : "revoked"}  ${k.name}`))
  })
).pipe(Command.withDescription("List a project's API keys (never their secrets)"))

const keysRevoke = Command.make(
  "revoke",
  { project: Argument.String("project-id"), key: Argument.String("key-id"), json },
  Effect.fn(function*({ project, key, json }) {
    const revoked = yield* (yield* Projects).revokeKey(project, key)
    const { key_hash: _hash, ...shown } = revoked
    yield* print(json, shown, () => [`Revoked key ${revoked.name} (${revoked.id})`])
  })
).pipe(Command.withDescription("Revoke an API key at once"))

const keys = Command.make("keys").pipe(
  Command.withDescription("Manage API keys"),
  Command.withSubcommands([keysCreate, keysList, keysRevoke])
)

/** A value from `--value`, else standard input (so it stays out of shell history), one trailing newline dropped. */
const secretValue = (given: Option.Option<string>) =>
  Effect.gen(function*() {
    if (Option.isSome(given)) return given.value
    const stdio = yield* Stdio.Stdio
    if (yield* stdio.stdinIsTerminal) {
      return yield* new Unprocessable({ error: "Give the value with --value or on standard input (echo -n value | parley secrets set ...)" })
    }
    const text = yield* stdio.stdin.pipe(Stream.decodeText(), Stream.mkString, Effect.orDie)
    return text.endsWith("\r\n") ? text.slice(0, -2) : text.endsWith("\n") ? text.slice(0, -1) : text
  })

const secretsSet = Command.make(
  "set",
  {
    project: Argument.String("project-id"),
    name: Argument.String("name").pipe(Argument.withDescription("A-Z, 0-9 and _, as ${ENV:NAME} names it")),
    value: Flag.String("value").pipe(Flag.withDescription("The value; read from standard input when absent"), Flag.optional),
    json
  },
  Effect.fn(function*({ json, name, project, value }) {
    const info = yield* (yield* ProjectSecrets).set(project, name, yield* secretValue(value))
    yield* print(json, info, () => [`Secret ${info.name} set for project ${project}`])
  })
).pipe(Command.withDescription("Create or replace a project secret (${ENV:NAME} in workflow nodes)"))

const secretsList = Command.make(
  "list",
  { project: Argument.String("project-id"), json },
  Effect.fn(function*({ json, project }) {
    const all = yield* (yield* ProjectSecrets).list(project)
    yield* print(json, all, () => all.length === 0 ? ["No secrets"] : all.map((s) => `${s.name}  updated ${s.updated_at}`))
  })
).pipe(Command.withDescription("List a project's secrets (names only, never values)"))

const secretsDelete = Command.make(
  "delete",
  { project: Argument.String("project-id"), name: Argument.String("name"), json },
  Effect.fn(function*({ json, name, project }) {
    yield* (yield* ProjectSecrets).delete(project, name)
    yield* print(json, { name, deleted: true }, () => [`Secret ${name} deleted`])
  })
).pipe(Command.withDescription("Delete a project secret"))

const secrets = Command.make("secrets").pipe(
  Command.withDescription("Manage project secrets, encrypted at rest with the host key (PARLEY_SECRET_KEY)"),
  Command.withSubcommands([secretsSet, secretsList, secretsDelete])
)

const csv = (value: string): Array<string> => value.split(",").map((v) => v.trim()).filter((v) => v !== "")

const modelsAdd = Command.make(
  "add",
  {
    name: Flag.String("name").pipe(Flag.withDescription("Parley's name of the model (nodes use it as provider_model_name)")),
    model: Flag.String("model").pipe(Flag.withDescription("The model name the endpoint knows (gpt-4o-mini, llama3.1)")),
    baseUrl: Flag.String("base-url").pipe(Flag.withDescription("The OpenAI-compatible API root, e.g. https://api.openai.com/v1")),
    provider: Flag.String("provider").pipe(Flag.withDescription("Shown in GET /provider_models (default openai_compatible)"), Flag.optional),
    apiKeyEnv: Flag.String("api-key-env").pipe(
      Flag.withDescription("The environment variable of the host that holds the endpoint's key (the key itself is never stored)"),
      Flag.optional
    ),
    reasoning: Flag.Boolean("reasoning").pipe(Flag.withDescription("A reasoning model"), Flag.withDefault(false)),
    efforts: Flag.String("efforts").pipe(Flag.withDescription("Supported reasoning efforts, comma-separated"), Flag.optional),
    defaultEffort: Flag.String("default-effort").pipe(Flag.withDescription("One of --efforts"), Flag.optional),
    cacheTtls: Flag.String("cache-ttls").pipe(Flag.withDescription("Supported prompt cache TTLs: 5m, 1h (default 5m)"), Flag.optional),
    defaultCacheTtl: Flag.String("default-cache-ttl").pipe(Flag.withDescription("One of --cache-ttls"), Flag.optional),
    apiSurface: Flag.String("api-surface").pipe(Flag.withDescription("provider_default, chat_completions (default) or responses"), Flag.optional),
    json
  },
  Effect.fn(function*(flags) {
    const model = yield* (yield* ProviderModels).declare({
      name: flags.name,
      model: flags.model,
      base_url: flags.baseUrl,
      reasoning_model: flags.reasoning,
      ...Option.match(flags.provider, { onNone: () => ({}), onSome: (provider) => ({ provider }) }),
      ...Option.match(flags.apiKeyEnv, { onNone: () => ({}), onSome: (api_key_env) => ({ api_key_env }) }),
      ...Option.match(flags.efforts, { onNone: () => ({}), onSome: (v) => ({ supported_reasoning_efforts: csv(v) }) }),
      ...Option.match(flags.defaultEffort, { onNone: () => ({}), onSome: (default_reasoning_effort) => ({ default_reasoning_effort }) }),
      ...Option.match(flags.cacheTtls, { onNone: () => ({}), onSome: (v) => ({ supported_prompt_cache_ttls: csv(v) }) }),
      ...Option.match(flags.defaultCacheTtl, { onNone: () => ({}), onSome: (default_prompt_cache_ttl) => ({ default_prompt_cache_ttl }) }),
      ...Option.match(flags.apiSurface, { onNone: () => ({}), onSome: (api_surface) => ({ api_surface }) })
    })
    yield* print(flags.json, model, () => [`Model ${model.name} (${model.id}) declared: ${model.endpoint.upstream_model} at ${model.endpoint.base_url}`])
  })
).pipe(Command.withDescription("Declare a language model (or replace the one of that name)"))

const modelsList = Command.make(
  "list",
  { json },
  Effect.fn(function*({ json }) {
    const records = yield* (yield* ProviderModels).records
    yield* print(json, records, () =>
      records.length === 0 ? ["No models"] : records.map((m) =>
        `${m.name}  ${m.provider}  ${m.endpoint.upstream_model} at ${m.endpoint.base_url}  key: ${m.endpoint.api_key_env ?? "none"}`
      ))
  })
).pipe(Command.withDescription("List the declared models with their endpoints (the key's variable name, never a key)"))

const modelsRemove = Command.make(
  "remove",
  { name: Argument.String("name"), json },
  Effect.fn(function*({ json, name }) {
    if (!(yield* (yield* ProviderModels).remove(name))) return yield* notFoundNamed("Model", name)
    yield* print(json, { name, removed: true }, () => [`Model ${name} removed`])
  })
).pipe(Command.withDescription("Remove a declared model"))

const models = Command.make("models").pipe(
  Command.withDescription("Manage the language models workflows call (OpenAI-compatible endpoints)"),
  Command.withSubcommands([modelsAdd, modelsList, modelsRemove])
)

const voiceAgentsAdd = Command.make(
  "add",
  {
    project: Argument.String("project-id"),
    name: Flag.String("name").pipe(Flag.withDescription("The agent's name (a second add of a name replaces its provider)")),
    type: Flag.String("type").pipe(Flag.withDescription("provider.type, e.g. the voice platform")),
    kind: Flag.String("kind").pipe(Flag.withDescription("provider.kind")),
    agentName: Flag.String("agent-name").pipe(Flag.withDescription("provider.agent_name: the agent's name on the platform")),
    json
  },
  Effect.fn(function*(flags) {
    const agent = yield* (yield* VoiceAgents).declare(flags.project, {
      name: flags.name,
      provider: { type: flags.type, kind: flags.kind, agent_name: flags.agentName }
    })
    yield* print(flags.json, agent, () => [`Voice agent ${agent.name} (${agent.id}) declared: ${agent.provider.type}/${agent.provider.kind} ${agent.provider.agent_name}`])
  })
).pipe(Command.withDescription("Declare a project's voice agent (or replace the one of that name)"))

const voiceAgentsList = Command.make(
  "list",
  { project: Argument.String("project-id"), json },
  Effect.fn(function*({ json, project }) {
    const agents = yield* (yield* VoiceAgents).list(project)
    yield* print(json, agents, () =>
      agents.length === 0
        ? ["No voice agents"]
        : agents.map((a) => `${a.name}  ${a.provider.type}/${a.provider.kind}  ${a.provider.agent_name}  ${a.id}`))
  })
).pipe(Command.withDescription("List a project's voice agents"))

const voiceAgentsRemove = Command.make(
  "remove",
  { project: Argument.String("project-id"), name: Argument.String("name"), json },
  Effect.fn(function*({ json, name, project }) {
    if (!(yield* (yield* VoiceAgents).remove(project, name))) return yield* notFoundNamed("Voice agent", name)
    yield* print(json, { name, removed: true }, () => [`Voice agent ${name} removed`])
  })
).pipe(Command.withDescription("Remove a project's voice agent"))

const voiceAgents = Command.make("voice-agents").pipe(
  Command.withDescription("Manage the voice agents a project lists at GET /api/v1/voice_agents"),
  Command.withSubcommands([voiceAgentsAdd, voiceAgentsList, voiceAgentsRemove])
)

// The host's secret key (`PARLEY_SECRET_KEY`), so secrets set here decrypt in the host.
// The network of the configuration, as the host's (its simulator here keeps no state: the host's owns the network).
const Services = Parley.layerServices.pipe(
  Layer.provide(Simulators.layerNetwork),
  Layer.provide(Layer.mergeAll(layerJobQueue().pipe(Layer.provideMerge(layerCliStorage)), Ids.layer, FunctionSecretKey.layerConfig))
)

// The database is opened for a command that runs, after its arguments parsed: a usage error needs none, and
// `parley test` (memory ports) never does.
const cli = Command.make("parley").pipe(
  Command.withDescription("Operate a Parley host: projects, API keys, project secrets, language models and voice agents; test workflows"),
  Command.withSubcommands([
    projects.pipe(Command.provide(Services)),
    keys.pipe(Command.provide(Services)),
    secrets.pipe(Command.provide(Services)),
    models.pipe(Command.provide(Services)),
    voiceAgents.pipe(Command.provide(Services)),
    testCommand,
    testExportCommand
  ])
)

/** A refusal the operator can act on: its message on stderr and exit code 1, no stack trace. */
const refuse = (e: { readonly error: string }) => Effect.andThen(Console.error(e.error), Effect.fail(e))

cli.pipe(
  Command.run({ version: "0.0.0" }),
  Effect.catchTags({ NotFound: refuse, Unprocessable: refuse }),
  Effect.provide(NodeServices.layer),
  // Refusals and usage errors (the CLI printed them with the help) were already said; a startup failure is one line;
  // anything else is unexpected and shown in full.
  Effect.tapCause((cause) => {
    const failure = Cause.squash(cause)
    if (Predicate.hasProperty(failure, "error") || CliError.isCliError(failure)) return Effect.void
    if (
      (Predicate.isTagged(failure, "EmbeddedPostgresError") || Predicate.isTagged(failure, "SqlError")) &&
      Predicate.hasProperty(failure, "message")
    ) {
      return Console.error(`parley: ${String(failure.message).split("\n")[0]}`)
    }
    return Console.error(Cause.pretty(cause))
  }),
  (effect) => NodeRuntime.runMain(effect, { disableErrorReporting: true })
)
