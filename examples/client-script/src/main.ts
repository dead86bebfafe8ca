/**
 * A script that drives Parley with the Promise client: creates a workflow
 * that greets whoever writes in, activates it, lists the project's
 * workflows, then runs it for a simulated contact (the sandbox of
 * `npm start`) and reads the execution and its step events.
 *
 *   PARLEY_URL=http://127.0.0.1:4000 PARLEY_API_KEY=pk_... npm start
 */
import { createParleyClient, ParleyError } from "@parley/client"

const baseUrl = process.env.PARLEY_URL ?? "http://127.0.0.1:4000"
const apiKey = process.env.PARLEY_API_KEY
if (apiKey === undefined || apiKey === "") {
  console.error("Set PARLEY_API_KEY to a project's API key (printed by `npm start` on first run).")
  process.exit(1)
}

const phoneNumberId = process.env.PARLEY_PHONE_NUMBER_ID ?? "100000000000001"
const contact = "+15550001111"

const parley = createParleyClient({ baseUrl, apiKey })

try {
  const { data: created } = await parley.workflows.create({
    payload: {
      workflow: {
        name: `Greeter ${new Date().toISOString()}`,
        definition: {
          nodes: [
            { id: "start", position: { x: 0, y: 0 }, data: { node_type: "start", config: {} } },
            { id: "hello", position: { x: 240, y: 0 }, data: { node_type: "send_text", config: { message: "Hello!" } } }
          ],
          edges: [{ source: "start", target: "hello" }]
        }
      }
    }
  })
  console.log(`created  ${created.id}  ${created.name}  (${created.status})`)

  const { data: active } = await parley.workflows.update({
    params: { id: created.id },
    payload: { workflow: { status: "active", lock_version: created.lock_version } }
  })
  console.log(`updated  ${active.id}  status=${active.status}  lock_version=${active.lock_version}`)

  // Lists answer `{ body, headers }`: the JSON body, and the paging headers.
  const { body } = await parley.workflows.list({ query: { limit: "20" } })
  console.log(`\n${body.data.length} workflow(s):`)
  for (const workflow of body.data) {
    console.log(`  ${workflow.status.padEnd(8)} ${workflow.slug.padEnd(40)} ${workflow.id}`)
  }

  // A simulated contact writes in first: free-form messages need an open 24-hour window.
  await parley.sandbox.inbound({ payload: { phone_number_id: phoneNumberId, from: contact, message: { type: "text", text: { body: "hi" } } } })
  const { data: started } = await parley.executions.start({
    params: { id: active.id },
    payload: { workflow_execution: { phone_number: contact, phone_number_id: phoneNumberId } }
  })
  let execution = (await parley.executions.get({ params: { id: started.id } })).data
  for (let i = 0; i < 50 && execution.status === "running"; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    execution = (await parley.executions.get({ params: { id: started.id } })).data
  }
  console.log(`\nexecution ${execution.id}: ${execution.status}`)
  const { body: events } = await parley.executions.events({ params: { id: started.id }, query: {} })
  for (const event of [...events.data].reverse()) console.log(`  ${event.created_at}  ${event.event_type}`)
} catch (error) {
  if (error instanceof ParleyError) {
    console.error(`Parley refused: ${error.status} ${error.error}`)
    for (const detail of error.details ?? []) console.error(`  ${detail.path}: ${detail.message}`)
    process.exitCode = 1
  } else {
    throw error
  }
} finally {
  await parley.close()
}
