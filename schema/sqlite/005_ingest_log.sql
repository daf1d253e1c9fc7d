-- The ingest log: a request is acknowledged once its records are committed here (WAL, synchronous
-- FULL: synced to disk). A background loader copies the log into ClickHouse in large blocks and
-- prunes what is loaded. It lives in the registry file so that the (team, id) claim, the append,
-- the alerts its evaluation raises and the agents it discovers commit in one transaction.
--
-- The (team, id) index that makes ingest exactly-once is not here: it is partitioned by UTC day
-- into tables ingest_ids_YYYYMMDD (team_id, id), created and dropped by src/ingest/log.ts, so that
-- expiry drops a whole table instead of deleting rows.

-- One chunk per group commit and team: the records' TSV lines, positions first_pos..last_pos.
CREATE TABLE ingest_log (
  first_pos     INTEGER PRIMARY KEY,     -- position of the chunk's first record; positions never repeat
  last_pos      INTEGER NOT NULL,        -- position of its last record (first_pos + rows - 1)
  team_id       TEXT NOT NULL,
  rows          INTEGER NOT NULL,
  bytes         INTEGER NOT NULL,        -- length of body
  committed_at  INTEGER NOT NULL,        -- Unix ms of the commit (the age of the backlog)
  body          BLOB NOT NULL            -- TabSeparated lines, columns as in src/ingest/tsv.ts
);

-- The loader's progress. loaded_pos: every record at or below it is in ClickHouse. log_id makes
-- the blocks' deduplication tokens unique to this log, should its positions ever start again.
CREATE TABLE ingest_loader (
  id          INTEGER PRIMARY KEY CHECK (id = 1),
  log_id      TEXT NOT NULL,
  loaded_pos  INTEGER NOT NULL
);
INSERT INTO ingest_loader (id, log_id, loaded_pos) VALUES (1, lower(hex(randomblob(8))), 0);

-- Blocks recorded before their insert and deleted once ClickHouse confirmed them: after a crash
-- the loader inserts exactly these again (same boundaries, same token), so ClickHouse drops what
-- it already has.
CREATE TABLE ingest_blocks (
  first_pos  INTEGER PRIMARY KEY,
  last_pos   INTEGER NOT NULL
);

-- Records ClickHouse refused on their own (found by splitting a refused block): kept, not retried.
CREATE TABLE ingest_rejects (
  pos          INTEGER PRIMARY KEY,
  team_id      TEXT NOT NULL,
  id           TEXT NOT NULL,
  line         BLOB NOT NULL,            -- the TSV line as the loader sent it
  error        TEXT NOT NULL,            -- ClickHouse's message
  rejected_at  INTEGER NOT NULL          -- Unix ms
);
