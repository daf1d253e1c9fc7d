-- Events now reach ClickHouse from the local ingest log (src/ingest/loader.ts), in large blocks,
-- each with an insert_deduplication_token made from its log positions. A block inserted twice
-- (a retry after a crash or a timeout) must be stored once in events and in every rollup: plain
-- MergeTree remembers the tokens of its last N blocks only when this window is above 0, and views
-- de-duplicate their blocks when their target table has a window too.
--
-- The loader prunes the log once ClickHouse has a block, so the block must survive a power loss:
-- parts are fsynced (files and directory). Blocks are about 10,000 rows, so the cost is spread
-- (measured in the README, Performance).
ALTER TABLE events MODIFY SETTING non_replicated_deduplication_window = 1000, fsync_after_insert = 1, fsync_part_directory = 1;
ALTER TABLE spend_hourly_by MODIFY SETTING non_replicated_deduplication_window = 1000, fsync_after_insert = 1, fsync_part_directory = 1;
ALTER TABLE spend_minutely MODIFY SETTING non_replicated_deduplication_window = 1000, fsync_after_insert = 1, fsync_part_directory = 1;
ALTER TABLE spend_daily_by MODIFY SETTING non_replicated_deduplication_window = 1000, fsync_after_insert = 1, fsync_part_directory = 1;

-- Duplicates are found in the log's (team, id) index now, so the by-id projection (half the files
-- of every part) has no reader left but GET /audit/:id, which a bloom filter on id serves: the
-- sort key narrows to the team, the filter to the granules that may hold the id.
ALTER TABLE events DROP PROJECTION IF EXISTS by_id;
ALTER TABLE events ADD INDEX IF NOT EXISTS id_bloom id TYPE bloom_filter(0.001) GRANULARITY 1;
ALTER TABLE events MATERIALIZE INDEX id_bloom;
