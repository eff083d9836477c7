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
-- migrations 0001, 0008, 0012, 0014 and 0015 (the full-text search of turns is migration 0007
-- here).
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

-- migration: 0003_session_checkpoints
-- Each session's checkpoint as a row, so that every worker and the CLI read the same one
-- (agent/memory/storage/checkpoint_rows.py); the file is only a mirror where a checkpoint
-- directory is set. Written after the turn's commit, deleted with its session.
CREATE TABLE session_checkpoints (
    session_id TEXT COLLATE "C" PRIMARY KEY
               REFERENCES conversation_sessions (session_id) ON DELETE CASCADE,
    turn_count INTEGER NOT NULL,
    snapshot   JSONB NOT NULL,
    written_at TEXT NOT NULL
);

-- migration: 0004_summaries
-- The summary version chain, as schema.sql has it after its migration 0005
-- (SqliteSummaryStore; PostgresSummaryStore reads and writes it with the same statements).
-- summary_id is an identity column: like SQLite's AUTOINCREMENT, an id pruned by retention is
-- never given again.
--
-- Full-text search of the deltas (schema.sql 0006 has FTS5 with BM25): `search` holds the
-- tokens FTS5's tokenizer makes of the delta (agent.db.search.index_tokens: Porter stems of
-- folded words, snake_case whole; agent.db.bm25 says how they go in a tsvector), with a GIN
-- index; `search_length` is the row's length in tokens as FTS5 counts it (the session id's
-- and the delta's). The store writes both in the transaction that writes the row (the tokens
-- come from Python: agent/memory/summaries/postgres_summary_store.py). A search fetches the
-- rows of the session that hold a query token (tsquery) and ranks them with FTS5's BM25 in
-- Python (agent.db.bm25), from the statistics of the whole index, as FTS5 does: search_totals
-- holds each index's row count and token count, kept by the statement triggers below (only a
-- change of length writes the row), and a token's document count is read from the GIN index.
CREATE TABLE conversation_summaries (
    summary_id        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id        TEXT COLLATE "C" NOT NULL
                      REFERENCES conversation_sessions (session_id) ON DELETE CASCADE,
    version           INTEGER NOT NULL CHECK (version >= 1),
    from_seq          INTEGER NOT NULL CHECK (from_seq >= 1),
    to_seq            INTEGER NOT NULL,
    parent_summary_id BIGINT,
    summarizer        TEXT NOT NULL CHECK (summarizer IN ('extractive', 'llm')),
    status            TEXT NOT NULL CHECK (status IN ('processing', 'completed', 'failed')),
    text              TEXT NOT NULL DEFAULT '',
    delta             TEXT NOT NULL DEFAULT '',
    error             TEXT,
    generation_ms     INTEGER,
    created_at        TEXT NOT NULL,
    completed_at      TEXT,
    search            tsvector NOT NULL DEFAULT '',
    search_length     INTEGER NOT NULL DEFAULT 0,
    CHECK (to_seq >= from_seq),
    CHECK (summarizer = 'llm' OR status = 'completed')
);
CREATE UNIQUE INDEX conversation_summaries_version
    ON conversation_summaries (session_id, version) WHERE summarizer = 'extractive';
CREATE INDEX conversation_summaries_latest
    ON conversation_summaries (session_id, summarizer, status, version);
CREATE UNIQUE INDEX conversation_summaries_processing
    ON conversation_summaries (session_id) WHERE status = 'processing';
CREATE INDEX conversation_summaries_search ON conversation_summaries USING gin (search);

-- The size of each full-text index, for BM25: its rows and their tokens (search_length).
CREATE TABLE search_totals (
    index_name  TEXT PRIMARY KEY,
    row_count   BIGINT NOT NULL,
    token_count BIGINT NOT NULL
);
INSERT INTO search_totals (index_name, row_count, token_count)
VALUES ('conversation_summaries', 0, 0);

