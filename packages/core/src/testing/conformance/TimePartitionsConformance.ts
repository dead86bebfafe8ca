/**
 * The behaviour every `TimePartitions` adapter owes with the tables it keeps by time (`LogSearch`'s entries,
 * `StepEventsRepo`'s events), written once: a row of any time is stored whether its span was readied or not;
 * readying moves nothing out of sight; retention (`retainByTime`) removes every row before the cut it was answered
 * and keeps every row from the cut on, the cut at or before the retention's time (for log entries, at most a day
 * before it).
 *
 * Each test keeps to an era of its own (years long past), as retention is not scoped by project.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import { ExecutionsRepo, StepEventsRepo } from "../../executions/ExecutionsRepo.ts"
import { logEntry } from "../../logs/LogEntry.ts"
import { LOG_SOURCES, type LogEntryRecord, LogSearch } from "../../logs/LogSearch.ts"
import { retainByTime, TimePartitions } from "../../ports/TimePartitions.ts"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import { WorkflowsRepo } from "../../workflows/WorkflowsRepo.ts"
import { makeExecution, makeStepEvent } from "./ExecutionsStorageConformance.ts"
import { givenProject, makeWorkflow, uniqueId } from "./fixtures.ts"

export type TimePartitionsPorts = TimePartitions | LogSearch | StepEventsRepo | ExecutionsRepo | WorkflowsRepo | ProjectsRepo

const DAY = 24 * 60 * 60 * 1000
const HOUR = 60 * 60 * 1000
const iso = (ms: number) => new Date(ms).toISOString()

const entryAt = (projectId: string, ms: number): LogEntryRecord =>
  logEntry({
    id: uniqueId("log"),
    project_id: projectId,
    source: "external_api_log",
    occurred_at: iso(ms),
    ingested_at: iso(ms),
    problem: false,
    message: "GET /platform/v1/workflows 200"
  })

/** Every entry of the project over the era, newest first. */
const entriesOf = (projectId: string, from: number, until: number) =>
  Effect.gen(function*() {
    const page = yield* (yield* LogSearch).search({
      projectId,
      sources: LOG_SOURCES,
      since: iso(from),
      until: iso(until),
      words: [],
      filters: [],
      problemsOnly: false,
      limit: 1000,
      after: null
    })
    return page.entries.map((e) => e.occurred_at)
  })

export const timePartitionsConformance = <E>(name: string, storage: Layer.Layer<TimePartitionsPorts, E>): void => {
  describe(name, () => {
    layer(storage, { excludeTestServices: true })("TimePartitions", (it) => {
      it.effect("stores rows of any time, readied or not, and readying a span moves none out of sight", () =>
        Effect.gen(function*() {
          const partitions = yield* TimePartitions
          const logs = yield* LogSearch
          const project = uniqueId("prj")
          const day = Date.UTC(1981, 3, 10)
          const times = [day - 3 * DAY, day + HOUR, day + 23 * HOUR, day + DAY + HOUR, Date.UTC(2199, 0, 1)]
          yield* logs.append(times.map((t) => entryAt(project, t)))
          // The day and the next, twice: the second finds them ready.
          yield* partitions.prepare("log_entries", iso(day + 5 * HOUR), iso(day + DAY))
          yield* partitions.prepare("log_entries", iso(day), iso(day + DAY + 2 * HOUR))
          const later = entryAt(project, day + 2 * HOUR)
          yield* logs.append([later])
          assert.deepStrictEqual(
            yield* entriesOf(project, day - 10 * DAY, Date.UTC(2200, 0, 1)),
            [...times, day + 2 * HOUR].sort((a, b) => b - a).map(iso)
          )
        }))

      it.effect("retention removes the rows before its cut, keeps those at or after its time, and cuts at most a day early", () =>
        Effect.gen(function*() {
          const logs = yield* LogSearch
          const project = uniqueId("prj")
          const day = Date.UTC(1983, 6, 20)
          const times = [day - 40 * DAY, day - 2 * DAY + HOUR, day - DAY + 20 * HOUR, day + HOUR, day + 12 * HOUR, day + 13 * HOUR, day + 2 * DAY]
          yield* logs.append(times.map((t) => entryAt(project, t)))
          yield* (yield* TimePartitions).prepare("log_entries", iso(day - 2 * DAY), iso(day))
          const before = day + 12 * HOUR
          const cut = Date.parse(yield* (yield* TimePartitions).retire("log_entries", iso(before)))
          assert.isTrue(cut <= before && cut >= before - DAY, `cut ${iso(cut)} for ${iso(before)}`)
          // The rows left before the cut (outside any span, or the whole table in a store without spans) go by rows.
          yield* retainByTime("log_entries", before, logs.prune, 2)
          const left = yield* entriesOf(project, day - 50 * DAY, day + 3 * DAY)
          assert.deepStrictEqual(left, times.filter((t) => t >= cut).sort((a, b) => b - a).map(iso))
          assert.includeMembers(left, [day + 12 * HOUR, day + 13 * HOUR, day + 2 * DAY].map(iso))
        }))

      it.effect("keeps step events the same way, with their execution, cutting at the start of a span", () =>
        Effect.gen(function*() {
          const events = yield* StepEventsRepo
          const project = yield* givenProject()
          const workflow = makeWorkflow(project.id)
          yield* (yield* WorkflowsRepo).insert(workflow)
          const day = Date.UTC(1985, 1, 2)
          const times = [day - 40 * DAY, day - 9 * DAY, day - 5 * DAY, day - DAY + HOUR, day + HOUR, day + 10 * HOUR, day + DAY]
          const execution = makeExecution(workflow, { started_at: iso(times[0]!), last_event_at: iso(times[0]!) })
          assert.isTrue(yield* (yield* ExecutionsRepo).insert(execution))
          yield* events.append(times.map((t, seq) => makeStepEvent(execution, { seq, created_at: iso(t) })))
          yield* (yield* TimePartitions).prepare("workflow_step_events", iso(day - 10 * DAY), iso(day + DAY))
          const before = day + 10 * HOUR
          // Retiring twice answers the same cut: the spans before it are gone already.
          const cut = Date.parse(yield* (yield* TimePartitions).retire("workflow_step_events", iso(before)))
          assert.isTrue(cut <= before, `cut ${iso(cut)} for ${iso(before)}`)
          yield* retainByTime("workflow_step_events", before, events.prune, 1)
          const left = (yield* events.latest(execution, 10)).map((e) => Date.parse(e.created_at))
          assert.deepStrictEqual(left, times.filter((t) => t >= cut).sort((a, b) => b - a))
          assert.includeMembers(left, [day + 10 * HOUR, day + DAY])
        }))
    })
  })
}
