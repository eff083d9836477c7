-- The one DDL source of this project (DESIGN.md section 2).
--
-- Each "-- migration: NNNN_name" line starts a named migration. The runner
-- (agent/db/migrations.py) applies the migrations above the database's PRAGMA user_version in
-- order, each in one transaction together with its row in schema_migrations. Never edit a
-- migration that has shipped: add a new one below.

-- migration: 0001_initial
CREATE TABLE schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at TEXT NOT NULL
);

-- One row per session. state is the SessionState JSON, committed in the same transaction as
-- the turn it reflects; status and rolling_summary mirror it for SQL and the CLI.
CREATE TABLE conversation_sessions (
    session_id      TEXT PRIMARY KEY,
    chat_id         INTEGER NOT NULL,
    chat_type       TEXT NOT NULL DEFAULT 'private',
    user_id         INTEGER,
    title           TEXT,
    status          TEXT NOT NULL DEFAULT 'active'
                    CHECK (status IN ('active', 'paused', 'resuming',
                                      'awaiting_clarification', 'shutdown_clean')),
    state           TEXT NOT NULL,
    rolling_summary TEXT NOT NULL DEFAULT '',
    turn_count      INTEGER NOT NULL DEFAULT 0,
    last_seq        INTEGER NOT NULL DEFAULT 0,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    closed_at       TEXT
);

-- At most one open session per chat; /new closes it and opens the next.
CREATE UNIQUE INDEX conversation_sessions_open_chat
    ON conversation_sessions (chat_id) WHERE closed_at IS NULL;
CREATE INDEX conversation_sessions_updated ON conversation_sessions (updated_at);

-- The append-only turn log: one row per user message and the bot's answer. Rows are inserted
-- once; only the delivery columns (status, reply_message_id, delivered_at) change afterwards.
CREATE TABLE conversation_turns (
    turn_id          TEXT NOT NULL UNIQUE,
    session_id       TEXT NOT NULL
                     REFERENCES conversation_sessions (session_id) ON DELETE CASCADE,
    seq              INTEGER NOT NULL CHECK (seq >= 1),
    user_text        TEXT NOT NULL,
    assistant_text   TEXT,
    intent           TEXT,
    action_name      TEXT,
    job_refs         TEXT NOT NULL DEFAULT '[]',
    created_at       TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('answered', 'delivered', 'recorded')),
    bot_id           INTEGER NOT NULL DEFAULT 0,
    update_id        INTEGER,
    user_id          INTEGER,
    speaker          TEXT,
    message_id       INTEGER,
    reply_message_id INTEGER,
    delivered_at     TEXT,
    PRIMARY KEY (session_id, seq)
);

-- I3: one Telegram update is one turn, however often it is delivered.
CREATE UNIQUE INDEX conversation_turns_update
    ON conversation_turns (bot_id, update_id) WHERE update_id IS NOT NULL;
-- I4: the replies still to send after a restart.
CREATE INDEX conversation_turns_undelivered
    ON conversation_turns (session_id, seq) WHERE status = 'answered';

-- migration: 0002_inbound_journal
-- Step 1 of a turn (DESIGN.md section 3): every Telegram update is stored here, durably,
-- before Telegram is told it was received (the next getUpdates offset, or the webhook's 200).
-- Updates are processed from here; those still pending at start-up are processed first (I1).
CREATE TABLE inbound_updates (
    bot_id       INTEGER NOT NULL,
    update_id    INTEGER NOT NULL,
    chat_id      INTEGER,
    payload      TEXT NOT NULL,
    status       TEXT NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'done', 'failed')),
    attempts     INTEGER NOT NULL DEFAULT 0,
    error        TEXT,
    received_at  TEXT NOT NULL,
    processed_at TEXT,
    PRIMARY KEY (bot_id, update_id)
);
CREATE INDEX inbound_updates_pending
    ON inbound_updates (bot_id, update_id) WHERE status = 'pending';

