/** The behaviour every `TriggersRepo` adapter owes, written once and run against each adapter. */
import { assert, layer } from "@effect/vitest"
import { Effect, type Layer, Option } from "effect"
import type { ProjectsRepo } from "../../projects/ProjectsRepo.ts"
import { TriggersRepo, WorkflowsRepo } from "../../workflows/WorkflowsRepo.ts"
import type { WorkflowRecord } from "../../workflows/Workflow.ts"
import { at, dies, givenProject, makeTrigger, makeWorkflow } from "./fixtures.ts"

const givenWorkflow = (projectId: string, overrides: Partial<WorkflowRecord> = {}) =>
  Effect.gen(function*() {
    const workflow = makeWorkflow(projectId, overrides)
    yield* (yield* WorkflowsRepo).insert(workflow)
    return workflow
  })

export const triggersRepoConformance = <E>(
  name: string,
  storage: Layer.Layer<ProjectsRepo | WorkflowsRepo | TriggersRepo, E>
): void =>
  layer(storage, { excludeTestServices: true })(name, (it) => {
    it.effect("stores triggers exactly as given and lists a workflow's oldest first", () =>
      Effect.gen(function*() {
        const repo = yield* TriggersRepo
        const project = yield* givenProject()
        const workflow = yield* givenWorkflow(project.id)
        const newer = makeTrigger(project.id, workflow.id, {
          trigger_type: "inbound_message",
          active: false,
          display_name: "Inbound",
          triggerable: { phone_number_id: "pn_1", nested: { n: 1.5, list: ["a", null] } },
          created_at: at(2),
          updated_at: at(3)
        })
        const older = makeTrigger(project.id, workflow.id, { created_at: at(1) })
        yield* repo.insert(newer)
        yield* repo.insert(older)
        assert.deepStrictEqual(yield* repo.findById(project.id, newer.id), Option.some(newer))
        assert.deepStrictEqual(yield* repo.listByWorkflow(project.id, workflow.id), [older, newer])
        assert.isTrue(Option.isNone(yield* repo.findById(project.id, "trg_missing")))
      }))

    it.effect("lists the project's triggers of a type with their workflow's status and name", () =>
      Effect.gen(function*() {
        const repo = yield* TriggersRepo
        const project = yield* givenProject()
        const other = yield* givenProject()
        const live = yield* givenWorkflow(project.id, { name: "Live one", status: "active" })
        const draft = yield* givenWorkflow(project.id, { name: "Draft one", status: "draft" })
        const foreign = yield* givenWorkflow(other.id, { status: "active" })
        const first = makeTrigger(project.id, draft.id, { trigger_type: "inbound_message", created_at: at(1) })
        const second = makeTrigger(project.id, live.id, { trigger_type: "inbound_message", created_at: at(2) })
        yield* repo.insert(second)
        yield* repo.insert(first)
        yield* repo.insert(makeTrigger(project.id, live.id, { trigger_type: "api_call" }))
        yield* repo.insert(makeTrigger(other.id, foreign.id, { trigger_type: "inbound_message" }))
        assert.deepStrictEqual(yield* repo.listByType(project.id, "inbound_message"), [
          { trigger: first, workflowStatus: "draft", workflowName: "Draft one" },
          { trigger: second, workflowStatus: "active", workflowName: "Live one" }
        ])
        assert.deepStrictEqual(yield* repo.listByType(project.id, "msg_event"), [])
      }))

    it.effect("updates a trigger's settings in its own project only", () =>
      Effect.gen(function*() {
        const repo = yield* TriggersRepo
        const project = yield* givenProject()
        const other = yield* givenProject()
        const workflow = yield* givenWorkflow(project.id)
        const trigger = makeTrigger(project.id, workflow.id, { created_at: at(1) })
        yield* repo.insert(trigger)
        const changed = {
          ...trigger,
          active: false,
          display_name: "Renamed",
          triggerable: { event: "delivered" },
          updated_at: at(8)
        }
        yield* repo.update(changed)
        assert.deepStrictEqual(yield* repo.findById(project.id, trigger.id), Option.some(changed))
        yield* repo.update({ ...changed, project_id: other.id, display_name: "Hijacked" })
        assert.deepStrictEqual(yield* repo.findById(project.id, trigger.id), Option.some(changed))
        assert.isTrue(Option.isNone(yield* repo.findById(other.id, trigger.id)))
      }))

    it.effect("deletes a trigger in its own project only", () =>
      Effect.gen(function*() {
        const repo = yield* TriggersRepo
        const project = yield* givenProject()
        const other = yield* givenProject()
        const workflow = yield* givenWorkflow(project.id)
        const trigger = makeTrigger(project.id, workflow.id)
        yield* repo.insert(trigger)
        assert.isFalse(yield* repo.delete(other.id, trigger.id))
        assert.isTrue(yield* repo.delete(project.id, trigger.id))
        assert.isFalse(yield* repo.delete(project.id, trigger.id))
        assert.deepStrictEqual(yield* repo.listByWorkflow(project.id, workflow.id), [])
      }))

    it.effect("refuses a trigger whose workflow is missing or in another project", () =>
      Effect.gen(function*() {
        const repo = yield* TriggersRepo
        const project = yield* givenProject()
        const other = yield* givenProject()
        const foreign = yield* givenWorkflow(other.id)
        yield* dies(repo.insert(makeTrigger(project.id, "wf_missing")))
        yield* dies(repo.insert(makeTrigger(project.id, foreign.id)))
        assert.deepStrictEqual(yield* repo.listByWorkflow(other.id, foreign.id), [])
      }))
  })
