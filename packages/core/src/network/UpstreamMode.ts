/** Which network a host talks to. */
import { Config } from "effect"

/** `PARLEY_UPSTREAM`: `simulator` (default: no credentials needed) or `cloud` (the real network at `PARLEY_UPSTREAM_URL`). */
export const UpstreamMode = Config.Literals(["simulator", "cloud"], "PARLEY_UPSTREAM").pipe(
  Config.withDefault("simulator" as const)
)
