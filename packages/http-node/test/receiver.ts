/**
 * Test support: a webhook receiver on a random loopback port that keeps the
 * raw bytes and headers of every request and answers as the test says.
 */
import { Effect } from "effect"
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"

export interface ReceivedRequest {
  readonly method: string
  readonly path: string
  readonly headers: IncomingHttpHeaders
  /** The body exactly as it arrived. */
  readonly raw: Buffer
  /** Wall-clock arrival time (ms). */
  readonly at: number
}

export interface Answer {
  readonly status: number
  readonly body?: string | undefined
  readonly headers?: Record<string, string> | undefined
  /** Wait this long before answering. */
  readonly delayMs?: number | undefined
}

export interface Receiver {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string
  readonly requests: Array<ReceivedRequest>
  /** How later requests are answered; 200 with an empty body by default. */
  readonly answer: (f: (request: ReceivedRequest) => Answer) => void
  /** Resolves once `count` requests arrived (rejects after `withinMs`). */
  readonly received: (count: number, withinMs?: number) => Promise<Array<ReceivedRequest>>
}

/** Starts a receiver that stops with the scope. */
export const startReceiver = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ receiver: Receiver; close: () => Promise<void> }>((resolve) => {
      const requests: Array<ReceivedRequest> = []
      let answer: (request: ReceivedRequest) => Answer = () => ({ status: 200 })
      const server = createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (chunk: Buffer) => chunks.push(chunk))
        req.on("end", () => {
          const received: ReceivedRequest = {
            method: req.method ?? "",
            path: req.url ?? "",
            headers: req.headers,
            raw: Buffer.concat(chunks),
            at: Date.now()
          }
          requests.push(received)
          const reply = answer(received)
          const send = () => {
            if (res.destroyed) return
            res.writeHead(reply.status, { "content-type": "text/plain", ...reply.headers })
            res.end(reply.body ?? "")
          }
          if (reply.delayMs !== undefined) setTimeout(send, reply.delayMs)
          else send()
        })
      })
      server.keepAliveTimeout = 1000
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo
        const receiver: Receiver = {
          url: `http://127.0.0.1:${port}`,
          requests,
          answer: (f) => {
            answer = f
          },
          received: async (count, withinMs = 15_000) => {
            const deadline = Date.now() + withinMs
            while (requests.length < count) {
              if (Date.now() > deadline) throw new Error(`receiver: ${requests.length} of ${count} requests arrived`)
              await new Promise((r) => setTimeout(r, 10))
            }
            return requests.slice(0, count)
          }
        }
        resolve({
          receiver,
          close: () =>
            new Promise<void>((done) => {
              server.closeAllConnections()
              server.close(() => done())
            })
        })
      })
    })
  ),
  ({ close }) => Effect.promise(close)
).pipe(Effect.map(({ receiver }) => receiver))
