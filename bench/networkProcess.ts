/**
 * The simulated network in a process of its own (`network.ts`, forked), for
 * the benchmarks that meet it as a host in production meets the network:
 * its loopback port, and `command` to send it one of its commands and wait
 * for `{ done }`. The process stops with the caller's scope.
 */
import { Effect } from "effect"
import * as ChildProcess from "node:child_process"
import { fileURLToPath } from "node:url"

export const forkNetwork = (appSecret: string) =>
  Effect.gen(function*() {
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => ChildProcess.fork(fileURLToPath(new URL("./network.ts", import.meta.url)), [appSecret])),
      (child) => Effect.sync(() => child.kill())
    )
    const port = yield* Effect.promise(() =>
      new Promise<number>((resolve) => child.once("message", (m: { readonly port: number }) => resolve(m.port)))
    )
    const command = (message: object) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          child.once("message", () => resolve())
          child.send(message)
        })
      )
    return { port, pid: child.pid, command }
  })
