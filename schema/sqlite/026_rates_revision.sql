-- Raised by every change to a team's rates or currency: an instance compares it with the rates it
-- holds in memory, so a change it missed is read again.
ALTER TABLE teams ADD COLUMN rates_revision INTEGER NOT NULL DEFAULT 0;

-- The ingest log's chunks now carry each record's value (src/ingest/rowbinary.ts, format
-- rowbinary2); the format checks are rebuilt to admit it (SQLite cannot alter a CHECK). The log
-- holds only what is not yet loaded, and the blocks the loader recorded: small tables.
CREATE TABLE ingest_log_next (
  first_pos     INTEGER PRIMARY KEY,
  last_pos      INTEGER NOT NULL,
  team_id       TEXT NOT NULL,
  rows          INTEGER NOT NULL,
  bytes         INTEGER NOT NULL,
  committed_at  INTEGER NOT NULL,
  body          BLOB NOT NULL,
  format        TEXT NOT NULL DEFAULT 'tsv' CHECK (format IN ('tsv', 'rowbinary', 'rowbinary2'))
);
INSERT INTO ingest_log_next (first_pos, last_pos, team_id, rows, bytes, committed_at, body, format)
  SELECT first_pos, last_pos, team_id, rows, bytes, committed_at, body, format FROM ingest_log;
DROP TABLE ingest_log;
ALTER TABLE ingest_log_next RENAME TO ingest_log;

CREATE TABLE ingest_blocks_next (
  first_pos  INTEGER PRIMARY KEY,
  last_pos   INTEGER NOT NULL,
  format     TEXT NOT NULL DEFAULT 'tsv' CHECK (format IN ('tsv', 'rowbinary', 'rowbinary2'))
);
INSERT INTO ingest_blocks_next (first_pos, last_pos, format) SELECT first_pos, last_pos, format FROM ingest_blocks;
DROP TABLE ingest_blocks;
ALTER TABLE ingest_blocks_next RENAME TO ingest_blocks;
