/** The bytes a process allocates, counted by its collections (benches that compare allocation per operation). */
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Inspector from "node:inspector/promises"
import * as V8 from "node:v8"

/**
 * Bytes the host allocated from `start` until `stop`: what its collections freed plus what the heap grew by.
 * Counted, not timed: the same on a busy machine as on a quiet one.
 */
export const allocationCounter = () => {
  const profiler = new V8.GCProfiler()
  const usedAtStart = V8.getHeapStatistics().used_heap_size
  profiler.start()
  return () => {
    const result = profiler.stop()
    const freed = (result?.statistics ?? []).reduce(
      (sum, gc) => sum + Math.max(0, gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize),
      0
    )
    return freed + V8.getHeapStatistics().used_heap_size - usedAtStart
  }
}

/**
 * With a path (e.g. `BENCH_BROADCAST_HEAP_PROFILE`), V8's sampling heap profiler from now until the returned effect
 * runs, written there (a `.heapprofile` for Chrome's DevTools): where the allocation comes from. With `survivors`,
 * only what outlived a young-generation collection (promoted to the old generation, or still live at the end): what
 * grows the old generation, and so the peak RSS, between full collections.
 */
export const sampleAllocations = (path: string | undefined, options: { readonly survivors?: boolean } = {}) =>
  Effect.promise(async () => {
    if (path === undefined || path === "") return Effect.void
    const session = new Inspector.Session()
    session.connect()
    // Every allocation sampled, also what the collections freed since: the garbage is what the work costs (or, with
    // `survivors`, only the garbage the old generation collects).
    await session.post("HeapProfiler.startSampling", {
      samplingInterval: 32_768,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: options.survivors !== true
    })
    return Effect.promise(async () => {
      const { profile } = await session.post("HeapProfiler.stopSampling")
      Fs.writeFileSync(path, JSON.stringify(profile))
      session.disconnect()
    })
  })

/**
 * With a path (e.g. `BENCH_BROADCAST_PROFILE`), V8's CPU profiler from now until the returned effect runs, written
 * there (a `.cpuprofile`; `bench/profileByFile.ts` sums it by file and function): where the process's CPU goes.
 */
export const profileCpu = (path: string | undefined) =>
  Effect.promise(async () => {
    if (path === undefined || path === "") return Effect.void
    const session = new Inspector.Session()
    session.connect()
    await session.post("Profiler.enable")
    await session.post("Profiler.start")
    return Effect.promise(async () => {
      const { profile } = await session.post("Profiler.stop")
      Fs.writeFileSync(path, JSON.stringify(profile))
      session.disconnect()
    })
  })
