/**
 * A broadcast's counters kept as its recipients and their messages change (issue 30 §2), instead of counted over
 * every recipient's message on each read.
 *
 * Each recipient keeps `counted`, the counters it falls in now (bits: 1 pending, 2 sent, 4 failed, 8 delivered,
 * 16 read, 32 responded), recomputed by a row trigger whenever the recipient is written; a change to a broadcast
 * message's status or network id, and an inbound message in the conversation of a broadcast message (a response),
 * rewrite the recipients concerned. Every statement that changes recipients appends the difference per broadcast to
 * `msg_broadcast_counts` (append-only: no row that every writer locks); a read sums them, and folds them into one row
 * when they grow many. All of it runs inside the transaction of the change it counts, so a crash at any instant
 * leaves the sums equal to what the recipients and their messages say.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE msg_broadcast_recipients ADD COLUMN counted smallint NOT NULL DEFAULT 0`
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
      responded integer NOT NULL
    )`
  yield* sql`CREATE INDEX msg_broadcast_counts_broadcast_idx ON msg_broadcast_counts (broadcast_id)`

  // The rules of decisions "Broadcasts" (counters): the recipient's message counts when the sender settled it `sent`,
  // or when it is still `pending` but the network accepted the message (a stop read mid-batch). VOLATILE on purpose:
  // a write that waited for another transaction's lock on the recipient then reads the message as that one left it.
  yield* sql`
    CREATE FUNCTION msg_broadcast_counted(r msg_broadcast_recipients) RETURNS smallint LANGUAGE sql VOLATILE AS $$
      SELECT (
        CASE WHEN r.status = 'pending' AND m.id IS NULL THEN 1 ELSE 0 END
        | CASE WHEN (r.status = 'sent' OR m.id IS NOT NULL) AND m.status IS DISTINCT FROM 'failed' THEN 2 ELSE 0 END
        | CASE WHEN r.status IN ('failed', 'suppressed') OR m.status = 'failed' THEN 4 ELSE 0 END
        | CASE WHEN m.status IN ('delivered', 'read') THEN 8 ELSE 0 END
        | CASE WHEN m.status = 'read' THEN 16 ELSE 0 END
        | CASE WHEN m.id IS NOT NULL AND r.sent_at IS NOT NULL AND EXISTS (
            SELECT 1 FROM msg_messages i
            WHERE i.conversation_id = m.conversation_id AND i.direction = 'inbound'
              AND i.created_at > r.sent_at AND i.created_at <= r.sent_at + interval '24 hours'
          ) THEN 32 ELSE 0 END
      )::smallint
      FROM (SELECT 1) AS one
      LEFT JOIN msg_messages m ON m.id = r.message_id
        AND (r.status = 'sent' OR (r.status = 'pending' AND m.network_id IS NOT NULL AND m.status <> 'failed'))
    $$`

  // A write sets the recipient's bits; a rewrite that only asks for them again (counted = -1) and finds them
  // unchanged writes nothing.
  yield* sql`
    CREATE FUNCTION msg_broadcast_recipient_bits() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE bits smallint := msg_broadcast_counted(NEW);
    BEGIN
      IF TG_OP = 'UPDATE' AND NEW.counted = -1 AND bits = OLD.counted THEN RETURN NULL; END IF;
      NEW.counted := bits;
      RETURN NEW;
    END $$`
  yield* sql`
    CREATE TRIGGER msg_broadcast_recipients_bits BEFORE INSERT OR UPDATE ON msg_broadcast_recipients
    FOR EACH ROW EXECUTE FUNCTION msg_broadcast_recipient_bits()`

  // One row of differences per broadcast a statement changed.
  yield* sql`
    CREATE FUNCTION msg_broadcast_counts_add() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' THEN
        INSERT INTO msg_broadcast_counts
        SELECT broadcast_id, count(*), count(*) FILTER (WHERE counted & 1 > 0), count(*) FILTER (WHERE counted & 2 > 0),
          count(*) FILTER (WHERE counted & 4 > 0), count(*) FILTER (WHERE counted & 8 > 0),
          count(*) FILTER (WHERE counted & 16 > 0), count(*) FILTER (WHERE counted & 32 > 0)
        FROM new_rows GROUP BY broadcast_id;
      ELSIF TG_OP = 'UPDATE' THEN
        INSERT INTO msg_broadcast_counts
        SELECT * FROM (
          SELECT broadcast_id, 0, sum(sign * (counted & 1 > 0)::int) AS pending, sum(sign * (counted & 2 > 0)::int) AS sent,
            sum(sign * (counted & 4 > 0)::int) AS failed, sum(sign * (counted & 8 > 0)::int) AS delivered,
            sum(sign * (counted & 16 > 0)::int) AS read, sum(sign * (counted & 32 > 0)::int) AS responded
          FROM (SELECT broadcast_id, counted, 1 AS sign FROM new_rows UNION ALL SELECT broadcast_id, counted, -1 FROM old_rows) AS d
          GROUP BY broadcast_id
        ) AS s
        WHERE (pending, sent, failed, delivered, read, responded) <> (0, 0, 0, 0, 0, 0);
      ELSE
        -- A broadcast deleted with its recipients takes its counts along (the foreign key): nothing to subtract.
        INSERT INTO msg_broadcast_counts
        SELECT o.broadcast_id, -count(*), -count(*) FILTER (WHERE counted & 1 > 0), -count(*) FILTER (WHERE counted & 2 > 0),
          -count(*) FILTER (WHERE counted & 4 > 0), -count(*) FILTER (WHERE counted & 8 > 0),
          -count(*) FILTER (WHERE counted & 16 > 0), -count(*) FILTER (WHERE counted & 32 > 0)
        FROM old_rows o WHERE EXISTS (SELECT 1 FROM msg_broadcasts b WHERE b.id = o.broadcast_id)
        GROUP BY o.broadcast_id;
      END IF;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER msg_broadcast_recipients_counts_insert AFTER INSERT ON msg_broadcast_recipients
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION msg_broadcast_counts_add()`
  yield* sql`
    CREATE TRIGGER msg_broadcast_recipients_counts_update AFTER UPDATE ON msg_broadcast_recipients
    REFERENCING NEW TABLE AS new_rows OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION msg_broadcast_counts_add()`
  yield* sql`
    CREATE TRIGGER msg_broadcast_recipients_counts_delete AFTER DELETE ON msg_broadcast_recipients
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION msg_broadcast_counts_add()`

  // Messages: a broadcast message's status or network id changed, or a message that may be a response came or went.
  // The response window is 24 hours from `sent_at`, which follows the message's creation by at most the sender's
  // doubt grace: a day and an hour back covers it, and the recount decides exactly.
  yield* sql`
    CREATE FUNCTION msg_broadcast_messages_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'UPDATE' THEN
        UPDATE msg_broadcast_recipients SET counted = -1 WHERE message_id IN (
          SELECT n.id FROM new_rows n JOIN old_rows o ON o.id = n.id
          WHERE n.origin = 'broadcast' AND (n.status IS DISTINCT FROM o.status OR n.network_id IS DISTINCT FROM o.network_id));
      ELSIF TG_OP = 'INSERT' THEN
        UPDATE msg_broadcast_recipients SET counted = -1 WHERE message_id IN (
          SELECT n.id FROM new_rows n WHERE n.origin = 'broadcast'
          UNION
          SELECT m.id FROM new_rows i JOIN msg_messages m ON m.conversation_id = i.conversation_id
            AND m.created_at < i.created_at AND m.created_at >= i.created_at - interval '25 hours'
          WHERE i.direction = 'inbound' AND m.origin = 'broadcast' AND m.direction = 'outbound');
      ELSE
        UPDATE msg_broadcast_recipients SET counted = -1 WHERE message_id IN (
          SELECT o.id FROM old_rows o WHERE o.origin = 'broadcast'
          UNION
          SELECT m.id FROM old_rows i JOIN msg_messages m ON m.conversation_id = i.conversation_id
            AND m.created_at < i.created_at AND m.created_at >= i.created_at - interval '25 hours'
          WHERE i.direction = 'inbound' AND m.origin = 'broadcast' AND m.direction = 'outbound');
      END IF;
      RETURN NULL;
    END $$`
  yield* sql`
    CREATE TRIGGER msg_messages_broadcast_insert AFTER INSERT ON msg_messages
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION msg_broadcast_messages_changed()`
  yield* sql`
    CREATE TRIGGER msg_messages_broadcast_update AFTER UPDATE ON msg_messages
    REFERENCING NEW TABLE AS new_rows OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION msg_broadcast_messages_changed()`
  yield* sql`
    CREATE TRIGGER msg_messages_broadcast_delete AFTER DELETE ON msg_messages
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION msg_broadcast_messages_changed()`

  // The recipients already stored: each broadcast's total, then their bits (the trigger adds them to the sums).
  yield* sql`
    INSERT INTO msg_broadcast_counts
    SELECT broadcast_id, count(*), 0, 0, 0, 0, 0, 0 FROM msg_broadcast_recipients GROUP BY broadcast_id`
  yield* sql`UPDATE msg_broadcast_recipients SET counted = -1`
})
