-- The manifest of the dedup index's runs (src/ingest/dedup/index.ts): sorted, immutable files of
-- claimed (team, id) keys in DATA_DIR/dedup-runs, each with its Bloom filter. A run is listed here
-- in the same transaction that drops what it was made from (a level-0 table ingest_claims_*, an
-- old day table ingest_ids_*, or the runs it merges), so the claimed ids are always in exactly one
-- of them; a file not listed here is removed at start. Level-0 tables are created and dropped by
-- the index, like the day tables before them.
CREATE TABLE ingest_runs (
  file   TEXT PRIMARY KEY,        -- run-NNNNNNNN.db in DATA_DIR/dedup-runs
  day    TEXT NOT NULL,           -- YYYYMMDD: the UTC day of its claims; dropped once the day leaves the window
  level  INTEGER NOT NULL,        -- 0 for a flushed level-0 table; four runs of a day and level merge into level + 1
  rows   INTEGER NOT NULL
);
