/**
 * What a status report of a broadcast message costs the counters of migration 0030 (issue 30 §2), cut:
 *
 * - A message going from `pending` to `sent` (the network's first report of every send) moves no counter: the
 *   recipient's bits read `failed`, `delivered` and `read`, and whether the network accepted it (its network id).
 *   The update trigger now passes over that change, so a third of the reports no longer rewrite their recipient.
 * - A broadcast message recorded before it goes out (no network id yet, `pending`) moves no counter either: its
 *   recipient counts it once the network accepted it. The insert trigger passes over it.
 * - The recipient's bits read `held_until` as a column (it exists since 0034), not through a row-to-JSON copy of the
 *   recipient on every write.
 * - The bits are recomputed only when a column they read is written: the sender's mark before a send
 *   (`attempted_at`) and an erasure (phone number, parameters) no longer look up the recipient's message.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // As in 0030, apart from `held_until`.
  yield* sql`
    CREATE OR REPLACE FUNCTION msg_broadcast_recipient_bits() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      m record;
      joined boolean := false;
      bits smallint := 0;
    BEGIN
      SELECT id, status, network_id, conversation_id INTO m FROM msg_messages WHERE id = NEW.message_id;
      IF FOUND THEN
        joined := NEW.status = 'sent' OR (NEW.status = 'pending' AND m.network_id IS NOT NULL AND m.status <> 'failed');
      END IF;
      IF NEW.status = 'pending' AND NOT joined THEN bits := bits | 1; END IF;
      IF (NEW.status = 'sent' OR joined) AND NOT (joined AND m.status = 'failed') THEN bits := bits | 2; END IF;
      IF NEW.status IN ('failed', 'suppressed') OR (joined AND m.status = 'failed') THEN bits := bits | 4; END IF;
      IF joined AND m.status IN ('delivered', 'read') THEN bits := bits | 8; END IF;
      IF joined AND m.status = 'read' THEN bits := bits | 16; END IF;
      IF joined AND NEW.sent_at IS NOT NULL AND EXISTS (
        SELECT 1 FROM msg_messages i
        WHERE i.conversation_id = m.conversation_id AND i.direction = 'inbound'
          AND i.created_at > NEW.sent_at AND i.created_at <= NEW.sent_at + interval '24 hours'
      ) THEN bits := bits | 32; END IF;
      IF bits & 1 > 0 AND NEW.held_until IS NOT NULL THEN bits := bits | 64; END IF;
      IF TG_OP = 'UPDATE' AND NEW.counted = -1 AND bits = OLD.counted THEN RETURN NULL; END IF;
      NEW.counted := bits;
      RETURN NEW;
    END $$`
  // The columns the bits read, and `counted` (set to -1 to ask for them again).
  yield* sql`DROP TRIGGER msg_broadcast_recipients_bits ON msg_broadcast_recipients`
  yield* sql`
    CREATE TRIGGER msg_broadcast_recipients_bits BEFORE INSERT OR UPDATE OF status, message_id, sent_at, held_until, counted
    ON msg_broadcast_recipients FOR EACH ROW EXECUTE FUNCTION msg_broadcast_recipient_bits()`
  // The statuses the bits tell apart: `pending` and `sent` read alike.
  yield* sql`DROP TRIGGER msg_messages_broadcast_update ON msg_messages`
  yield* sql`
    CREATE TRIGGER msg_messages_broadcast_update AFTER UPDATE ON msg_messages
    FOR EACH ROW WHEN (NEW.origin = 'broadcast' AND (
      OLD.network_id IS DISTINCT FROM NEW.network_id OR (
        OLD.status IS DISTINCT FROM NEW.status
        AND (OLD.status NOT IN ('pending', 'sent') OR NEW.status NOT IN ('pending', 'sent')))))
    EXECUTE FUNCTION msg_broadcast_message_changed()`
  yield* sql`DROP TRIGGER msg_messages_broadcast_insert ON msg_messages`
  yield* sql`
    CREATE TRIGGER msg_messages_broadcast_insert AFTER INSERT ON msg_messages
    FOR EACH ROW WHEN (NEW.direction = 'inbound' OR (NEW.origin = 'broadcast' AND (
      NEW.network_id IS NOT NULL OR NEW.status NOT IN ('pending', 'sent'))))
    EXECUTE FUNCTION msg_broadcast_message_changed()`
})
