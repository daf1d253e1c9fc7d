-- The loader of the shared ingest log (src/ingest/shared-loader.ts): one instance at a time (a
-- session advisory lock) copies chunks into ClickHouse in blocks.

-- The id of this log, in ClickHouse's deduplication tokens: "<log id>:b<block id>:<table>".
CREATE TABLE ingest_loader (
  id      integer PRIMARY KEY CHECK (id = 1),
  log_id  text NOT NULL
);
INSERT INTO ingest_loader (id, log_id) VALUES (1, 'pg-' || md5(random()::text || clock_timestamp()::text));

-- Blocks recorded before their insert, so a block inserted again (after a crash, or by the
-- instance that takes over) has the same token and is dropped by ClickHouse. A block is a set of
-- chunks (ingest_chunks.block_id = origin): positions of chunks committed at once interleave, so
-- it is listed by its position ranges. A block ClickHouse refuses for its data is split into
-- blocks of the same origin; the chunks go once no block of their origin is left.
CREATE TABLE ingest_blocks (
  id       bigserial PRIMARY KEY,
  origin   bigint NOT NULL,
  ranges   text NOT NULL,      -- JSON [[first_pos, last_pos], ...]
  made_at  bigint NOT NULL
);
CREATE INDEX ingest_blocks_origin ON ingest_blocks (origin);

-- Records ClickHouse refused, set aside with their line (as schema/sqlite's ingest_rejects).
CREATE TABLE ingest_rejects (
  pos          bigint PRIMARY KEY,
  team_id      text NOT NULL,
  id           text NOT NULL,
  line         bytea NOT NULL,
  error        text NOT NULL,
  rejected_at  bigint NOT NULL
);
CREATE INDEX ingest_chunks_by_team ON ingest_chunks (team_id, first_pos);
