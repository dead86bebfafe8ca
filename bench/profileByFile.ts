/**
 * Sums a V8 CPU profile (`node --cpu-prof`, a `.cpuprofile`) or sampling heap profile (`.heapprofile`) by file: self
 * time (or bytes) of every frame, by the file it is in (node_modules collapsed to the package's file), then the top
 * functions. Idle and GC samples are shown apart, so shares are of the busy time.
 *
 *   node bench/profileByFile.ts <profile> [top files, default 40] [top functions, default 40]
 */
import * as Fs from "node:fs"

interface CallFrame {
  readonly functionName: string
  readonly url: string
  readonly lineNumber: number
}
interface CpuNode {
  readonly id: number
  readonly callFrame: CallFrame
  readonly children?: ReadonlyArray<number>
}
interface HeapNode {
  readonly callFrame: CallFrame
  readonly selfSize: number
  readonly children: ReadonlyArray<HeapNode>
}

const [path, topFilesArg, topFunctionsArg] = process.argv.slice(2)
if (path === undefined) throw new Error("usage: profileByFile.ts <profile> [files] [functions]")
const profile = JSON.parse(Fs.readFileSync(path, "utf8"))

/** A short name for a frame's file: the path below node_modules, or below the repository. */
const fileOf = (url: string) => {
  if (url === "") return "(native)"
  const at = url.lastIndexOf("node_modules/")
  if (at >= 0) return url.slice(at + "node_modules/".length)
  return url.replace(/^file:\/\/.*?\/(packages|bench)\//, "$1/")
}

const byFile = new Map<string, number>()
const byFunction = new Map<string, number>()
let total = 0
const add = (frame: CallFrame, amount: number) => {
  const file = fileOf(frame.url)
  byFile.set(file, (byFile.get(file) ?? 0) + amount)
  const fn = `${frame.functionName || "(anonymous)"} ${file}:${frame.lineNumber + 1}`
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + amount)
}

let unit: string
if (Array.isArray(profile.nodes)) {
  unit = "ms"
  const nodes = new Map<number, CpuNode>(profile.nodes.map((n: CpuNode) => [n.id, n]))
  const deltas: ReadonlyArray<number> = profile.timeDeltas
  const samples: ReadonlyArray<number> = profile.samples
  for (let i = 0; i < samples.length; i++) {
    const frame = nodes.get(samples[i]!)!.callFrame
    const ms = (deltas[i + 1] ?? 0) / 1000
    if (frame.functionName === "(idle)" || frame.functionName === "(program)") continue
    total += ms
    add(frame, ms)
  }
} else {
  unit = "KB"
  const walk = (node: HeapNode) => {
    total += node.selfSize / 1024
    add(node.callFrame, node.selfSize / 1024)
    for (const child of node.children) walk(child)
  }
  walk(profile.head)
}

const top = (map: Map<string, number>, n: number) =>
  [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, n).map(([name, v]) =>
    `${v.toFixed(1).padStart(10)} ${unit} ${(100 * v / total).toFixed(1).padStart(5)}%  ${name}`
  )

console.log(`busy ${total.toFixed(1)} ${unit} (idle and (program) samples left out)\n\nby file:`)
console.log(top(byFile, Number(topFilesArg ?? 40)).join("\n"))
console.log("\nby function:")
console.log(top(byFunction, Number(topFunctionsArg ?? 40)).join("\n"))
