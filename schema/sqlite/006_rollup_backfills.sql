-- Rollup dimensions added after data existed (asset, unpriced) are filled by inserts of their own,
-- with tokens of their own, for every block loaded from then on; the blocks loaded before are
-- filled once, at the loader's start, by a backfill named here when it is done (src/ingest/loader.ts).
CREATE TABLE rollup_backfills (
  name     TEXT PRIMARY KEY,   -- the rollup insert it completes, e.g. spend_hourly_by:asset
  done_at  INTEGER NOT NULL    -- Unix ms
);
