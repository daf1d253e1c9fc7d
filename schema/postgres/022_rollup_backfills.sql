-- Rollups added after data existed are filled once for the records loaded before (the SQLite
-- registry's table of the same name, schema/sqlite/006): a row here says it was done. The shared
-- log never loaded the old way, so legacy_until is 0 here.
CREATE TABLE rollup_backfills (
  name          text PRIMARY KEY,   -- what was backfilled: 'minutes' (spend_minutely_by)
  done_at       bigint NOT NULL,    -- Unix ms
  legacy_until  bigint NOT NULL DEFAULT 0
);
