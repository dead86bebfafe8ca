/**
 * Every write the host makes to PostgreSQL, decoded into the statements it carries (the frontend protocol's Parse,
 * Bind and Query messages; a prepared statement named by a Bind is shown by the text its Parse carried). For reading
 * a path's round trips one by one: `bench/statements.ts` with `STATEMENTS_TRACE`. Every write is decoded while it is
 * installed (a prepared statement's text is only sent once), so install it only to trace.
 */
import * as Net from "node:net"
import { isDatabaseSocket } from "./executions.ts"

const cstring = (b: Buffer, at: number): [string, number] => {
  const end = b.indexOf(0, at)
  return [b.toString("utf8", at, end), end + 1]
}

export const traceDatabaseWrites = () => {
  const write = Net.Socket.prototype.write
  const prepared = new Map<string, string>()
  let lines: Array<string> | undefined
  Net.Socket.prototype.write = function(this: Net.Socket, ...args: Array<unknown>) {
    const chunk = args[0]
    if (isDatabaseSocket(this) && Buffer.isBuffer(chunk)) {
      const parts: Array<string> = []
      let at = 0
      while (at + 5 <= chunk.length) {
        const type = String.fromCharCode(chunk[at]!)
        const length = chunk.readInt32BE(at + 1)
        const body = chunk.subarray(at + 5, at + 1 + length)
        if (type === "P") {
          const [name, next] = cstring(body, 0)
          const [query] = cstring(body, next)
          if (name !== "") prepared.set(name, query)
          parts.push(`parse ${query}`)
        } else if (type === "B") {
          const [, next] = cstring(body, 0)
          const [name] = cstring(body, next)
          if (name !== "") parts.push(prepared.get(name) ?? `(prepared ${name})`)
        } else if (type === "Q") {
          parts.push(cstring(body, 0)[0])
        }
        at += 1 + length
      }
      const summary = parts.map((q) => q.replace(/\s+/g, " ").slice(0, 110)).join("\n      + ")
      lines?.push(`  ${summary === "" ? "(no statement: a driver writing a message at a time)" : summary}`)
    }
    return (write as (...a: Array<unknown>) => boolean).apply(this, args)
  } as typeof write
  return {
    begin: () => void (lines = []),
    end: () => {
      const taken = lines ?? []
      lines = undefined
      return taken
    },
    restore: () => void (Net.Socket.prototype.write = write)
  }
}
