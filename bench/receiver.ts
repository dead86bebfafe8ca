/**
 * The loopback webhook receiver of `webhooks.ts`, in a process of its own (as
 * a receiver would be), so its work does not share the host's thread. It
 * answers 200 to every POST and reports each arrival (event id and name, when
 * it arrived, the emission time the event carries) to its parent, in batches:
 * first `{ port }`, then `{ arrivals }` every 20 ms.
 */
import * as Http from "node:http"

export interface Arrival {
  readonly id: string
  readonly name: string
  readonly at: number
  readonly t: number
}

let arrivals: Array<Arrival> = []
const server = Http.createServer((req, res) => {
  const chunks: Array<Buffer> = []
  req.on("data", (c: Buffer) => chunks.push(c))
  req.on("end", () => {
    const payload = JSON.parse(Buffer.concat(chunks).toString("utf8"))
    res.writeHead(200).end()
    arrivals.push({ id: payload.data.id, name: payload.data.name, at: Date.now(), t: payload.data.properties.t })
  })
})
server.listen(0, "127.0.0.1", () => process.send!({ port: (server.address() as { port: number }).port }))
setInterval(() => {
  if (arrivals.length === 0) return
  process.send!({ arrivals })
  arrivals = []
}, 20)
process.on("disconnect", () => process.exit(0))