-- migration: 0003_turns_fts
-- Full-text index of the turn log (BM25 ranking for /recall and retrieval). External content:
-- the text lives once, in conversation_turns; triggers keep the index in step, including the
-- cascade deletes of /forget and prune.
CREATE VIRTUAL TABLE conversation_turns_fts USING fts5 (
    user_text,
    assistant_text,
    content = 'conversation_turns',
    content_rowid = 'rowid',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER conversation_turns_fts_insert AFTER INSERT ON conversation_turns BEGIN
    INSERT INTO conversation_turns_fts (rowid, user_text, assistant_text)
    VALUES (new.rowid, new.user_text, new.assistant_text);
END;
CREATE TRIGGER conversation_turns_fts_delete AFTER DELETE ON conversation_turns BEGIN
    INSERT INTO conversation_turns_fts (conversation_turns_fts, rowid, user_text, assistant_text)
    VALUES ('delete', old.rowid, old.user_text, old.assistant_text);
END;
CREATE TRIGGER conversation_turns_fts_update AFTER UPDATE OF user_text, assistant_text
    ON conversation_turns BEGIN
    INSERT INTO conversation_turns_fts (conversation_turns_fts, rowid, user_text, assistant_text)
    VALUES ('delete', old.rowid, old.user_text, old.assistant_text);
    INSERT INTO conversation_turns_fts (rowid, user_text, assistant_text)
    VALUES (new.rowid, new.user_text, new.assistant_text);
END;
INSERT INTO conversation_turns_fts (conversation_turns_fts) VALUES ('rebuild');

-- migration: 0004_long_term_memory
-- Long-term memory: what a chat's user told about themselves, kept across sessions (/new) and
-- separate from the session lane. A candidate becomes 'active' once its confidence passes the
-- promotion gate (writer.write_if_worthy); saying the same thing again raises its confidence and
-- access count instead of adding a row (one memory per chat and key).
CREATE TABLE memories (
    memory_id        TEXT PRIMARY KEY,
    chat_id          INTEGER NOT NULL,
    kind             TEXT NOT NULL,
    key              TEXT NOT NULL,
    text             TEXT NOT NULL,
    confidence       REAL NOT NULL,
    importance       REAL NOT NULL,
    access_count     INTEGER NOT NULL DEFAULT 1,
    status           TEXT NOT NULL DEFAULT 'candidate'
                     CHECK (status IN ('candidate', 'active', 'archived')),
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    last_accessed_at TEXT NOT NULL,
    UNIQUE (chat_id, key)
);
CREATE INDEX memories_chat_active ON memories (chat_id, importance DESC) WHERE status = 'active';

-- Which sessions (and turns) stated a memory: /forget of a session removes the memories that
-- came only from it.
CREATE TABLE memory_sources (
    memory_id  TEXT NOT NULL REFERENCES memories (memory_id) ON DELETE CASCADE,
    session_id TEXT NOT NULL REFERENCES conversation_sessions (session_id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    PRIMARY KEY (memory_id, session_id, seq)
);
CREATE INDEX memory_sources_session ON memory_sources (session_id);

-- A memory whose last source is gone goes too (e.g. /forget, prune).
CREATE TRIGGER memory_sources_orphan AFTER DELETE ON memory_sources
    WHEN NOT EXISTS (SELECT 1 FROM memory_sources WHERE memory_id = old.memory_id) BEGIN
    DELETE FROM memories WHERE memory_id = old.memory_id;
END;

-- migration: 0005_summary_chain
-- The summary version chain (DESIGN.md section 4, seed 004): one row per version of a session's
-- rolling summary. An 'extractive' row is written in the transaction of the turn whose fold made
-- it, so the chain is never ahead of or behind the turn log; its text is the SessionState's
-- rolling_summary after that turn (I6), delta what the fold added, from_seq..to_seq the turns
-- the delta covers, parent_summary_id the version it was built on. An 'llm' row is the optional
-- model summary of an extractive version (same version and range, parent = that row), written in
-- the background: 'processing' while the model runs, then 'completed' or 'failed'. It never
-- changes the session state. parent_summary_id is no foreign key on purpose: retention prunes old
-- versions (SqliteSummaryStore), and a row keeps naming the version it was built on. Ids are
-- AUTOINCREMENT so that a pruned id is never reused. Rows go with their session (/forget, prune).
CREATE TABLE conversation_summaries (
    summary_id        INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id        TEXT NOT NULL
                      REFERENCES conversation_sessions (session_id) ON DELETE CASCADE,
    version           INTEGER NOT NULL CHECK (version >= 1),
    from_seq          INTEGER NOT NULL CHECK (from_seq >= 1),
    to_seq            INTEGER NOT NULL,
    parent_summary_id INTEGER,
    summarizer        TEXT NOT NULL CHECK (summarizer IN ('extractive', 'llm')),
    status            TEXT NOT NULL CHECK (status IN ('processing', 'completed', 'failed')),
    text              TEXT NOT NULL DEFAULT '',
    delta             TEXT NOT NULL DEFAULT '',
    error             TEXT,
    generation_ms     INTEGER,
    created_at        TEXT NOT NULL,
    completed_at      TEXT,
    CHECK (to_seq >= from_seq),
    -- The extractive summary is written whole, in the turn's transaction: never in progress.
    CHECK (summarizer = 'llm' OR status = 'completed')
);

-- One extractive version per number and session; also the index of "the latest version".
CREATE UNIQUE INDEX conversation_summaries_version
    ON conversation_summaries (session_id, version) WHERE summarizer = 'extractive';
-- The latest completed (or any) row of each summarizer, and retention's range deletes.
CREATE INDEX conversation_summaries_latest
    ON conversation_summaries (session_id, summarizer, status, version);
-- Never two model summaries in progress for one session, whatever the number of processes.
CREATE UNIQUE INDEX conversation_summaries_processing
    ON conversation_summaries (session_id) WHERE status = 'processing';

-- migration: 0006_retrieval
-- Retrieval (DESIGN.md section 4): BM25 over a session's older turns, its summary deltas and
-- its chat's long-term memories, with a cost that does not grow with other chats' history.
-- Each index carries its scope (the session id, or a chat key) as an indexed column, so the
-- MATCH expression itself restricts to the scope ('session_id : "ses_..." AND (...)'): FTS5
-- intersects posting lists instead of ranking every chat's matches and filtering afterwards.
-- tokenchars '_' keeps an id like ses_0123... one token; porter lets "painting" find "painted".
-- All three are external-content indexes (the text lives once, in its table); triggers keep
-- them in step, including the cascade deletes of /forget and prune.
--
-- The turn index of 0003 is replaced: it had no session column and a plain tokenizer.
DROP TRIGGER conversation_turns_fts_insert;
DROP TRIGGER conversation_turns_fts_delete;
DROP TRIGGER conversation_turns_fts_update;
DROP TABLE conversation_turns_fts;
CREATE VIRTUAL TABLE conversation_turns_fts USING fts5 (
    session_id,
    speaker,
    user_text,
    assistant_text,
    content = 'conversation_turns',
    content_rowid = 'rowid',
    tokenize = "porter unicode61 remove_diacritics 2 tokenchars '_'"
);
CREATE TRIGGER conversation_turns_fts_insert AFTER INSERT ON conversation_turns BEGIN
    INSERT INTO conversation_turns_fts (rowid, session_id, speaker, user_text, assistant_text)
    VALUES (new.rowid, new.session_id, new.speaker, new.user_text, new.assistant_text);
END;
CREATE TRIGGER conversation_turns_fts_delete AFTER DELETE ON conversation_turns BEGIN
    INSERT INTO conversation_turns_fts
        (conversation_turns_fts, rowid, session_id, speaker, user_text, assistant_text)
    VALUES ('delete', old.rowid, old.session_id, old.speaker, old.user_text, old.assistant_text);
END;
CREATE TRIGGER conversation_turns_fts_update
    AFTER UPDATE OF session_id, speaker, user_text, assistant_text ON conversation_turns BEGIN
    INSERT INTO conversation_turns_fts
        (conversation_turns_fts, rowid, session_id, speaker, user_text, assistant_text)
    VALUES ('delete', old.rowid, old.session_id, old.speaker, old.user_text, old.assistant_text);
    INSERT INTO conversation_turns_fts (rowid, session_id, speaker, user_text, assistant_text)
    VALUES (new.rowid, new.session_id, new.speaker, new.user_text, new.assistant_text);
END;
INSERT INTO conversation_turns_fts (conversation_turns_fts) VALUES ('rebuild');

-- The summary chain's deltas (each covers turns from_seq..to_seq); model rows have none.
CREATE VIRTUAL TABLE conversation_summaries_fts USING fts5 (
    session_id,
    delta,
    content = 'conversation_summaries',
    content_rowid = 'summary_id',
    tokenize = "porter unicode61 remove_diacritics 2 tokenchars '_'"
);
CREATE TRIGGER conversation_summaries_fts_insert AFTER INSERT ON conversation_summaries BEGIN
    INSERT INTO conversation_summaries_fts (rowid, session_id, delta)
    VALUES (new.summary_id, new.session_id, new.delta);
END;
CREATE TRIGGER conversation_summaries_fts_delete AFTER DELETE ON conversation_summaries BEGIN
    INSERT INTO conversation_summaries_fts (conversation_summaries_fts, rowid, session_id, delta)
    VALUES ('delete', old.summary_id, old.session_id, old.delta);
END;
CREATE TRIGGER conversation_summaries_fts_update
    AFTER UPDATE OF session_id, delta ON conversation_summaries BEGIN
    INSERT INTO conversation_summaries_fts (conversation_summaries_fts, rowid, session_id, delta)
    VALUES ('delete', old.summary_id, old.session_id, old.delta);
    INSERT INTO conversation_summaries_fts (rowid, session_id, delta)
    VALUES (new.summary_id, new.session_id, new.delta);
END;
INSERT INTO conversation_summaries_fts (conversation_summaries_fts) VALUES ('rebuild');

-- Long-term memory decay (seed 003): decay is the factor of the last consolidation (1.0: fresh),
-- effective score = importance * decay; archived_at is when consolidation archived the memory.
-- chat_key is the chat's one-token scope for the index (chat ids may be negative).
ALTER TABLE memories ADD COLUMN decay REAL NOT NULL DEFAULT 1.0;
ALTER TABLE memories ADD COLUMN archived_at TEXT;
ALTER TABLE memories ADD COLUMN chat_key TEXT
    GENERATED ALWAYS AS ('chat_' || replace(CAST(chat_id AS TEXT), '-', 'm')) VIRTUAL;
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    chat_key,
    key,
    text,
    content = 'memories',
    content_rowid = 'rowid',
    tokenize = "porter unicode61 remove_diacritics 2 tokenchars '_'"
);
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, chat_key, key, text)
    VALUES (new.rowid, new.chat_key, new.key, new.text);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, chat_key, key, text)
    VALUES ('delete', old.rowid, old.chat_key, old.key, old.text);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF chat_id, key, text ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, chat_key, key, text)
    VALUES ('delete', old.rowid, old.chat_key, old.key, old.text);
    INSERT INTO memories_fts (rowid, chat_key, key, text)
    VALUES (new.rowid, new.chat_key, new.key, new.text);
