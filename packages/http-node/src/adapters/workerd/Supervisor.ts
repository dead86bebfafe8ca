/**
 * The workerd process pool. workerd has no per-function CPU or memory limit:
 * one busy loop freezes its whole process and a heap blow-up aborts it. So
 * the supervisor
 *
 * - spreads functions over `processes` slots (a function lives on the slot
 *   with the fewest functions when first deployed), fails over to another
 *   slot while its own process is stalled or being respawned, and lets a busy
 *   function spill over to a process with far less work;
 * - starts each process lazily, with an EMPTY environment, in a private
 *   (0700) directory, listening on a unix socket;
 * - gives every request a deadline; at a deadline it aborts the request and
 *   pings the process: a process that does not answer is frozen by a busy
 *   loop, so it is killed (SIGKILL) and respawned;
 * - pings every process every `heartbeatMs`: one silent for `stallMs` is
 *   "stalled" and gets no new work; one stalled past the deadlines of the
 *   requests it holds is killed;
 * - caps every isolate's V8 heap (`--max-old-space-size`); an isolate over it
 *   aborts its process, which is detected, reported to the requests it held,
 *   and respawned;
 * - recycles a process (start a replacement, switch, drain, stop) when its
 *   RSS passes `maxProcessRssMb` or it is older than `recycleAfterMs`;
 * - reloads a respawned process's functions (a probe of each) before it
 *   takes their traffic back.
 *
 * Runaway isolation: every invocation carries a ticket that the dispatcher
 * must have the host mark started before anything of the function runs (see
 * `Dispatcher.ts`). An invocation whose ticket is still pending when its
 * process stalls or dies provably never ran there: the host withdraws the
 * ticket (a late start is refused) and sends it to a healthy process, within
 * the invocation's own deadline. Only invocations that had started fail, as
 * `Crashed`: they are not re-run. A function that had started on a process
 * that stalled or died (the runaway is one of them) is kept on its own slot
 * for a while (`pinMs`): its next invocations wait for that slot's process
 * rather than freeze a healthy one. Requests not yet sent are routed to a
 * live process.
 */
import { Clock, Deferred, Duration, Effect, Exit, FileSystem, Option, Schedule, Scope, Semaphore, Stream } from "effect"
import { ChildProcess, ChildProcessSpawner } from "effect/process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Http from "node:http"
import * as Path from "node:path"
import { configSource, dispatcherSource } from "./Dispatcher.ts"
import { startHostBridge } from "./HostBridge.ts"
import type { FunctionKv } from "@parley/core"

export interface SupervisorOptions {
  readonly binary: string
  readonly compatibilityDate: string
  /** Processes functions are spread over. */
  readonly processes: number
  /** V8 heap cap of every isolate (each function is an isolate). */
  readonly memoryMb: number
  /** A process above this resident size is recycled. */
  readonly maxProcessRssMb: number
  /** A process older than this is recycled. */
  readonly recycleAfterMs: number
  readonly heartbeatMs: number
  /** Silence after which a process counts as stalled. */
  readonly stallMs: number
  /** Longest wait for a process to start answering. */
  readonly startTimeoutMs: number
  readonly allowPrivateNetwork: boolean
}

/** A function the supervisor reloads into a respawned process. */
export interface Resident {
  readonly functionId: string
  readonly generation: number
  readonly slot: number
}

export interface SupervisorHooks {
  readonly codeFor: (functionId: string, generation: number) => string | undefined
  readonly residents: () => Iterable<Resident>
}

/** The answer of a dispatcher: its meta and the body that followed it. */
export interface Framed {
  readonly meta: any
  readonly body: Uint8Array
}

export type SendFailure =
  | { readonly _tag: "Timeout" }
  | { readonly _tag: "Crashed"; readonly message: string }
  | { readonly _tag: "Unavailable"; readonly message: string }

export interface ProcessStats {
  readonly slot: number
  readonly incarnation: number
  readonly pid: number
  readonly state: ProcState
  readonly stalled: boolean
  readonly inFlight: number
  readonly requests: number
  /** Functions with an invocation that got its go here and has not answered yet (with repeats). */
  readonly started: ReadonlyArray<string>
  readonly rssKb: number | undefined
  readonly functions: number
}

type ProcState = "starting" | "ready" | "draining" | "ended"

