/** The shapes the inbox API answers (`InboxApi` in @parley/core). */
export type { Language, Mode } from "../../embed-ui/i18n.ts"
import type { Language, Mode } from "../../embed-ui/i18n.ts"

export interface Session {
  readonly name: string
  readonly scope_type: "project" | "customer" | "phone_number"
  readonly scope_name: string | null
  readonly language: Language
  readonly default_mode: Mode
  readonly sender_name: string
  readonly numbers: ReadonlyArray<{ msg_config_id: string; phone_number_id: string; name: string; display_phone_number: string }>
}

export interface Handoff {
  readonly execution_id: string
  readonly workflow_id: string
  readonly reason: string | null
  readonly source: string
  readonly since: string
  readonly context_data: unknown
}

export interface Conversation {
  readonly id: string
  readonly status: "active" | "ended"
  readonly contact_name: string | null
  readonly phone_number: string | null
  readonly username: string | null
  readonly msg_config_id: string
  readonly phone_number_id: string
  readonly last_active_at: string
  readonly last_message_text: string | null
  readonly last_inbound_at: string | null
  readonly window_open: boolean
  readonly unread_count: number
  readonly handoff: Handoff | null
}

export interface Message {
  readonly id: string
  readonly direction: "inbound" | "outbound"
  readonly type: string
  readonly status: "pending" | "sent" | "delivered" | "read" | "failed"
  readonly created_at: string
  readonly text: string | null
  readonly media: { content_type: string; filename: string; byte_size: number } | null
  readonly sent_by: { type: string; id: string; name: string | null } | null
  readonly error: string | null
}

export interface Thread {
  readonly conversation: Conversation
  readonly messages: ReadonlyArray<Message>
}

export interface Template {
  readonly name: string
  readonly language: string
  readonly category: string
  readonly body: string | null
  readonly parameter_count: number
}
