/**
 * The Node.js versions Parley runs on: 22.19 or later (effect 4.1 needs it; the `engines` of every package say
 * the same). An older Node fails deep inside a dependency (undici, `Map.groupBy`) after the database may already
 * be running; importing `@parley/core` (which every other package does first) says so in one line instead.
 */

/** The line an unsupported Node gets, or `undefined` on a supported one (or outside Node: nothing to say there). */
export const unsupportedNode = (version: string | undefined = globalThis.process?.versions?.node): string | undefined => {
  if (version === undefined) return undefined
  const [major = 0, minor = 0] = version.split(".").map(Number)
  return major > 22 || (major === 22 && minor >= 19) ? undefined : `Parley needs Node.js 22.19 or later; this is ${version}`
}

/**
 * Thrown by `requireSupportedNode`. Its stack is its one line (no frames to read: where it was thrown says nothing
 * to a user), so an uncaught one prints that line.
 */
export class UnsupportedNodeError extends Error {
  constructor(message: string) {
    super(message)
    this.stack = `UnsupportedNodeError: ${message}`
  }
}
UnsupportedNodeError.prototype.name = "UnsupportedNodeError"

/** Throws `UnsupportedNodeError` on a Node older than 22.19. */
export const requireSupportedNode = (version?: string): void => {
  const problem = unsupportedNode(version)
  if (problem !== undefined) throw new UnsupportedNodeError(problem)
}
