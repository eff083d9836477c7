-- The PostgreSQL DDL: the same tables as schema.sql (the SQLite DDL, at the repository root),
-- in PostgreSQL's dialect, as named migrations (`-- migration: NNNN_name`) applied in order by
-- agent.db.postgres.migrate_postgres, each recorded in schema_migrations (which the migrator
-- creates itself). The numbering is this file's own: a table arrives here when its store is
-- ported (issue 18), not at the version it has in schema.sql.
--
-- Timestamps stay TEXT in the ISO form agent.utils.timestamps.to_db_time writes, as on SQLite,
-- so that the stores' SQL and comparisons are the same on both backends; the text columns that
-- are ordered or compared by range are COLLATE "C", SQLite's byte order, whatever the
-- database's locale.

-- migration: 0001_inbound_updates
-- Step 1 of a turn (DESIGN.md section 3): every Telegram update is stored here, durably,
-- before Telegram is told it was received. The key (bot_id, update_id) with
-- INSERT ... ON CONFLICT DO NOTHING makes a redelivered update a no-op (exactly once).
CREATE TABLE inbound_updates (
    bot_id       BIGINT NOT NULL,
    update_id    BIGINT NOT NULL,
    chat_id      BIGINT,
    payload      TEXT NOT NULL,
    status       TEXT NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'done', 'failed')),
    attempts     INTEGER NOT NULL DEFAULT 0,
    error        TEXT,
    received_at  TEXT COLLATE "C" NOT NULL,
    processed_at TEXT,
    PRIMARY KEY (bot_id, update_id)
);
CREATE INDEX inbound_updates_pending
    ON inbound_updates (bot_id, update_id) WHERE status = 'pending';
CREATE INDEX inbound_updates_chat ON inbound_updates (chat_id);

-- migration: 0002_sessions_turns
-- The sessions table and the append-only turn log, as schema.sql has them after its
-- migrations 0001, 0008, 0012, 0014 and 0015 (the full-text search of turns comes with its
-- store).
CREATE TABLE conversation_sessions (
    session_id      TEXT COLLATE "C" PRIMARY KEY,
    chat_id         BIGINT NOT NULL,
    chat_type       TEXT NOT NULL DEFAULT 'private',
    user_id         BIGINT,
    title           TEXT,
    status          TEXT NOT NULL DEFAULT 'active'
                    CHECK (status IN ('active', 'paused', 'resuming',
                                      'awaiting_clarification', 'shutdown_clean')),
    state           TEXT NOT NULL,
    rolling_summary TEXT NOT NULL DEFAULT '',
    turn_count      INTEGER NOT NULL DEFAULT 0,
    last_seq        INTEGER NOT NULL DEFAULT 0,
    created_at      TEXT COLLATE "C" NOT NULL,
    updated_at      TEXT COLLATE "C" NOT NULL,
    closed_at       TEXT,
    -- The turn up to which the session's checkpoint is known to be written (schema.sql 0015):
    -- NULL when not known; it may lag the checkpoint, never lead it.
    checkpoint_seq  INTEGER
);
-- At most one open session per chat; /new closes it and opens the next.
CREATE UNIQUE INDEX conversation_sessions_open_chat
    ON conversation_sessions (chat_id) WHERE closed_at IS NULL;
CREATE INDEX conversation_sessions_updated ON conversation_sessions (updated_at);
CREATE INDEX conversation_sessions_chat ON conversation_sessions (chat_id);
-- A start checks the checkpoints of the rows this index holds, not every checkpoint.
CREATE INDEX conversation_sessions_checkpoint_unknown
    ON conversation_sessions (session_id)
    WHERE closed_at IS NULL AND checkpoint_seq IS DISTINCT FROM last_seq;
-- The open sessions with active jobs (reminders), held at once by a start.
CREATE INDEX conversation_sessions_with_jobs
    ON conversation_sessions (session_id)
    WHERE closed_at IS NULL AND json_array_length(state::json -> 'active_job_refs') > 0;

CREATE TABLE conversation_turns (
    turn_id          TEXT NOT NULL UNIQUE,
    session_id       TEXT COLLATE "C" NOT NULL
                     REFERENCES conversation_sessions (session_id) ON DELETE CASCADE,
    seq              INTEGER NOT NULL CHECK (seq >= 1),
    user_text        TEXT NOT NULL,
    assistant_text   TEXT,
    intent           TEXT,
    action_name      TEXT,
    job_refs         TEXT NOT NULL DEFAULT '[]',
    created_at       TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('answered', 'delivered', 'recorded')),
    bot_id           BIGINT NOT NULL DEFAULT 0,
    update_id        BIGINT,
    user_id          BIGINT,
    speaker          TEXT,
    message_id       BIGINT,
    reply_message_id BIGINT,
    delivered_at     TEXT,
    delivery_error   TEXT,
    control          TEXT,
    PRIMARY KEY (session_id, seq)
);
-- I3: one Telegram update is one turn, however often it is delivered.
CREATE UNIQUE INDEX conversation_turns_update
    ON conversation_turns (bot_id, update_id) WHERE update_id IS NOT NULL;