END;
INSERT INTO memories_fts (memories_fts) VALUES ('rebuild');

-- migration: 0007_turn_search_ranges
-- Retrieval cost flat in the history's length (issue 4, bench/retrieval_cost.py). FTS5's bm25()
-- counts the documents of every phrase of its query by reading the phrase's whole posting list,
-- so the session-id term of 0006 cost a read of every turn of the session per search. Here the
-- turn index numbers its rows so that each session's turns are one rowid range:
--     fts rowid = (conversation_sessions.rowid << 32) + seq
-- and a search restricts to the session (or to its last turns) with "rowid BETWEEN", which
-- FTS5 applies while reading the posting lists, instead of with a MATCH term. The session id
-- stays indexed as a column (other searches may still scope by it).
-- The content is a view exposing that rowid; a session's turns are deleted by a BEFORE DELETE
-- trigger on the session (not by the cascade, which runs after the session row is gone), so the
-- index's delete trigger can still compute the rowid from the session row.
DROP TRIGGER conversation_turns_fts_insert;
DROP TRIGGER conversation_turns_fts_delete;
DROP TRIGGER conversation_turns_fts_update;
DROP TABLE conversation_turns_fts;
CREATE VIEW conversation_turns_search AS
    SELECT (s.rowid << 32) + t.seq AS search_rowid, t.session_id AS session_id,
           t.speaker AS speaker, t.user_text AS user_text, t.assistant_text AS assistant_text
    FROM conversation_turns AS t JOIN conversation_sessions AS s USING (session_id);
