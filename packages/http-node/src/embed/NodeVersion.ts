/**
 * The Node.js versions Parley runs on: 22.19 or later (effect 4.1 needs it; the `engines` of every package say
 * the same). An older Node fails deep inside a dependency (undici, `Map.groupBy`) after the database may already
 * be running; this says so in one line before anything starts.
 */

/** The line an unsupported Node gets, or `undefined` on a supported one. */
export const unsupportedNode = (version: string = process.versions.node): string | undefined => {
  const [major = 0, minor = 0] = version.split(".").map(Number)
  return major > 22 || (major === 22 && minor >= 19) ? undefined : `Parley needs Node.js 22.19 or later; this is ${version}`
}

/** Thrown by `requireSupportedNode`: its message is the one line, and its stack is that line too (no frames to read). */
export class UnsupportedNodeError extends Error {
  constructor(message: string) {
    super(message)
    this.name = "UnsupportedNodeError"
    this.stack = message
  }
}

/** Throws `UnsupportedNodeError` on a Node older than 22.19. */
export const requireSupportedNode = (version?: string): void => {
  const problem = unsupportedNode(version)
  if (problem !== undefined) throw new UnsupportedNodeError(problem)
}
