-- The ingest log of the shared store: a request is acknowledged once its records' claims and their
-- chunk are committed here (src/ingest/shared-log.ts); the loader copies chunks into ClickHouse.

-- The (team, id) index that makes ingest exactly-once, partitioned by the UTC day of the claim
-- (YYYYMMDD), so that expiry drops a whole partition. Partitions are made a day ahead and dropped
-- past the window by the instances (under an advisory lock). Unique per day: two instances
-- claiming one id at once meet at the index entry, the second waits for the first to commit and
-- finds it a duplicate; in the first minutes of a day claims go into the day before too, so two
-- claims either side of midnight meet as well.
CREATE TABLE ingest_claims (
  team_id    text NOT NULL,
  id         text NOT NULL,
  claim_day  integer NOT NULL,   -- UTC day of the claim, YYYYMMDD
  record_fp  bigint,             -- the record's content print (src/ingest/log.ts ContentPrint)
  PRIMARY KEY (team_id, id, claim_day)
) PARTITION BY RANGE (claim_day);

-- Positions of records in the log, taken a chunk at a time: a chunk's rows are first_pos + 0, 1, …
-- (at most 65,536 rows a chunk). A sequence is never rolled back and never waits, so instances
-- never queue on it; a rolled-back chunk leaves a gap, which nothing needs filled.
CREATE SEQUENCE ingest_positions INCREMENT BY 65536 START WITH 65536;

-- One chunk per acknowledging transaction and team: the records' TSV lines (src/ingest/tsv.ts).
CREATE TABLE ingest_chunks (
  first_pos     bigint PRIMARY KEY,
  last_pos      bigint NOT NULL,
  team_id       text NOT NULL,
  rows          integer NOT NULL,
  bytes         integer NOT NULL,
  committed_at  bigint NOT NULL,   -- Unix ms (the age of the backlog)
  body          bytea NOT NULL,
  block_id      bigint             -- the loader's block once taken into one; NULL: not yet
);
CREATE INDEX ingest_chunks_unloaded ON ingest_chunks (first_pos) WHERE block_id IS NULL;