CREATE VIRTUAL TABLE conversation_turns_fts USING fts5 (
    session_id,
    speaker,
    user_text,
    assistant_text,
    content = 'conversation_turns_search',
    content_rowid = 'search_rowid',
    tokenize = "porter unicode61 remove_diacritics 2 tokenchars '_'"
);
CREATE TRIGGER conversation_turns_fts_insert AFTER INSERT ON conversation_turns BEGIN
    INSERT INTO conversation_turns_fts (rowid, session_id, speaker, user_text, assistant_text)
    VALUES (
        ((SELECT rowid FROM conversation_sessions WHERE session_id = new.session_id) << 32)
            + new.seq,
        new.session_id, new.speaker, new.user_text, new.assistant_text);
END;
CREATE TRIGGER conversation_turns_fts_delete AFTER DELETE ON conversation_turns BEGIN
    INSERT INTO conversation_turns_fts
        (conversation_turns_fts, rowid, session_id, speaker, user_text, assistant_text)
    VALUES (
        'delete',
        ((SELECT rowid FROM conversation_sessions WHERE session_id = old.session_id) << 32)
            + old.seq,
        old.session_id, old.speaker, old.user_text, old.assistant_text);
END;
CREATE TRIGGER conversation_turns_fts_update
    AFTER UPDATE OF session_id, seq, speaker, user_text, assistant_text ON conversation_turns BEGIN
    INSERT INTO conversation_turns_fts
        (conversation_turns_fts, rowid, session_id, speaker, user_text, assistant_text)
    VALUES (
        'delete',
        ((SELECT rowid FROM conversation_sessions WHERE session_id = old.session_id) << 32)
            + old.seq,
        old.session_id, old.speaker, old.user_text, old.assistant_text);
    INSERT INTO conversation_turns_fts (rowid, session_id, speaker, user_text, assistant_text)
    VALUES (
        ((SELECT rowid FROM conversation_sessions WHERE session_id = new.session_id) << 32)
            + new.seq,
        new.session_id, new.speaker, new.user_text, new.assistant_text);
END;
CREATE TRIGGER conversation_sessions_delete_turns BEFORE DELETE ON conversation_sessions BEGIN
    DELETE FROM conversation_turns WHERE session_id = old.session_id;
END;
INSERT INTO conversation_turns_fts (conversation_turns_fts) VALUES ('rebuild');

-- migration: 0008_delivery_error
-- A reply Telegram refused for good (403: the user blocked the bot or left the group; 400: the
-- chat is gone) is never sent again. Its turn stays 'answered' (committed, never delivered) and
-- keeps Telegram's reason here; the replies still to send (I4) are those without one.
ALTER TABLE conversation_turns ADD COLUMN delivery_error TEXT;
DROP INDEX conversation_turns_undelivered;
CREATE INDEX conversation_turns_undelivered
    ON conversation_turns (session_id, seq) WHERE status = 'answered' AND delivery_error IS NULL;

-- migration: 0009_search_index_merge
-- FTS5 keeps each index as b-tree segments (every write transaction adds one); a lookup reads
-- every segment. With usermerge 2, a 'merge' step leaves about one segment per level. A
-- maintenance job ran such steps (until migration 0010 made every write merge). Measured on
-- 100,000 turns: the turn search 1.9 -> 1.3 ms, the word counts 0.7 -> 0.4 ms, for 0.7 s of
-- merging spread over steps of 200 pages.
INSERT INTO conversation_turns_fts (conversation_turns_fts, rank) VALUES ('usermerge', 2);
INSERT INTO conversation_summaries_fts (conversation_summaries_fts, rank) VALUES ('usermerge', 2);
INSERT INTO memories_fts (memories_fts, rank) VALUES ('usermerge', 2);

