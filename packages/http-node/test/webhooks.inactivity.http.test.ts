/**
 * `msg.conversation.inactive` over real HTTP on memory ports, to a loopback
 * receiver (see `webhooks.inactivity.support.ts`).
 */
import { Ids } from "@parley/core"
import { layerMemoryJobQueue, layerMemoryStorage } from "@parley/core/testing"
import { Effect, Layer } from "effect"
import { inactivityOverHttp } from "./webhooks.inactivity.support.ts"

inactivityOverHttp("memory", Effect.succeed(Layer.mergeAll(layerMemoryStorage, layerMemoryJobQueue, Ids.layer)))
