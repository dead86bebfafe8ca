/**
 * `load` in a process of its own (forked by `loadApart`): the load generator's
 * memory and threads stay out of the measured host's resident memory.
 */
import * as ChildProcess from "node:child_process"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { load, type LoadOptions, type LoadResult } from "./load.ts"

/** Runs `options` from a child process and answers its figures; the child exits afterwards. */
export const loadApart = (options: LoadOptions): Promise<LoadResult> =>
  new Promise((resolve, reject) => {
    const child = ChildProcess.fork(fileURLToPath(import.meta.url))
    child.once("message", (result: LoadResult) => {
      resolve(result)
      child.kill()
    })
    child.once("error", reject)
    child.once("exit", (code) => {
      if (code !== 0 && code !== null) reject(new Error(`the load process exited with ${code}`))
    })
    child.send(options)
  })

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url) && process.send !== undefined) {
  process.once("message", (options: LoadOptions) => {
    load(options).then((result) => process.send!(result))
  })
}

/** Resumes each waiting run of `ids` once over `POST .../resume` with a text reply, from a process of its own. */
export const resumesApart = (url: string, headers: Record<string, string>, ids: ReadonlyArray<string>, connections: number) =>
  loadApart({
    url,
    urls: ids.map((id) => `${url}/platform/v1/workflow_executions/${id}/resume`),
    method: "POST",
    headers,
    body: JSON.stringify({ message: { kind: "text", data: "yes" } }),
    requests: ids.length,
    connections,
    durationMs: 600_000
  })