/** One attempt of an invocation on one process (see the module's comment). */
interface Ticket {
  readonly functionId: string
  readonly proc: Proc
  state: "pending" | "started" | "withdrawn"
  /** Drops its request (set while it is in flight): the sender then tries another process. */
  drop: (() => void) | undefined
}

interface Proc {
  readonly slot: Slot
  readonly incarnation: number
  readonly socketPath: string
  readonly pid: number
  readonly startedAt: number
  readonly scope: Scope.Closeable
  readonly agent: Http.Agent
  /** Completes with the reason once the process is gone (or being stopped). */
  readonly ended: Deferred.Deferred<string>
  readonly stderrTail: Array<string>
  /** Completes when its stderr is read to the end. */
  readonly stderrDone: Deferred.Deferred<void>
  state: ProcState
  inFlight: number
  /** Requests in flight by function. */
  readonly running: Map<string, number>
  requests: number
  /** Latest deadline of the requests it was given. */
  busyUntil: number
  /** When the unanswered ping was sent. */
  pingSince: number | undefined
  stalled: boolean
  rssKb: number | undefined
}

interface Slot {
  readonly index: number
  current: Proc | undefined
  starting: Deferred.Deferred<Proc, string> | undefined
  replacing: boolean
  /** Whether it ever had a process: a slot without one is then being respawned. */
  started: boolean
  functions: number
  /** Times of recent unplanned restarts, for the crash-loop backoff. */
  restarts: Array<number>
}

const frame = (meta: unknown, body: Uint8Array): Buffer => {
  const head = Buffer.from(JSON.stringify(meta))
  const out = Buffer.allocUnsafe(4 + head.byteLength + body.byteLength)
  out.writeUInt32BE(head.byteLength, 0)
  head.copy(out, 4)
  out.set(body, 4 + head.byteLength)
  return out
}

const unframe = (bytes: Buffer): Framed => {
  const length = bytes.readUInt32BE(0)
  return {
    meta: JSON.parse(bytes.subarray(4, 4 + length).toString("utf8")),
    body: new Uint8Array(bytes.buffer, bytes.byteOffset + 4 + length, bytes.byteLength - 4 - length)
  }
}

const outOfMemory = /heap out of memory|Reached heap limit|allocation failed/i
/** Requests in flight on a process above which new ones may go to a process with far fewer. */
const spreadAt = 8
/** How long a function that was running in a process that stalled or died stays on its own slot. */
const pinMs = 60_000
const frozenReason = "The function's process was restarted: a function on it ran past its time limit without yielding"