-- migration: 0010_merge_on_write
-- The triggers that keep the indexes in step write to them inside a statement savepoint, and
-- FTS5 writes its pending rows out as a new segment at each savepoint: every statement that
-- writes an indexed row adds a segment (3,000 single-row inserts in one transaction left 14, one
-- 3,000-row insert 1). FTS5 merges segments once a work unit of 64 pages has been written since
-- it last did, and a turn writes less than one page: an index kept up to 16 one-page segments
-- (crisismerge), and a search looked up each of its words in each (at 100 turns: 17 segments,
-- the turn search 1.5 ms; merged into one, 0.4 ms). Every write of an indexed row now also
-- merges at most 16 pages of a level that holds 2 or more segments (usermerge, migration 0009),
-- in its transaction: an index keeps one segment per level, each level about twice the size of
-- the one below (at 100,000 turns, 9 segments after 600 more turns where FTS5 alone left 22),
-- and the merge job of migration 0009 had nothing left to do. A delete writes only a tombstone
-- and is merged with the next write (an erase rewrites each index whole, 'optimize', in its
-- transaction).
CREATE TRIGGER conversation_turns_fts_merge_insert AFTER INSERT ON conversation_turns BEGIN
    INSERT INTO conversation_turns_fts (conversation_turns_fts, rank) VALUES ('merge', 16);
END;
CREATE TRIGGER conversation_turns_fts_merge_update
    AFTER UPDATE OF session_id, speaker, user_text, assistant_text ON conversation_turns BEGIN
    INSERT INTO conversation_turns_fts (conversation_turns_fts, rank) VALUES ('merge', 16);
END;
CREATE TRIGGER conversation_summaries_fts_merge_insert AFTER INSERT ON conversation_summaries
BEGIN
    INSERT INTO conversation_summaries_fts (conversation_summaries_fts, rank) VALUES ('merge', 16);
END;
CREATE TRIGGER conversation_summaries_fts_merge_update
    AFTER UPDATE OF session_id, delta ON conversation_summaries BEGIN
    INSERT INTO conversation_summaries_fts (conversation_summaries_fts, rank) VALUES ('merge', 16);
END;
CREATE TRIGGER memories_fts_merge_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rank) VALUES ('merge', 16);
END;
CREATE TRIGGER memories_fts_merge_update AFTER UPDATE OF chat_id, key, text ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rank) VALUES ('merge', 16);
END;

-- migration: 0011_memory_model_v2
-- Long-term memory, version 2 (seed 003, Layer 3): a memory is a typed statement (kind) about a
-- subject ('user', or someone or something in their life: 'sister Mia', 'cat Miso'), an
-- attribute and a value (text), valid from valid_from until valid_until (NULL: still true).
-- key names the memory's slot: the attribute for a one-value attribute of the user ('location':
-- a new value supersedes the old one, which keeps its row as history with valid_until set), the
-- attribute and the value for a many-value one ('plan:a trip to lisbon', 'likes:jazz': a new
-- value is added beside the others), prefixed by the subject for others ('sister Mia/location').
-- At most one row of a slot is current. origin 'noted' is a note the user asked for verbatim
-- (/remember). The table is rebuilt (SQLite cannot drop the old UNIQUE (chat_id, key)); every
-- row of version 1 is kept, current, with the slot keys of version 2 (a plan's value joins its
-- key: version 1 kept one plan per chat).
DROP TRIGGER memories_fts_insert;
DROP TRIGGER memories_fts_delete;
DROP TRIGGER memories_fts_update;
DROP TRIGGER memories_fts_merge_insert;
DROP TRIGGER memories_fts_merge_update;
DROP TRIGGER memory_sources_orphan;
DROP TABLE memories_fts;
CREATE TABLE memories_v2 (
    memory_id        TEXT PRIMARY KEY,
    chat_id          INTEGER NOT NULL,
    kind             TEXT NOT NULL CHECK (kind IN ('fact', 'preference', 'decision', 'goal',
                                                   'constraint', 'entity', 'procedure')),
    subject          TEXT NOT NULL DEFAULT 'user',
    attribute        TEXT NOT NULL,
    key              TEXT NOT NULL,
    text             TEXT NOT NULL,
    origin           TEXT NOT NULL DEFAULT 'said' CHECK (origin IN ('said', 'noted')),
    confidence       REAL NOT NULL,
    importance       REAL NOT NULL,
    access_count     INTEGER NOT NULL DEFAULT 1,
    status           TEXT NOT NULL DEFAULT 'candidate'
                     CHECK (status IN ('candidate', 'active', 'archived')),
    valid_from       TEXT NOT NULL,
    valid_until      TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    last_accessed_at TEXT NOT NULL,
    decay            REAL NOT NULL DEFAULT 1.0,
    archived_at      TEXT,
    chat_key         TEXT GENERATED ALWAYS AS
                     ('chat_' || replace(CAST(chat_id AS TEXT), '-', 'm')) VIRTUAL
);
INSERT INTO memories_v2 (memory_id, chat_id, kind, subject, attribute, key, text, confidence,
                         importance, access_count, status, valid_from, created_at, updated_at,
                         last_accessed_at, decay, archived_at)