-- The triggers are written CREATE OR REPLACE TRIGGER (PostgreSQL 14+) for the migration parser:
-- it splits statements with sqlite3.complete_statement, which reads CREATE TRIGGER as SQLite's
-- own form and waits for an END; before the semicolon that ends it.
--
-- One function for the three statement triggers of a searched table (the transition tables
-- it reads are those its event has: new_rows, old_rows or both).
CREATE FUNCTION search_totals_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    added_rows   BIGINT := 0;
    added_tokens BIGINT := 0;
    gone_rows    BIGINT := 0;
    gone_tokens  BIGINT := 0;
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        SELECT count(*), coalesce(sum(search_length), 0) INTO added_rows, added_tokens
        FROM new_rows;
    END IF;
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        SELECT count(*), coalesce(sum(search_length), 0) INTO gone_rows, gone_tokens
        FROM old_rows;
    END IF;
    IF added_rows <> gone_rows OR added_tokens <> gone_tokens THEN
        UPDATE search_totals
        SET row_count = row_count + added_rows - gone_rows,
            token_count = token_count + added_tokens - gone_tokens
        WHERE index_name = TG_TABLE_NAME;
    END IF;
    RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER conversation_summaries_totals_insert AFTER INSERT ON conversation_summaries
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION search_totals_change();
CREATE OR REPLACE TRIGGER conversation_summaries_totals_delete AFTER DELETE ON conversation_summaries
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION search_totals_change();
CREATE OR REPLACE TRIGGER conversation_summaries_totals_update AFTER UPDATE ON conversation_summaries
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION search_totals_change();

