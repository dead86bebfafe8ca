/**
 * glibc's malloc gives threads that allocate at once arenas of their own (up to 8 per core) and keeps what each arena
 * grew, so a long-running host's memory outside V8's heap climbs with its busiest minutes (~47 to ~80 MB during a
 * 40,000-recipient broadcast); two arenas took 19 MB off that broadcast's peak RSS at no cost in CPU (docs/decisions.md
 * "The host's malloc arenas"). glibc reads `MALLOC_ARENA_MAX` once, as the process starts, so the standalone host
 * executes itself again with it set — the same process (pid, open descriptors, arguments), replaced before anything is
 * opened. An operator's own `MALLOC_ARENA_MAX` (any value) is kept; other platforms are left as they are.
 */

/** The arenas the host runs with unless told otherwise. */
export const DEFAULT_MALLOC_ARENAS = "2"

/** The environment to execute the host again with, or undefined when it already runs as it should. */
export const arenaCappedEnvironment = (
  platform: NodeJS.Platform,
  env: NodeJS.ProcessEnv
): NodeJS.ProcessEnv | undefined =>
  platform === "linux" && env.MALLOC_ARENA_MAX === undefined ? { ...env, MALLOC_ARENA_MAX: DEFAULT_MALLOC_ARENAS } : undefined

/** Executes this process again with the arenas capped, when `arenaCappedEnvironment` asks for it; returns otherwise. */
export const capMallocArenas = (): void => {
  const env = arenaCappedEnvironment(process.platform, process.env)
  if (env === undefined || typeof process.execve !== "function") return
  process.execve(process.execPath, [process.execPath, ...process.execArgv, ...process.argv.slice(1)], env)
}