SELECT memory_id, chat_id, kind, 'user',
       CASE WHEN key LIKE 'likes:%' OR key LIKE 'dislikes:%' THEN substr(key, 1, instr(key, ':') - 1)
            ELSE key END,
       CASE WHEN key = 'plan' THEN 'plan:' || lower(text) ELSE key END,
       text, confidence, importance, access_count, status, created_at, created_at, updated_at,
       last_accessed_at, decay, archived_at
FROM memories;
CREATE TABLE memory_sources_v2 (
    memory_id  TEXT NOT NULL REFERENCES memories_v2 (memory_id) ON DELETE CASCADE,
    session_id TEXT NOT NULL REFERENCES conversation_sessions (session_id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    PRIMARY KEY (memory_id, session_id, seq)
);
INSERT INTO memory_sources_v2 (memory_id, session_id, seq)
SELECT memory_id, session_id, seq FROM memory_sources;
DROP TABLE memory_sources;
DROP TABLE memories;
ALTER TABLE memories_v2 RENAME TO memories;
ALTER TABLE memory_sources_v2 RENAME TO memory_sources;
CREATE UNIQUE INDEX memories_current ON memories (chat_id, key) WHERE valid_until IS NULL;
CREATE INDEX memories_chat_active ON memories (chat_id, importance DESC)
    WHERE status = 'active' AND valid_until IS NULL;
CREATE INDEX memories_history ON memories (chat_id, key, valid_until);
CREATE INDEX memory_sources_session ON memory_sources (session_id, seq);

-- Relations between memories (seed 003): memory_id supersedes (replaced), contradicts (said the
-- opposite of) or is related_to (is about the same someone) other_id. They go with either end.
CREATE TABLE memory_relations (
    memory_id  TEXT NOT NULL REFERENCES memories (memory_id) ON DELETE CASCADE,
    relation   TEXT NOT NULL CHECK (relation IN ('supersedes', 'contradicts', 'related_to')),
    other_id   TEXT NOT NULL REFERENCES memories (memory_id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    PRIMARY KEY (memory_id, relation, other_id)
);
CREATE INDEX memory_relations_other ON memory_relations (other_id);

-- A memory whose last source is gone goes too (/forget, prune, an edit that no longer says it).
CREATE TRIGGER memory_sources_orphan AFTER DELETE ON memory_sources
    WHEN NOT EXISTS (SELECT 1 FROM memory_sources WHERE memory_id = old.memory_id) BEGIN
    DELETE FROM memories WHERE memory_id = old.memory_id;
END;
-- Exact erasure: when the current value of a slot goes, the value it replaced (the one that
-- ended last, if any is left) is current again: what the user said before still stands.
CREATE TRIGGER memories_restore_previous AFTER DELETE ON memories
    WHEN old.valid_until IS NULL BEGIN
    UPDATE memories SET valid_until = NULL
    WHERE memory_id = (SELECT memory_id FROM memories
                       WHERE chat_id = old.chat_id AND key = old.key
                       ORDER BY valid_until DESC, created_at DESC, memory_id DESC LIMIT 1);
END;

CREATE VIRTUAL TABLE memories_fts USING fts5 (
    chat_key,
    subject,
    attribute,
    text,
    content = 'memories',
    content_rowid = 'rowid',
    tokenize = "porter unicode61 remove_diacritics 2 tokenchars '_'"
);
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, chat_key, subject, attribute, text)
    VALUES (new.rowid, new.chat_key, new.subject, new.attribute, new.text);
    INSERT INTO memories_fts (memories_fts, rank) VALUES ('merge', 16);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, chat_key, subject, attribute, text)
    VALUES ('delete', old.rowid, old.chat_key, old.subject, old.attribute, old.text);
END;
CREATE TRIGGER memories_fts_update AFTER UPDATE OF chat_id, subject, attribute, text ON memories
BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, chat_key, subject, attribute, text)
    VALUES ('delete', old.rowid, old.chat_key, old.subject, old.attribute, old.text);
    INSERT INTO memories_fts (rowid, chat_key, subject, attribute, text)
    VALUES (new.rowid, new.chat_key, new.subject, new.attribute, new.text);
    INSERT INTO memories_fts (memories_fts, rank) VALUES ('merge', 16);
END;
INSERT INTO memories_fts (memories_fts) VALUES ('rebuild');
INSERT INTO memories_fts (memories_fts, rank) VALUES ('usermerge', 2);

-- migration: 0012_turn_control
-- A session command (/new, /resume, /clear) is recorded as a bot-side turn whose control record
-- (SessionControl JSON: the to-dos and commitments it carried, or that it cleared) the state
-- fold reads like the rest of the turn (I6). NULL on every other turn.
ALTER TABLE conversation_turns ADD COLUMN control TEXT;

