/**
 * An agent node's journal (decisions 10.6), kept on the execution record and
 * written in every checkpoint: the conversation with the model so far, and
 * what the model's last turn asked that is not done yet. After a crash the
 * activation goes on from here: the next model call sees the journal as its
 * history; a tool call the crash left half-done is reported as unverified.
 */
import { Predicate } from "effect"
import { Prompt } from "effect/ai"

export type AgentTurn =
  | { readonly role: "user"; readonly text: string }
  | {
    readonly role: "assistant"
    readonly text: string
    readonly calls: ReadonlyArray<AgentCall>
  }
  | {
    readonly role: "tool"
    readonly call_id: string
    readonly name: string
    readonly result: unknown
    readonly is_error: boolean
  }

export interface AgentCall {
  readonly id: string
  readonly name: string
  readonly params: unknown
}

/** Work the last model turn asked for, in order: its text to send, then its tool calls. */
export type AgentWork =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "call"; readonly call: AgentCall }

/** A tool an MCP server offered, listed once per activation so a resumed activation offers the same ones. */
export interface McpToolEntry {
  readonly server: string
  readonly tool: string
  /** `<server name>__<tool name>` (decisions 2.3.9). */
  readonly exposed: string
  readonly description: string
  readonly input_schema: unknown
}

export interface AgentState {
  readonly node_id: string
  /** 1 on entering the node; +1 each time new input arrives for it. */
  readonly activation: number
  /** The system prompt, interpolated when the activation began. */
  readonly system: string
  /** Model calls in this activation (`max_iterations` bounds it). */
  readonly iteration: number
  readonly turns: ReadonlyArray<AgentTurn>
  readonly work: ReadonlyArray<AgentWork>
  readonly mcp_tools: ReadonlyArray<McpToolEntry>
  /** The built-in tools of this node (its list or its workflow's default set, plus the forced ones). */
  readonly builtins: ReadonlyArray<string>
}

/** The model's view of the journal, after the (freshly interpolated) system prompt. */
export const toPrompt = (system: string, turns: ReadonlyArray<AgentTurn>): Prompt.Prompt =>
  Prompt.make([
    ...(system.trim().length > 0 ? [{ role: "system" as const, content: system }] : []),
    ...turns.map((t) => {
      switch (t.role) {
        case "user":
          return { role: "user" as const, content: t.text }
        case "assistant":
          return {
            role: "assistant" as const,
            content: [
              ...(t.text.length > 0 ? [{ type: "text" as const, text: t.text }] : []),
              ...t.calls.map((c) => ({ type: "tool-call" as const, id: c.id, name: c.name, params: c.params }))
            ]
          }
        case "tool":
          return {
            role: "tool" as const,
            content: [{ type: "tool-result" as const, id: t.call_id, name: t.name, isFailure: t.is_error, result: t.result }]
          }
      }
    })
  ])

/** The state after one item of `work` is done (a tool's result joins the journal). */
export const settleCall = (
  state: AgentState,
  call: AgentCall,
  result: unknown,
  isError: boolean
): AgentState => ({
  ...state,
  turns: [...state.turns, { role: "tool", call_id: call.id, name: call.name, result, is_error: isError }],
  work: state.work.filter((t) => !(t.kind === "call" && t.call.id === call.id))
})

/**
 * Ends the turn early (a handoff, a wait): the calls not made get a result
 * saying so, since the model's API requires an answer to every call it made.
 */
export const skipRest = (state: AgentState, why: string): AgentState => ({
  ...state,
  turns: [
    ...state.turns,
    ...state.work.flatMap((t): ReadonlyArray<AgentTurn> =>
      t.kind === "call" ? [{ role: "tool", call_id: t.call.id, name: t.call.name, result: { skipped: why }, is_error: true }] : []
    )
  ],
  work: []
})

/** Input routed to a waiting agent: a new activation with the contact's words as the next user turn. */
export const activate = (state: AgentState, value: unknown): AgentState => ({
  ...state,
  activation: state.activation + 1,
  iteration: 0,
  turns: value === undefined ? state.turns : [...state.turns, { role: "user", text: Predicate.isString(value) ? value : JSON.stringify(value) }]
})

