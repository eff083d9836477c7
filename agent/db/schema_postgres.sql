-- The PostgreSQL DDL: the same tables as schema.sql (the SQLite DDL, at the repository root),
-- in PostgreSQL's dialect, as named migrations (`-- migration: NNNN_name`) applied in order by
-- agent.db.postgres.migrate_postgres, each recorded in schema_migrations (which the migrator
-- creates itself). The numbering is this file's own: a table arrives here when its store is
-- ported (issue 18), not at the version it has in schema.sql.
--
-- Timestamps stay TEXT in the ISO form agent.utils.timestamps.to_db_time writes, as on SQLite,
-- so that the stores' SQL and comparisons are the same on both backends.

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
    received_at  TEXT NOT NULL,
    processed_at TEXT,
    PRIMARY KEY (bot_id, update_id)
);
CREATE INDEX inbound_updates_pending
    ON inbound_updates (bot_id, update_id) WHERE status = 'pending';
CREATE INDEX inbound_updates_chat ON inbound_updates (chat_id);