-- migration: 0013_help_replies_unindexed
-- A reply that is help or an error text (the turn's intent is one of HELP_OR_ERROR_INTENTS in
-- agent/memory/dialogue_acts.py: 'unknown', 'reminder_unreadable', 'help') is not conversation:
-- it is never retrieved. The turn index reads such a turn's assistant_text as NULL, so a search
-- for a word of the help text ("hotel") finds only what people said; the user's own words of
-- that turn stay searchable. A request to forget a long-term memory ('forget_memory',
-- MEMORY_ERASURE_INTENTS) names what it erases: neither its words nor its reply are indexed. The view and the triggers of 0007 are replaced (the update trigger
-- also follows a change of intent), and the index is rebuilt so that the replies indexed
-- before are gone from it.
DROP TRIGGER conversation_turns_fts_insert;
DROP TRIGGER conversation_turns_fts_delete;
DROP TRIGGER conversation_turns_fts_update;
DROP TRIGGER conversation_turns_fts_merge_update;
DROP VIEW conversation_turns_search;
CREATE VIEW conversation_turns_search AS
    SELECT (s.rowid << 32) + t.seq AS search_rowid, t.session_id AS session_id,
           t.speaker AS speaker,
           CASE WHEN t.intent = 'forget_memory' THEN NULL ELSE t.user_text END AS user_text,
           CASE WHEN t.intent IN ('unknown', 'reminder_unreadable', 'help', 'forget_memory') THEN NULL
                ELSE t.assistant_text END AS assistant_text
    FROM conversation_turns AS t JOIN conversation_sessions AS s USING (session_id);
CREATE TRIGGER conversation_turns_fts_insert AFTER INSERT ON conversation_turns BEGIN
    INSERT INTO conversation_turns_fts (rowid, session_id, speaker, user_text, assistant_text)
    VALUES (
        ((SELECT rowid FROM conversation_sessions WHERE session_id = new.session_id) << 32)
            + new.seq,
        new.session_id, new.speaker,
        CASE WHEN new.intent = 'forget_memory' THEN NULL ELSE new.user_text END,
        CASE WHEN new.intent IN ('unknown', 'reminder_unreadable', 'help', 'forget_memory') THEN NULL
             ELSE new.assistant_text END);
END;
CREATE TRIGGER conversation_turns_fts_delete AFTER DELETE ON conversation_turns BEGIN
    INSERT INTO conversation_turns_fts
        (conversation_turns_fts, rowid, session_id, speaker, user_text, assistant_text)
    VALUES (
        'delete',
        ((SELECT rowid FROM conversation_sessions WHERE session_id = old.session_id) << 32)
            + old.seq,
        old.session_id, old.speaker,
        CASE WHEN old.intent = 'forget_memory' THEN NULL ELSE old.user_text END,
        CASE WHEN old.intent IN ('unknown', 'reminder_unreadable', 'help', 'forget_memory') THEN NULL
             ELSE old.assistant_text END);
END;
CREATE TRIGGER conversation_turns_fts_update
    AFTER UPDATE OF session_id, seq, speaker, user_text, assistant_text, intent
    ON conversation_turns BEGIN
    INSERT INTO conversation_turns_fts
        (conversation_turns_fts, rowid, session_id, speaker, user_text, assistant_text)
    VALUES (
        'delete',
        ((SELECT rowid FROM conversation_sessions WHERE session_id = old.session_id) << 32)
            + old.seq,
        old.session_id, old.speaker,
        CASE WHEN old.intent = 'forget_memory' THEN NULL ELSE old.user_text END,
        CASE WHEN old.intent IN ('unknown', 'reminder_unreadable', 'help', 'forget_memory') THEN NULL
             ELSE old.assistant_text END);
    INSERT INTO conversation_turns_fts (rowid, session_id, speaker, user_text, assistant_text)
    VALUES (
        ((SELECT rowid FROM conversation_sessions WHERE session_id = new.session_id) << 32)
            + new.seq,
        new.session_id, new.speaker,
        CASE WHEN new.intent = 'forget_memory' THEN NULL ELSE new.user_text END,
        CASE WHEN new.intent IN ('unknown', 'reminder_unreadable', 'help', 'forget_memory') THEN NULL
             ELSE new.assistant_text END);
END;
CREATE TRIGGER conversation_turns_fts_merge_update
    AFTER UPDATE OF session_id, speaker, user_text, assistant_text, intent
    ON conversation_turns BEGIN
    INSERT INTO conversation_turns_fts (conversation_turns_fts, rank) VALUES ('merge', 16);
END;
INSERT INTO conversation_turns_fts (conversation_turns_fts) VALUES ('rebuild');

-- migration: 0014_turn_edits
-- Edited messages (Telegram edited_message, DESIGN.md section 3). An edit replaces its turn's
-- user_text: the turn log stays what the user's messages say now, and the session state, a fold
-- of it (I6), is folded again. The text an edit replaced is kept here, one row per edit, oldest
-- first by rowid. update_id is the edit's own update (not the message's): a redelivered edit
-- changes nothing (I3). Rows go with their turn (the cascade of /forget and prune), and what is
-- deleted is zeroed like every row (secure_delete).
CREATE TABLE turn_edits (
    session_id    TEXT NOT NULL,
    seq           INTEGER NOT NULL,
    edited_at     TEXT NOT NULL,
    previous_text TEXT NOT NULL,
    bot_id        INTEGER NOT NULL DEFAULT 0,
    update_id     INTEGER,
    FOREIGN KEY (session_id, seq)
        REFERENCES conversation_turns (session_id, seq) ON DELETE CASCADE
);
CREATE INDEX turn_edits_turn ON turn_edits (session_id, seq);
CREATE UNIQUE INDEX turn_edits_update
    ON turn_edits (bot_id, update_id) WHERE update_id IS NOT NULL;
