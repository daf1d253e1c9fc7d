-- Rollup dimensions added after data existed (asset, unpriced) are filled, at the loader's first
-- start with them, for every record loaded before; a row here says it was done, and up to which log
-- position blocks had been recorded the old way (src/ingest/loader.ts, backfillRollups).
CREATE TABLE rollup_backfills (
  name          TEXT PRIMARY KEY,   -- what was backfilled: 'asset' (the asset and unpriced dimensions)
  done_at       INTEGER NOT NULL,   -- Unix ms
  legacy_until  INTEGER NOT NULL    -- blocks ending at or before this position load the old way, plus the new dimensions on their own
);
