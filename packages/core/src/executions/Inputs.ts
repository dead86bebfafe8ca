/**
 * Inbound messages as the input of an execution (decisions 2.4.4, 10.1):
 * the value one message stands for, the value of a debounced batch, and the
 * lock that serialises everything routed to one (number, contact) pair.
 */
import { Option, Predicate } from "effect"
import type { MessageRecord } from "../messaging/Message.ts"
import type { ExecutionInputRecord } from "./ExecutionsRepo.ts"
import { parseJson } from "../shared/Json.ts"

const formResponse = (text: unknown): unknown =>
  Predicate.isString(text) ? Option.getOrElse(parseJson(text), () => text) : null

/** The value one inbound message stands for (decisions 2.4.4). */
export const messageValue = (m: MessageRecord): unknown => {
  const fields = m.fields
  if (m.type === "text" && Predicate.isObject(fields["text"]) && Predicate.isString(fields["text"]["body"])) return fields["text"]["body"]
  if (m.type === "interactive" && Predicate.isObject(fields["interactive"])) {
    const interactive = fields["interactive"]
    const kind = interactive["type"]
    if ((kind === "button_reply" || kind === "list_reply") && Predicate.isObject(interactive[kind])) {
      const reply = interactive[kind]
      return { type: kind, id: reply["id"] ?? null, title: reply["title"] ?? null }
    }
    if (kind === "nfm_reply" && Predicate.isObject(interactive["nfm_reply"])) {
      const response = m.ext_data["flow_response"] ?? formResponse(interactive["nfm_reply"]["response_json"])
      return { type: "nfm_reply", response }
    }
  }
  // A template's quick-reply button answers like an interactive button.
  if (m.type === "button" && Predicate.isObject(fields["button"])) {
    return { type: "button_reply", id: fields["button"]["payload"] ?? null, title: fields["button"]["text"] ?? null }
  }
  return m.content ?? ""
}

/**
 * The value of a batch, oldest first: one message gives its own value;
 * several texts are joined with a newline; a batch holding a reply
 * (button, list, form) gives its newest reply, what the flow asked for.
 */
export const batchValue = (inputs: ReadonlyArray<ExecutionInputRecord>): unknown => {
  if (inputs.length === 1) return inputs[0]!.value
  if (inputs.every((i) => Predicate.isString(i.value))) return inputs.map((i) => i.value as string).join("\n")
  return [...inputs].reverse().find((i) => !Predicate.isString(i.value))!.value
}

/** The network ids of a batch, for `user_input_received` (Parley's id when the network gave none). */
export const batchMessageIds = (inputs: ReadonlyArray<ExecutionInputRecord>) => inputs.map((i) => i.network_id ?? i.id)
