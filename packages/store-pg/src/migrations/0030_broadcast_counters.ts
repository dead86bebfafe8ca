/**
 * A broadcast's counters kept as its recipients and their messages change (issue 30 §2), instead of counted over
 * every recipient's message on each read.
 *
 * Each recipient keeps `counted`, the counters it falls in now (bits: 1 pending, 2 sent, 4 failed, 8 delivered,
 * 16 read, 32 responded, 64 held for quiet hours), recomputed by a row trigger whenever the recipient is written; a change to a broadcast
 * message's status or network id, and an inbound message in the conversation of a broadcast message (a response),
 * rewrite the recipients concerned. Every change appends its difference to `msg_broadcast_counts` (append-only: no
 * row that every writer locks; one row per statement for added and removed recipients, one per recipient whose bits
 * moved otherwise); a read sums them, and a read or the sender's
 * settlement folds them into one row when they grow many. All of it runs inside the transaction of the change it counts, so a crash at any instant
 * leaves the sums equal to what the recipients and their messages say.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE msg_broadcast_recipients ADD COLUMN counted smallint NOT NULL DEFAULT 0`
  // A recipient is rewritten as its message's reports come (only `counted` changes): room on its page keeps those
  // updates off the table's six indexes (heap-only tuples).
  yield* sql`ALTER TABLE msg_broadcast_recipients SET (fillfactor = 70)`
  // Status reports reach their recipient through its message.
  yield* sql`CREATE INDEX msg_broadcast_recipients_message_idx ON msg_broadcast_recipients (message_id)`
  yield* sql`
    CREATE TABLE msg_broadcast_counts (
      broadcast_id text COLLATE "C" NOT NULL REFERENCES msg_broadcasts (id) ON DELETE CASCADE,
      total integer NOT NULL,
      pending integer NOT NULL,
      sent integer NOT NULL,
      failed integer NOT NULL,
      delivered integer NOT NULL,
      read integer NOT NULL,
      responded integer NOT NULL,
      held integer NOT NULL DEFAULT 0
    )`
  yield* sql`CREATE INDEX msg_broadcast_counts_broadcast_idx ON msg_broadcast_counts (broadcast_id)`

  // The rules of decisions "Broadcasts" (counters): the recipient's message counts when the sender settled it `sent`,
  // or when it is still `pending` but the network accepted the message (a stop read mid-batch). A write sets the
  // recipient's bits; a rewrite that only asks for them again (counted = -1) and finds them unchanged writes nothing.
  // PL/pgSQL, not SQL: its statements' plans are kept per session (an SQL function called per row is planned per
  // call). VOLATILE (the default) on purpose: a write that waited for another transaction's lock on the recipient
  // then reads the message as that transaction left it.
  yield* sql`
    CREATE FUNCTION msg_broadcast_recipient_bits() RETURNS trigger LANGUAGE plpgsql AS $$
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
      -- Held for its quiet hours (guardrails): held_until comes with migration 0034, after this one, so it is read
      -- by name from the row as JSON (absent before 0034 ran).
      IF bits & 1 > 0 AND (to_jsonb(NEW) ->> 'held_until') IS NOT NULL THEN bits := bits | 64; END IF;
      IF TG_OP = 'UPDATE' AND NEW.counted = -1 AND bits = OLD.counted THEN RETURN NULL; END IF;
      NEW.counted := bits;
      RETURN NEW;
    END $$`
  yield* sql`
    CREATE TRIGGER msg_broadcast_recipients_bits BEFORE INSERT OR UPDATE ON msg_broadcast_recipients
    FOR EACH ROW EXECUTE FUNCTION msg_broadcast_recipient_bits()`

  // Added recipients and removed ones: one row of differences per broadcast a statement changed (calls of 1,000).
  yield* sql`
    CREATE FUNCTION msg_broadcast_counts_add() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        INSERT INTO msg_broadcast_counts
        SELECT broadcast_id, count(*), count(*) FILTER (WHERE counted & 1 > 0), count(*) FILTER (WHERE counted & 2 > 0),
          count(*) FILTER (WHERE counted & 4 > 0), count(*) FILTER (WHERE counted & 8 > 0),
          count(*) FILTER (WHERE counted & 16 > 0), count(*) FILTER (WHERE counted & 32 > 0),
          count(*) FILTER (WHERE counted & 64 > 0)
        FROM new_rows GROUP BY broadcast_id;
      ELSE
        -- A broadcast deleted with its recipients takes its counts along (the foreign key): nothing to subtract.
        INSERT INTO msg_broadcast_counts
        SELECT o.broadcast_id, -count(*), -count(*) FILTER (WHERE counted & 1 > 0), -count(*) FILTER (WHERE counted & 2 > 0),
          -count(*) FILTER (WHERE counted & 4 > 0), -count(*) FILTER (WHERE counted & 8 > 0),
          -count(*) FILTER (WHERE counted & 16 > 0), -count(*) FILTER (WHERE counted & 32 > 0),
          -count(*) FILTER (WHERE counted & 64 > 0)
        FROM old_rows o WHERE EXISTS (SELECT 1 FROM msg_broadcasts b WHERE b.id = o.broadcast_id)
        GROUP BY o.broadcast_id;
      END IF;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER msg_broadcast_recipients_counts_insert AFTER INSERT ON msg_broadcast_recipients
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION msg_broadcast_counts_add()`
  yield* sql`
    CREATE TRIGGER msg_broadcast_recipients_counts_delete AFTER DELETE ON msg_broadcast_recipients
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION msg_broadcast_counts_add()`
  // A recipient whose bits changed: its difference. A row trigger with a WHEN clause: most writes of recipients (the
  // sender's marks, a settlement that confirms what the network's answer already counted) change no bit and cost
  // nothing here; a statement trigger with transition tables would cost every one of them.
  yield* sql`
    CREATE FUNCTION msg_broadcast_counts_move() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO msg_broadcast_counts VALUES (NEW.broadcast_id, 0,
        (NEW.counted & 1 > 0)::int - (OLD.counted & 1 > 0)::int, (NEW.counted & 2 > 0)::int - (OLD.counted & 2 > 0)::int,
        (NEW.counted & 4 > 0)::int - (OLD.counted & 4 > 0)::int, (NEW.counted & 8 > 0)::int - (OLD.counted & 8 > 0)::int,
        (NEW.counted & 16 > 0)::int - (OLD.counted & 16 > 0)::int, (NEW.counted & 32 > 0)::int - (OLD.counted & 32 > 0)::int,
        (NEW.counted & 64 > 0)::int - (OLD.counted & 64 > 0)::int);
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER msg_broadcast_recipients_counts_update AFTER UPDATE ON msg_broadcast_recipients
    FOR EACH ROW WHEN (OLD.counted IS DISTINCT FROM NEW.counted) EXECUTE FUNCTION msg_broadcast_counts_move()`

  // Messages: a broadcast message's status or network id changed, or a message that may be a response came or went.
  // Row triggers whose WHEN clause passes over every other message at no cost (statement triggers with transition
  // tables cost every statement on msg_messages a fraction of a millisecond). The response window is 24 hours from
  // `sent_at`, which follows the message's creation by at most the sender's doubt grace: a day and an hour back covers
  // it, and the recount decides exactly.
  yield* sql`
    CREATE FUNCTION msg_broadcast_message_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      msg msg_messages;
      touched text[];
    BEGIN
      IF TG_OP = 'DELETE' THEN msg := OLD; ELSE msg := NEW; END IF;
      IF msg.origin = 'broadcast' THEN
        UPDATE msg_broadcast_recipients SET counted = -1 WHERE message_id = msg.id;
      END IF;
      IF msg.direction = 'inbound' AND TG_OP <> 'UPDATE' THEN
        touched := ARRAY(
          SELECT m.id FROM msg_messages m
          WHERE m.conversation_id = msg.conversation_id AND m.origin = 'broadcast' AND m.direction = 'outbound'
            AND m.created_at < msg.created_at AND m.created_at >= msg.created_at - interval '25 hours');
        IF cardinality(touched) > 0 THEN
          UPDATE msg_broadcast_recipients SET counted = -1 WHERE message_id = ANY (touched);
        END IF;
      END IF;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER msg_messages_broadcast_insert AFTER INSERT ON msg_messages
    FOR EACH ROW WHEN (NEW.origin = 'broadcast' OR NEW.direction = 'inbound')
    EXECUTE FUNCTION msg_broadcast_message_changed()`
  yield* sql`
    CREATE TRIGGER msg_messages_broadcast_update AFTER UPDATE ON msg_messages
    FOR EACH ROW WHEN (NEW.origin = 'broadcast' AND (OLD.status IS DISTINCT FROM NEW.status OR OLD.network_id IS DISTINCT FROM NEW.network_id))
    EXECUTE FUNCTION msg_broadcast_message_changed()`
  yield* sql`
    CREATE TRIGGER msg_messages_broadcast_delete AFTER DELETE ON msg_messages
    FOR EACH ROW WHEN (OLD.origin = 'broadcast' OR OLD.direction = 'inbound')
    EXECUTE FUNCTION msg_broadcast_message_changed()`

  // The recipients already stored: each broadcast's total, then their bits (the trigger adds them to the sums).
  yield* sql`
    INSERT INTO msg_broadcast_counts
    SELECT broadcast_id, count(*), 0, 0, 0, 0, 0, 0, 0 FROM msg_broadcast_recipients GROUP BY broadcast_id`
  yield* sql`UPDATE msg_broadcast_recipients SET counted = -1`
})
