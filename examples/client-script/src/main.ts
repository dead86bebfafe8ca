/**
 * A script that drives Parley with the Promise client: creates a workflow
 * that greets whoever writes in, activates it, and lists the project's
 * workflows.
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
