/**
 * CPU time of a process and its descendants, every thread, from Linux's
 * `/proc/<pid>/task/<tid>/schedstat` (time on a CPU, in nanoseconds): how the
 * proxy bench charges PostgreSQL's server processes and a network running in
 * a process of its own. Undefined where there is no such `/proc`.
 *
 * A process of the tree that ends during a measurement (an autovacuum worker, a backend) takes its CPU out of the
 * live processes' sum; its parent's `cutime`/`cstime` (`/proc/<pid>/stat`, in clock ticks) hold it once reaped, so
 * each live process adds its reaped children's time: without it, PostgreSQL's CPU over a window could come out
 * negative.
 */
import * as Fs from "node:fs"

const read = (path: string): string | undefined => {
  try {
    return Fs.readFileSync(path, "utf8")
  } catch {
    return undefined
  }
}

/** Parent of every process: the field after the command name, which may itself hold spaces and parentheses. */
const parents = (): Map<number, number> => {
  const parentOf = new Map<number, number>()
  for (const entry of Fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const stat = read(`/proc/${entry}/stat`)
    if (stat === undefined) continue
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    parentOf.set(Number(entry), Number(fields[1]))
  }
  return parentOf
}

/** Clock ticks a second (`getconf CLK_TCK`: 100 on Linux's usual builds). */
const TICK_NANOS = 1e9 / 100

/** CPU of the children a process has reaped (`cutime` + `cstime`). */
const reapedChildrenNanos = (pid: number): number => {
  const stat = read(`/proc/${pid}/stat`)
  if (stat === undefined) return 0
  // Fields after the command name: state is the first, so `cutime` (field 16 of stat) is at index 13.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return (Number(fields[13]) + Number(fields[14])) * TICK_NANOS
}

const threadsCpuNanos = (pid: number): number => {
  let total = 0
  let tasks: ReadonlyArray<string> = []
  try {
    tasks = Fs.readdirSync(`/proc/${pid}/task`)
  } catch {
    return 0
  }
  for (const tid of tasks) total += Number((read(`/proc/${pid}/task/${tid}/schedstat`) ?? "0").split(" ")[0])
  return total
}

export const processTreeCpuMicros = (rootPid: number): number | undefined => {
  if (read(`/proc/${rootPid}/schedstat`) === undefined) return undefined
  const parentOf = parents()
  const tree = new Set([rootPid])
  // Parents are listed before or after their children: repeat until nothing joins.
  for (let grew = true; grew;) {
    grew = false
    for (const [pid, parent] of parentOf) {
      if (!tree.has(pid) && tree.has(parent)) {
        tree.add(pid)
        grew = true
      }
    }
  }
  let nanos = 0
  for (const pid of tree) nanos += threadsCpuNanos(pid) + reapedChildrenNanos(pid)
  return nanos / 1000
}
