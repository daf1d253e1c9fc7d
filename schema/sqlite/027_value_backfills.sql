-- The records stored before values existed are valued once (src/ingest/value-backfill.ts): the
-- rollups are given their values, then a mutation writes them into events. A team's asset is listed
-- here once its rollup rows are in, so a run cut short never adds them twice.
CREATE TABLE value_backfills (
  team_id  TEXT NOT NULL,
  asset    TEXT NOT NULL,
  done_at  INTEGER NOT NULL,   -- Unix ms: its rollup rows are in; its mutation was sent
  PRIMARY KEY (team_id, asset)
) WITHOUT ROWID;