-- The turn of an edited message: the chat's sessions, then the message id in each.
CREATE INDEX conversation_sessions_chat ON conversation_sessions (chat_id);
CREATE INDEX conversation_turns_message
    ON conversation_turns (session_id, message_id) WHERE message_id IS NOT NULL;

-- migration: 0015_checkpoint_seq
-- The turn (seq) up to which the session's checkpoint file is known to be written (issue 18,
-- "start in constant time"). NULL: not known (never recorded, or a state change committed
-- since). It is set only after the file is durably written, and only while the row is still at
-- that seq; every state change clears it in its own transaction. So the record may lag the file,
-- never lead it: a start checks the files of the rows this index holds, not every file.
ALTER TABLE conversation_sessions ADD COLUMN checkpoint_seq INTEGER;
CREATE INDEX conversation_sessions_checkpoint_unknown
    ON conversation_sessions (session_id)
    WHERE closed_at IS NULL AND checkpoint_seq IS NOT last_seq;
-- The open sessions with active jobs (reminders): a start holds them at once (their jobs are
-- scheduled before the first reply) and leaves every other session to its first message.
CREATE INDEX conversation_sessions_with_jobs
    ON conversation_sessions (session_id)
    WHERE closed_at IS NULL AND json_array_length(state, '$.active_job_refs') > 0;

-- migration: 0016_jobs
-- Due jobs (reminders, maintenance) across the bot's workers (issue 18, section 3): each
-- worker's timer only says when to look; a worker claims the due jobs no live claim holds
-- (claimed_by, and a lease: claimed_until), fires them and marks them done (done_at) in the
-- transaction of what firing wrote, so a job fires once whichever workers are alive. A claim
-- whose lease ended (its worker died) is claimable again; attempts counts the claims. The
-- payload is JSON; it may hold the user's words, and goes with its chat (/forget).
CREATE TABLE jobs (
    job_id        TEXT PRIMARY KEY,
    kind          TEXT NOT NULL,
    chat_id       INTEGER,
    due_at        TEXT NOT NULL,
    payload       TEXT NOT NULL DEFAULT '{}',
    attempts      INTEGER NOT NULL DEFAULT 0,
    claimed_by    TEXT,
    claimed_until TEXT,
    done_at       TEXT,
    created_at    TEXT NOT NULL
);
CREATE INDEX jobs_due ON jobs (due_at) WHERE done_at IS NULL;
CREATE INDEX jobs_chat ON jobs (chat_id);

-- migration: 0017_bot_settings
-- Settings the bot records for the tools that work on its data (issue 21): the absolute path
-- of its checkpoint directory ('checkpoint_dir'), so that `agent-memory` run from any directory
-- checks and repairs the bot's own files. Written at each start; one row per name.
CREATE TABLE bot_settings (
    name       TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

-- migration: 0018_turn_vectors
-- Each turn's sentence vector, for the optional semantic search (the `semantic` extra,
-- AGENT_EMBEDDING_MODEL; agent/memory/storage/turn_vectors.py): the float32s the named model
-- made of the turn's words, written after the turn's commit, off its path. These rows are the
-- source of truth; the nearest-neighbour index a process searches is a cache rebuilt from them.
-- A vector goes with its turn whatever erases it (the foreign key's cascade: /forget, prune, a
-- session deleted), and an edit of the turn's words drops it (the trigger): the edited turn is
-- then found by its words (FTS5) alone.
CREATE TABLE conversation_turn_vectors (
    session_id TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    model      TEXT NOT NULL,
    vector     BLOB NOT NULL,
    PRIMARY KEY (session_id, seq),
    FOREIGN KEY (session_id, seq)
        REFERENCES conversation_turns (session_id, seq) ON DELETE CASCADE
);
CREATE TRIGGER conversation_turn_vectors_edited
    AFTER UPDATE OF user_text ON conversation_turns
BEGIN
    DELETE FROM conversation_turn_vectors WHERE session_id = NEW.session_id AND seq = NEW.seq;
END;

-- migration: 0019_session_state_parts
-- Bytes written per turn (issue 20, bar 2). A session's state JSON was one value of its row,
-- which every turn rewrote whole: 13 KB at 10,000 turns (13 pages of 1 KiB, a third of what a
-- turn wrote), of which a turn changes 2-3 KB (the summary buffer and items, the topics, the
-- counters). The large fields that most turns leave as they were (the open and closed loops,
-- clarifications, facts, decisions, proposals, resolved entities and the rolling summary) are
-- rows of their own here, each rewritten only when its value changes
-- (agent/memory/storage/session_table.py); the row's state holds the other fields, and a
-- session read joins both. A field never set (at its default) has no row. A row written
-- before keeps its whole state until its next save. The parts go with their session (/forget,
-- prune). The rolling_summary column, a copy of the state's that nothing read, is dropped
-- (2 KB more per turn).
CREATE TABLE conversation_session_parts (
    session_id TEXT NOT NULL REFERENCES conversation_sessions (session_id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    value      TEXT NOT NULL,
    PRIMARY KEY (session_id, name)
) WITHOUT ROWID;
ALTER TABLE conversation_sessions DROP COLUMN rolling_summary;