-- I4: the replies still to send after a restart.
CREATE INDEX conversation_turns_undelivered
    ON conversation_turns (session_id, seq) WHERE status = 'answered' AND delivery_error IS NULL;
CREATE INDEX conversation_turns_message
    ON conversation_turns (session_id, message_id) WHERE message_id IS NOT NULL;

-- Edited messages: the text an edit replaced, one row per edit, oldest first by edit_id (SQLite
-- orders them by rowid).
CREATE TABLE turn_edits (
    edit_id       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id    TEXT COLLATE "C" NOT NULL,
    seq           INTEGER NOT NULL,
    edited_at     TEXT NOT NULL,
    previous_text TEXT NOT NULL,
    bot_id        BIGINT NOT NULL DEFAULT 0,
    update_id     BIGINT,
    FOREIGN KEY (session_id, seq)
        REFERENCES conversation_turns (session_id, seq) ON DELETE CASCADE
);
CREATE INDEX turn_edits_turn ON turn_edits (session_id, seq);
CREATE UNIQUE INDEX turn_edits_update
    ON turn_edits (bot_id, update_id) WHERE update_id IS NOT NULL;

-- migration: 0003_turn_search
-- The turn index (schema.sql 0003, 0006, 0007, 0013 on SQLite): one row per turn with the words
-- FTS5 would index for it (agent.db.search.index_tokens runs FTS5's own tokenizer, so that both
-- backends see the same words), written by the store in the transaction that appends or edits
-- the turn (agent/memory/storage/postgres_turn_search.py says why not a generated column), and
-- deleted with the turn. `words` holds the speaker's words with weight B and those of the text
-- and the reply with weight A; a word's positions number its occurrences (1, 2, ...: BM25 needs
-- how often, never where). A help or error reply, and the whole of an erasure request, are not
-- indexed (0013). `length` is the turn's number of tokens, the session id's included (FTS5's
-- document length). `search_id` grows with every turn indexed: the turn log's high-water mark.
CREATE TABLE conversation_turn_search (
    session_id TEXT COLLATE "C" NOT NULL,
    seq        INTEGER NOT NULL,
    search_id  BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    words      TSVECTOR NOT NULL,
    length     INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq),
    FOREIGN KEY (session_id, seq)
        REFERENCES conversation_turns (session_id, seq) ON DELETE CASCADE
);
-- fastupdate off: a turn is written once and searched on every packet; with a pending list,
-- every search would read the whole list until a vacuum merged it (0.8 ms instead of 0.01 ms
-- for a word's lookup at 100,000 turns).
CREATE INDEX conversation_turn_search_words ON conversation_turn_search USING gin (words)
    WITH (fastupdate = off);
-- BM25's collection statistics (FTS5 keeps them in its index): how many turns are indexed and
-- their tokens, as 16 shards (a turn's shard is its search_id modulo 16) so that workers
-- appending at once seldom wait for one another's row; a read sums them. Kept by a trigger, so
-- that a cascade (a session deleted, a turn erased) keeps them too. (CREATE OR REPLACE TRIGGER:
-- after a plain CREATE TRIGGER the migration splitter, SQLite's complete_statement, waits for
-- the END of a SQLite trigger body.)
CREATE TABLE conversation_turn_search_totals (
    shard  SMALLINT PRIMARY KEY,
    turns  BIGINT NOT NULL,
    tokens BIGINT NOT NULL
);
INSERT INTO conversation_turn_search_totals (shard, turns, tokens)
    SELECT shard, 0, 0 FROM generate_series(0, 15) AS shard;
CREATE FUNCTION conversation_turn_search_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'INSERT' THEN
        UPDATE conversation_turn_search_totals
            SET turns = turns - 1, tokens = tokens - OLD.length
            WHERE shard = OLD.search_id % 16;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        UPDATE conversation_turn_search_totals
            SET turns = turns + 1, tokens = tokens + NEW.length
            WHERE shard = NEW.search_id % 16;
    END IF;
    RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER conversation_turn_search_count
    AFTER INSERT OR DELETE OR UPDATE OF length ON conversation_turn_search
    FOR EACH ROW EXECUTE FUNCTION conversation_turn_search_count();
