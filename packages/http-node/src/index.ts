export * as Host from "./Host.ts"
export { AuthenticationLive } from "./handlers/Authentication.ts"
export { RequestErrorsLive } from "./handlers/RequestErrors.ts"
export { HostConfig } from "./Config.ts"
export { layerLogging } from "./Logging.ts"
export { capMallocArenas } from "./MallocArenas.ts"
export { layerCliStorage, layerPorts } from "./Ports.ts"
export * as Embed from "./embed/Embed.ts"
export {
  type HostPorts,
  makeParley,
  type Parley,
  type ParleyHandle,
  type ParleyNetwork,
  type ParleyOptions,
  type ParleyServices,
  type ParleyStorage
} from "./embed/Embed.ts"
export type { ParleyMount } from "./embed/Mount.ts"