-- migration: 0005_memories
-- Long-term memories, their sources and relations, as schema.sql has them after its migration
-- 0011 (SqliteMemoryStore; PostgresMemoryStore shares its statements), with the triggers of
-- exact erasure as row triggers. REAL is DOUBLE PRECISION here (SQLite's REAL is 8 bytes).
-- SQLite's chat_key column exists only to scope its FTS5 index: the search here filters on
-- chat_id. `search` holds the tokens of subject, attribute and text (the columns FTS5 ranks),
-- `search_length` counts them with the chat key's one token; the store writes both, as for the
-- summaries (0004; agent/memory/longterm/postgres_memory_store.py).
CREATE TABLE memories (
    memory_id        TEXT COLLATE "C" PRIMARY KEY,
    chat_id          BIGINT NOT NULL,
    kind             TEXT COLLATE "C" NOT NULL
                     CHECK (kind IN ('fact', 'preference', 'decision', 'goal', 'constraint',
                                     'entity', 'procedure')),
    subject          TEXT NOT NULL DEFAULT 'user',
    attribute        TEXT NOT NULL,
    key              TEXT COLLATE "C" NOT NULL,
    text             TEXT NOT NULL,
    origin           TEXT NOT NULL DEFAULT 'said' CHECK (origin IN ('said', 'noted')),
    confidence       DOUBLE PRECISION NOT NULL,
    importance       DOUBLE PRECISION NOT NULL,
    access_count     INTEGER NOT NULL DEFAULT 1,
    status           TEXT NOT NULL DEFAULT 'candidate'
                     CHECK (status IN ('candidate', 'active', 'archived')),
    valid_from       TEXT COLLATE "C" NOT NULL,
    valid_until      TEXT COLLATE "C",
    created_at       TEXT COLLATE "C" NOT NULL,
    updated_at       TEXT COLLATE "C" NOT NULL,
    last_accessed_at TEXT NOT NULL,
    decay            DOUBLE PRECISION NOT NULL DEFAULT 1.0,
    archived_at      TEXT,
    search           tsvector NOT NULL DEFAULT '',
    search_length    INTEGER NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX memories_current ON memories (chat_id, key) WHERE valid_until IS NULL;
CREATE INDEX memories_chat_active ON memories (chat_id, importance DESC)
    WHERE status = 'active' AND valid_until IS NULL;
CREATE INDEX memories_history ON memories (chat_id, key, valid_until);
CREATE INDEX memories_search ON memories USING gin (search);
INSERT INTO search_totals (index_name, row_count, token_count) VALUES ('memories', 0, 0);
CREATE OR REPLACE TRIGGER memories_totals_insert AFTER INSERT ON memories
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION search_totals_change();
CREATE OR REPLACE TRIGGER memories_totals_delete AFTER DELETE ON memories
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION search_totals_change();
CREATE OR REPLACE TRIGGER memories_totals_update AFTER UPDATE ON memories
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION search_totals_change();

CREATE TABLE memory_sources (
    memory_id  TEXT COLLATE "C" NOT NULL REFERENCES memories (memory_id) ON DELETE CASCADE,
    session_id TEXT COLLATE "C" NOT NULL
               REFERENCES conversation_sessions (session_id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    PRIMARY KEY (memory_id, session_id, seq)
);
CREATE INDEX memory_sources_session ON memory_sources (session_id, seq);

CREATE TABLE memory_relations (
    memory_id  TEXT COLLATE "C" NOT NULL REFERENCES memories (memory_id) ON DELETE CASCADE,
    relation   TEXT NOT NULL CHECK (relation IN ('supersedes', 'contradicts', 'related_to')),
    other_id   TEXT COLLATE "C" NOT NULL REFERENCES memories (memory_id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    PRIMARY KEY (memory_id, relation, other_id)
);
CREATE INDEX memory_relations_other ON memory_relations (other_id);

-- A memory whose last source is gone goes too (/forget, prune, an edit that no longer says it).
-- Row triggers run at the end of their statement here (after each row on SQLite): the result
-- is the same, as each one reads the table as the statement left it.
CREATE FUNCTION memory_sources_orphan() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM memory_sources WHERE memory_id = OLD.memory_id) THEN
        DELETE FROM memories WHERE memory_id = OLD.memory_id;
    END IF;
    RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER memory_sources_orphan AFTER DELETE ON memory_sources
    FOR EACH ROW EXECUTE FUNCTION memory_sources_orphan();
-- Exact erasure: when the current value of a slot goes, the value it replaced (the one that
-- ended last, if any is left) is current again. NULLS LAST is SQLite's order of DESC.
CREATE FUNCTION memories_restore_previous() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memories SET valid_until = NULL
    WHERE memory_id = (SELECT memory_id FROM memories
                       WHERE chat_id = OLD.chat_id AND key = OLD.key
                       ORDER BY valid_until DESC NULLS LAST, created_at DESC, memory_id DESC
                       LIMIT 1);
    RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER memories_restore_previous AFTER DELETE ON memories
    FOR EACH ROW WHEN (OLD.valid_until IS NULL) EXECUTE FUNCTION memories_restore_previous();

-- migration: 0006_jobs
-- Due jobs (reminders, maintenance) across the bot's workers, as schema.sql's 0016_jobs: a
-- worker claims the due rows no live claim holds (SELECT ... FOR UPDATE SKIP LOCKED, so that
-- claimers at once take different rows without waiting), with a lease (claimed_until) after
-- which a dead worker's claim is claimable again, and marks them done in the transaction of
-- what firing wrote (agent/chat/job_table.py).
CREATE TABLE jobs (
    job_id        TEXT COLLATE "C" PRIMARY KEY,
    kind          TEXT NOT NULL,
    chat_id       BIGINT,
    due_at        TEXT COLLATE "C" NOT NULL,
    payload       TEXT NOT NULL DEFAULT '{}',
    attempts      INTEGER NOT NULL DEFAULT 0,
    claimed_by    TEXT,
    claimed_until TEXT COLLATE "C",
    done_at       TEXT COLLATE "C",
    created_at    TEXT NOT NULL
);
CREATE INDEX jobs_due ON jobs (due_at) WHERE done_at IS NULL;
CREATE INDEX jobs_chat ON jobs (chat_id);

-- migration: 0007_turn_search
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

-- migration: 0008_bot_settings
-- Settings the bot records for the tools that work on its data, as schema.sql's
-- 0017_bot_settings (the checkpoint directory, where checkpoints are mirrored into files).
CREATE TABLE bot_settings (
    name       TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

-- migration: 0009_turn_vectors
-- Each turn's sentence vector, for the optional semantic search: schema.sql's migration
-- 0018_turn_vectors says why and how (the source of truth of a nearest-neighbour cache; gone
-- with its turn by the cascade, dropped by an edit of its words).
CREATE TABLE conversation_turn_vectors (
    session_id TEXT COLLATE "C" NOT NULL,
    seq        INTEGER NOT NULL,
    model      TEXT NOT NULL,
    vector     BYTEA NOT NULL,
    PRIMARY KEY (session_id, seq),
    FOREIGN KEY (session_id, seq)
        REFERENCES conversation_turns (session_id, seq) ON DELETE CASCADE
);
CREATE FUNCTION conversation_turn_vectors_edited() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM conversation_turn_vectors WHERE session_id = NEW.session_id AND seq = NEW.seq;
    RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER conversation_turn_vectors_edited
    AFTER UPDATE OF user_text ON conversation_turns
    FOR EACH ROW EXECUTE FUNCTION conversation_turn_vectors_edited();

-- migration: 0010_session_state_parts
-- A session's state in two places, as schema.sql's migration 0019_session_state_parts says
-- why: its large fields that most turns leave as they were as rows of their own, each
-- rewritten only when its value changes (none for a field never set), the rest in the
-- row's state; the rolling_summary column, a copy of the state's that nothing read, is
-- dropped.
CREATE TABLE conversation_session_parts (
    session_id TEXT COLLATE "C" NOT NULL
               REFERENCES conversation_sessions (session_id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    value      TEXT NOT NULL,
    PRIMARY KEY (session_id, name)
);
ALTER TABLE conversation_sessions DROP COLUMN rolling_summary;