export const makeSupervisor = (options: SupervisorOptions, hooks: SupervisorHooks) =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const spawner = yield* ChildProcessSpawner.ChildProcessSpawner
    const fs = yield* FileSystem.FileSystem
    const kvServices = yield* Effect.context<FunctionKv>()
    const token = Crypto.randomBytes(24).toString("hex")
    const slots: Array<Slot> = Array.from({ length: Math.max(1, Math.floor(options.processes)) }, (_, index) => ({
      index,
      current: undefined,
      starting: undefined,
      replacing: false,
      started: false,
      functions: 0,
      restarts: []
    }))
    const draining = new Set<Proc>()
    let incarnations = 0
    const tickets = new Map<string, Ticket>()
    /** Functions kept on their own slot until then (they were running when their process stalled or died). */
    const pinnedUntil = new Map<string, number>()

    /** The isolate asks before the user's code runs: a withdrawn (or unknown) ticket must not start. */
    const startTicket = (id: string) => {
      const ticket = tickets.get(id)
      if (ticket === undefined || ticket.state === "withdrawn") return false
      ticket.state = "started"
      return true
    }

    /**
     * A process stalled or died: what had started on it may be the cause, so its functions are pinned; what had
     * not started is withdrawn (when `move`), so its senders try a healthy process.
     */
    const settleTickets = (proc: Proc, now: number, move: boolean) =>
      Effect.sync(() => {
        for (const ticket of tickets.values()) {
          if (ticket.proc === proc && ticket.state === "started") pinnedUntil.set(ticket.functionId, now + pinMs)
        }
        if (!move) return
        for (const ticket of tickets.values()) {
          if (ticket.proc !== proc || ticket.state !== "pending" || isPinned(ticket.functionId, now)) continue
          ticket.state = "withdrawn"
          ticket.drop?.()
        }
      })
    const isPinned = (functionId: string, now: number) => {
      const until = pinnedUntil.get(functionId)
      if (until === undefined) return false
      if (until > now) return true
      pinnedUntil.delete(functionId)
      return false
    }

    // ---- lazy base: private directory, dispatcher source, host bridge, heartbeat ----

    let base: { readonly dir: string; readonly bridgePath: string } | undefined
    const baseLock = yield* Semaphore.make(1)
    const ensureBase = baseLock.withPermit(Effect.suspend(() =>
      base !== undefined
        ? Effect.succeed(base)
        : Effect.gen(function*() {
          const dir = yield* fs.makeTempDirectoryScoped({ prefix: "parley-workerd-" })
          yield* Effect.promise(() => Fs.chmod(dir, 0o700))
          yield* fs.writeFileString(Path.join(dir, "dispatcher.js"), dispatcherSource(options.compatibilityDate))
          const bridgePath = Path.join(dir, "host.sock")
          yield* startHostBridge({
            socketPath: bridgePath,
            token,
            allowPrivateNetwork: options.allowPrivateNetwork,
            codeFor: hooks.codeFor,
            start: startTicket
          }).pipe(Effect.provideContext(kvServices))
          yield* heartbeat.pipe(Effect.forkIn(scope))
          base = { dir, bridgePath }
          return base
        }).pipe(
          Scope.provide(scope),
          Effect.mapError((error) => `cannot prepare the workerd directory and host bridge: ${String(error)}`)
        )
    ))

    // ---- talking to a dispatcher ----

    /** Answers undefined when the ticket's request is dropped (withdrawn from a stalled process). */
    const post = (proc: Proc, path: string, payload: Buffer | undefined, ticket?: Ticket) =>
      Effect.callback<Buffer | undefined, string>((resume) => {
        const req = Http.request({
          socketPath: proc.socketPath,
          path,
          method: payload === undefined ? "GET" : "POST",
          agent: proc.agent,
          headers: { "x-parley-token": token, "content-length": payload?.byteLength ?? 0 }
        }, (res) => {
          const chunks: Array<Buffer> = []
          res.on("data", (chunk: Buffer) => chunks.push(chunk))
          res.on("end", () =>
            resume(
              res.statusCode === 200
                ? Effect.succeed(Buffer.concat(chunks))
                : Effect.fail(`the dispatcher answered ${res.statusCode}`)
            ))
          res.on("error", (error) => resume(Effect.fail(error.message)))
        })
        req.on("error", (error) => resume(Effect.fail(error.message)))
        if (ticket !== undefined) {
          ticket.drop = () => {
            resume(Effect.succeed(undefined))
            req.destroy()
          }
        }
        req.end(payload)
        return Effect.sync(() => req.destroy())
      })

    const ping = (proc: Proc, withinMs: number) =>
      post(proc, "/ping", undefined).pipe(Effect.timeoutOption(withinMs), Effect.map(Option.isSome), Effect.orElseSucceed(() => false))

    // ---- process lifecycle ----

    const respawnDelay = (slot: Slot, now: number) => {
      slot.restarts = slot.restarts.filter((at) => now - at < 10_000)
      slot.restarts.push(now)
      const recent = slot.restarts.length
      return recent <= 3 ? 0 : Math.min(5_000, 100 * 2 ** (recent - 3))
    }

    /** Stops the process (if still running) and lets the slot respawn; idempotent. */
    const endProc = (proc: Proc, reason: string, unplanned: boolean): Effect.Effect<void> =>
      Effect.gen(function*() {
        if (proc.state === "ended") return
        proc.state = "ended"
        draining.delete(proc)
        yield* Deferred.succeed(proc.ended, reason)
        proc.agent.destroy()
        const slot = proc.slot
        if (slot.current === proc) slot.current = undefined
        yield* Scope.close(proc.scope, Exit.void).pipe(Effect.forkIn(scope))
        if (unplanned) {
          yield* settleTickets(proc, yield* Clock.currentTimeMillis, false)
          yield* Effect.logWarning("workerd process stopped").pipe(
            Effect.annotateLogs({ slot: slot.index, pid: proc.pid, reason, stderr: proc.stderrTail.join("\n") })
          )
          const delay = respawnDelay(slot, yield* Clock.currentTimeMillis)
          if (slot.functions > 0) {
            yield* Effect.sleep(delay).pipe(
              Effect.andThen(obtain(slot)),
              Effect.ignore,
              Effect.forkIn(scope)
            )
          }
        }
      })

    const onExit = (proc: Proc, exit: Exit.Exit<unknown, unknown>) =>
      Effect.gen(function*() {
        // Its last words (an out-of-memory report) may still be in the pipe.
        yield* Deferred.await(proc.stderrDone).pipe(Effect.timeoutOption(250))
        if (proc.state === "ended") return
        const tail = proc.stderrTail.join("\n")
        const how = Exit.isSuccess(exit) ? `exit code ${String(exit.value)}` : "a signal"
        const reason = outOfMemory.test(tail)
          ? `The function's process ran out of memory (limit ${options.memoryMb} MB per function) and was restarted`
          : `The function's process ended unexpectedly (${how}) and was restarted`
        yield* endProc(proc, reason, true)
      })

    const spawnProcess = (slot: Slot): Effect.Effect<Proc, string> =>
      Effect.gen(function*() {
        const { bridgePath, dir } = yield* ensureBase
        const incarnation = ++incarnations
        const name = `p${slot.index}-${incarnation}`
        const socketPath = Path.join(dir, `${name}.sock`)
        const configPath = Path.join(dir, `${name}.capnp`)
        yield* fs.writeFileString(
          configPath,
          configSource({
            socketPath,
            bridgePath,
            token,
            memoryMb: options.memoryMb,
            compatibilityDate: options.compatibilityDate
          })
        ).pipe(Effect.mapError((error) => `cannot write the workerd config: ${error.message}`))
        const procScope = yield* Scope.fork(scope)
        const handle = yield* spawner.spawn(
          ChildProcess.make(options.binary, ["serve", configPath, "--experimental"], {
            cwd: dir,
            env: {},
            extendEnv: false,
            stdin: "ignore",
            stdout: "ignore",
            stderr: "pipe",
            detached: false,
            killSignal: "SIGKILL"
          })
        ).pipe(
          Scope.provide(procScope),
          Effect.tapError(() => Scope.close(procScope, Exit.void)),
          Effect.mapError((error) => `cannot start workerd: ${error.message}`)
        )
        const proc: Proc = {
          slot,
          incarnation,
          socketPath,
          pid: handle.pid,
          startedAt: yield* Clock.currentTimeMillis,
          scope: procScope,
          agent: new Http.Agent({ keepAlive: true, maxFreeSockets: 64 }),
          ended: Deferred.makeUnsafe<string>(),
          stderrTail: [],
          stderrDone: Deferred.makeUnsafe<void>(),
          state: "starting",
          inFlight: 0,
          running: new Map(),
          requests: 0,
          busyUntil: 0,
          pingSince: undefined,
          stalled: false,
          rssKb: undefined
        }
        yield* handle.stderr.pipe(
          Stream.decodeText(),
          Stream.splitLines,
          Stream.runForEach((line) =>
            Effect.sync(() => {
              proc.stderrTail.push(line)
              if (proc.stderrTail.length > 30) proc.stderrTail.shift()
            })
          ),
          Effect.ignore,
          Effect.ensuring(Deferred.succeed(proc.stderrDone, undefined)),
          Effect.forkIn(procScope)
        )
        // Unplanned exits; a planned stop closes the scope first and interrupts this.
        yield* handle.exitCode.pipe(
          Effect.exit,
          Effect.flatMap((exit) => onExit(proc, exit).pipe(Effect.forkIn(scope))),
          Effect.forkIn(procScope)
        )
        const ready = yield* ping(proc, 1_000).pipe(
          Effect.repeat({ until: (ok) => ok || proc.state === "ended", schedule: Schedule.spaced(Duration.millis(5)) }),
          Effect.timeoutOption(options.startTimeoutMs)
        )
        if (Option.isNone(ready) || !ready.value || proc.state === "ended") {
          const why = Deferred.isDoneUnsafe(proc.ended) ? "it exited" : `no answer within ${options.startTimeoutMs} ms`
          yield* endProc(proc, "did not start", false)
          return yield* Effect.fail(`workerd did not start (${why}): ${proc.stderrTail.slice(-5).join(" | ")}`)
        }
        proc.state = "ready"
        yield* warm(proc)
        return proc
      })

    /** Loads the slot's functions into a fresh process, so their first requests find them warm. */
    const warm = (proc: Proc) =>
      Effect.forEach(
        [...hooks.residents()].filter((resident) => resident.slot === proc.slot.index),
        (resident) =>
          post(proc, "/probe", frame({ fn: resident.functionId, gen: resident.generation }, new Uint8Array(0))).pipe(
            Effect.timeoutOption(5_000),
            Effect.ignore
          ),
        { concurrency: 4, discard: true }
      )

    /** The slot's ready process, starting one if it has none. */
    const obtain = (slot: Slot): Effect.Effect<Proc, string> =>
      Effect.suspend(() => {
        // A slot's current process is always past its start (ready, or being stopped).
        if (slot.current !== undefined && slot.current.state === "ready") return Effect.succeed(slot.current)
        if (slot.starting !== undefined) return Deferred.await(slot.starting)
        const starting = Deferred.makeUnsafe<Proc, string>()
        slot.starting = starting
        return spawnProcess(slot).pipe(
          Effect.exit,
          Effect.flatMap((exit) =>
            Effect.suspend(() => {
              slot.starting = undefined
              if (Exit.isSuccess(exit)) {
                slot.current = exit.value
                slot.started = true
              }
              return Deferred.done(starting, exit)
            })
          ),
          // Started apart from the caller, whose deadline must not cut a start short.
          Effect.forkIn(scope),
          Effect.andThen(Deferred.await(starting))
        )
      })

    /** Replaces a process without dropping requests: start, warm, switch, drain, stop. */
    const recycle = (proc: Proc, why: string) =>
      Effect.suspend(() => {
        const slot = proc.slot
        if (slot.replacing || proc.state !== "ready" || slot.current !== proc) return Effect.void
        slot.replacing = true
        return Effect.gen(function*() {
          yield* Effect.logInfo("recycling workerd process").pipe(
            Effect.annotateLogs({ slot: slot.index, pid: proc.pid, why })
          )
          const next = yield* spawnProcess(slot)
          if (proc.state !== "ready") {
            // The old one died meanwhile: keep the new one unless a respawn is already on its way.
            if (slot.current === undefined && slot.starting === undefined) slot.current = next
            else yield* endProc(next, "superseded", false)
            return
          }
          slot.current = next
          proc.state = "draining"
          draining.add(proc)
          const drainUntil = Math.max(proc.busyUntil, yield* Clock.currentTimeMillis) + 1_000
          // Read through a function: the state changes while this fiber sleeps.
          const stopped = () => proc.state === "ended"
          while (proc.inFlight > 0 && !stopped() && (yield* Clock.currentTimeMillis) < drainUntil) {
            yield* Effect.sleep(25)
          }
          yield* endProc(proc, `recycled (${why})`, false)
        }).pipe(
          Effect.catchCause((cause) => Effect.logWarning("recycling failed", cause)),
          Effect.ensuring(Effect.sync(() => {
            slot.replacing = false
          })),
          Effect.forkIn(scope),
          Effect.asVoid
        )
      })

    const readRssKb = (pid: number) =>
      Effect.promise(() =>
        Fs.readFile(`/proc/${pid}/status`, "utf8").then(
          (status) => {
            const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)
            return match === null ? undefined : Number(match[1])
          },
          () => undefined
        )
      )

    const heartbeat: Effect.Effect<void> = Effect.gen(function*() {
      while (true) {
        yield* Effect.sleep(options.heartbeatMs)
        const now = yield* Clock.currentTimeMillis
        const live = [...slots.map((slot) => slot.current), ...draining].filter(
          (proc): proc is Proc => proc !== undefined && (proc.state === "ready" || proc.state === "draining")
        )
        for (const proc of live) {
          if (proc.pingSince !== undefined) {
            if (now - proc.pingSince >= options.stallMs) {
              if (!proc.stalled) {
                proc.stalled = true
                yield* settleTickets(proc, now, true)
                yield* Effect.logWarning("workerd process stalled").pipe(
                  Effect.annotateLogs({ slot: proc.slot.index, pid: proc.pid, inFlight: proc.inFlight })
                )
              }
              // Nothing it holds may still run: a function keeps it busy after answering.
              if (now > proc.busyUntil + options.stallMs) {
                yield* endProc(proc, "The function's process stopped answering (code kept it busy) and was restarted", true)
              }
            }
            continue
          }
          proc.pingSince = now
          yield* ping(proc, 60_000).pipe(
            Effect.tap((ok) =>
              Effect.sync(() => {
                if (!ok) return
                proc.pingSince = undefined
                proc.stalled = false
              })
            ),
            Effect.forkIn(scope)
          )
          proc.rssKb = yield* readRssKb(proc.pid)
          if (proc.state === "ready") {
            if (proc.rssKb !== undefined && proc.rssKb > options.maxProcessRssMb * 1024) {
              yield* recycle(proc, `resident size ${Math.round(proc.rssKb / 1024)} MB`)
            } else if (now - proc.startedAt > options.recycleAfterMs) {
              yield* recycle(proc, "age")
            }
          }
        }
      }
    })

    /**
     * A ready process for a function living on `home`: its own; another one
     * while its own is stalled or being respawned; a process of its own
     * started on first use. A pinned function only ever gets its own.
     */
    const route = (home: number, functionId: string, pinned: boolean): Effect.Effect<Proc, string> =>
      Effect.suspend(() => {
        const homeSlot = slots[home % slots.length]!
        if (pinned) return obtain(homeSlot)
        const current = homeSlot.current
        const others = slots
          .map((slot) => slot.current)
          .filter((proc): proc is Proc =>
            proc !== undefined && proc.slot !== homeSlot && proc.state === "ready" && !proc.stalled
          )
        const leastBusy = others.length === 0
          ? undefined
          : others.reduce((a, b) => (a.inFlight <= b.inFlight ? a : b))
        if (current !== undefined && current.state === "ready" && !current.stalled) {
          // A busy function spills over to a process with much less work, which loads it on first use, and only
          // to one running nothing but this function: a request of another function there may be a runaway,
          // which would take the spilled requests down with it.
          if (current.inFlight >= spreadAt) {
            const spill = others.filter((proc) => (proc.running.get(functionId) ?? 0) === proc.inFlight)
            const target = spill.length === 0 ? undefined : spill.reduce((a, b) => (a.inFlight <= b.inFlight ? a : b))
            if (target !== undefined && target.inFlight * 2 < current.inFlight) return Effect.succeed(target)
            const idle = slots.find((slot) => slot.current === undefined && slot.starting === undefined)
            if (idle !== undefined) return obtain(idle).pipe(Effect.ignore, Effect.forkIn(scope), Effect.as(current))
          }
          return Effect.succeed(current)
        }
        if (current !== undefined && current.state === "ready") {
          // Stalled: anything else rather than queue behind it, even a process started for the purpose.
          if (leastBusy !== undefined) return Effect.succeed(leastBusy)
          const idle = slots.find((slot) => slot !== homeSlot && slot.current === undefined)
          return idle === undefined ? Effect.succeed(current) : obtain(idle)
        }
        if (homeSlot.started && leastBusy !== undefined) return Effect.succeed(leastBusy)
        return obtain(homeSlot)
      })

    /** After a request missed its deadline: a process that cannot answer a ping is frozen, so it goes. */
    const afterTimeout = (proc: Proc) =>
      Effect.gen(function*() {
        if (proc.state !== "ready" && proc.state !== "draining") return
        const alive = yield* ping(proc, Math.min(options.stallMs, 1_000))
        if (!alive) yield* endProc(proc, frozenReason, true)
      })

    /**
     * Sends one framed request to a process for a function living on `home`.
     * Waiting for a process to start is bounded by `startTimeoutMs`; the
     * request itself, moves to other processes included, by `timeoutMs`.
     * An invoke that had not started when its process stalled or died is
     * sent again, to a healthy process when there is one.
     */
    const send = (home: number, path: "/invoke" | "/probe", meta: Record<string, unknown>, body: Uint8Array, timeoutMs: number) =>
      Effect.gen(function*() {
        const functionId = String(meta["fn"])
        const deadline = (yield* Clock.currentTimeMillis) + timeoutMs
        while (true) {
          const picked = yield* route(home, functionId, isPinned(functionId, yield* Clock.currentTimeMillis)).pipe(
            Effect.timeoutOption(options.startTimeoutMs),
            Effect.mapError((message): SendFailure => ({ _tag: "Unavailable", message }))
          )
          if (Option.isNone(picked)) {
            return yield* Effect.fail<SendFailure>({ _tag: "Unavailable", message: "No workerd process became ready" })
          }
          const proc = picked.value
          const remaining = deadline - (yield* Clock.currentTimeMillis)
          if (remaining <= 0) return yield* Effect.fail<SendFailure>({ _tag: "Timeout" })
          // Probes carry none: they load code, and a process that freezes loading it fails the deploy.
          const id = Crypto.randomUUID()
          const ticket: Ticket = { functionId, proc, state: "pending", drop: undefined }
          if (path === "/invoke") tickets.set(id, ticket)
          const payload = frame(path === "/invoke" ? { ...meta, ticket: id } : meta, body)
          proc.inFlight++
          proc.running.set(functionId, (proc.running.get(functionId) ?? 0) + 1)
          proc.requests++
          proc.busyUntil = Math.max(proc.busyUntil, deadline)
          const outcome = yield* post(proc, path, payload, path === "/invoke" ? ticket : undefined).pipe(
            Effect.timeoutOption(remaining),
            Effect.result,
            Effect.ensuring(Effect.sync(() => {
              proc.inFlight--
              const running = (proc.running.get(functionId) ?? 1) - 1
              if (running === 0) proc.running.delete(functionId)
              else proc.running.set(functionId, running)
              tickets.delete(id)
              ticket.drop = undefined
              // Whatever happens next, this attempt may no longer start.
              if (ticket.state === "pending") ticket.state = "withdrawn"
            }))
          )
          if (outcome._tag === "Failure") {
            const reason = yield* Deferred.await(proc.ended).pipe(Effect.timeoutOption(1_000))
            // Its process died (or was killed) before the function started: provably not run, so again.
            if (path === "/invoke" && ticket.state === "withdrawn" && Option.isSome(reason)) continue
            return yield* Effect.fail<SendFailure>({
              _tag: "Crashed",
              message: Option.getOrElse(reason, () => `The function's process failed: ${outcome.failure}`)
            })
          }
          if (Option.isNone(outcome.success)) {
            const now = yield* Clock.currentTimeMillis
            if (proc.stalled || (proc.pingSince !== undefined && now - proc.pingSince >= options.stallMs)) {
              // Already silent for a while: frozen, and nothing else will stop it.
              yield* endProc(proc, frozenReason, true)
            } else {
              yield* afterTimeout(proc).pipe(Effect.forkIn(scope))
            }
            return yield* Effect.fail<SendFailure>({ _tag: "Timeout" })
          }
          // Withdrawn from a stalled process before it started: again, elsewhere.
          if (outcome.success.value === undefined) continue
          const answer = unframe(outcome.success.value)
          // Refused at its start (withdrawn meanwhile): it did not run.
          if (answer.meta?.phase === "withdrawn") continue
          return answer
        }
      })

    /** The slot a newly deployed function lives on: the one with the fewest functions. */
    const place = () => {
      const slot = slots.reduce((a, b) => (b.functions < a.functions ? b : a))
      slot.functions++
      return slot.index
    }
    const release = (slot: number) => {
      const target = slots[slot]
      if (target !== undefined && target.functions > 0) target.functions--
    }

    const stats = Effect.sync((): ReadonlyArray<ProcessStats> =>
      [...slots.map((slot) => slot.current), ...draining]
        .filter((proc): proc is Proc => proc !== undefined)
        .map((proc) => ({
          slot: proc.slot.index,
          incarnation: proc.incarnation,
          pid: proc.pid,
          state: proc.state,
          stalled: proc.stalled,
          inFlight: proc.inFlight,
          requests: proc.requests,
          started: [...tickets.values()].flatMap((ticket) =>
            ticket.proc === proc && ticket.state === "started" ? [ticket.functionId] : []
          ),
          rssKb: proc.rssKb,
          functions: proc.slot.functions
        }))
    )

    /** Fresh resident sizes of the running processes (Linux). */
    const measure = Effect.gen(function*() {
      const procs = [...slots.map((slot) => slot.current), ...draining].filter((proc): proc is Proc =>
        proc !== undefined && proc.state !== "ended"
      )
      for (const proc of procs) proc.rssKb = yield* readRssKb(proc.pid)
      return yield* stats
    })

    return { send, place, release, stats, measure, token } as const
  })

export type Supervisor = Effect.Success<ReturnType<typeof makeSupervisor>>
