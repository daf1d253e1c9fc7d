-- The records stored before values existed are valued once (src/ingest/value-backfill.ts): the
-- rollups are given their values, then a mutation writes them into events. A team's asset is listed
-- here once its rollup rows are in, so a run cut short never adds them twice.
CREATE TABLE value_backfills (
  team_id  text NOT NULL,
  asset    text NOT NULL,
  done_at  bigint NOT NULL,
  PRIMARY KEY (team_id, asset)
);
