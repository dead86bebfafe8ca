/** The network simulator: the model, its in-process transport, and what a host needs to run on it. */
export * from "./Simulator.ts"
export * from "./Transport.ts"
export * from "./Bootstrap.ts"
