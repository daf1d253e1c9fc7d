-- Budgets the way finance sets them (issue 31): a policy's scope (each agent its own totals, or
-- one pooled total for its agents), its filter (which records count), its early warnings and the
-- start of its `total` window.
ALTER TABLE policies ADD COLUMN scope TEXT NOT NULL DEFAULT 'agent' CHECK (scope IN ('agent', 'pool'));
ALTER TABLE policies ADD COLUMN match_filter TEXT;                         -- JSON {categories?, networks?, assets?, endpoints?, tags?}; NULL: every record
ALTER TABLE policies ADD COLUMN notify_at TEXT NOT NULL DEFAULT '[]'; -- JSON percentages of each limit that raise a threshold alert
ALTER TABLE policies ADD COLUMN starts_at INTEGER;                   -- Unix ms, a whole minute: where `total` limits start; NULL (older rows): created_at's minute

-- What an authorization's filters read beyond asset and network: its category and tags, so the
-- holds rebuilt at start count in the same filtered totals as when it was decided.
ALTER TABLE authorizations ADD COLUMN category TEXT;
ALTER TABLE authorizations ADD COLUMN tags TEXT;                     -- JSON array

-- Alerts of type `threshold`: a budget reached one of its policy's notify_at percentages. SQLite
-- cannot change a CHECK constraint, so the table is rebuilt as it was with the wider check.
CREATE TABLE alerts_rebuilt (
  id                TEXT PRIMARY KEY,
  team_id           TEXT NOT NULL REFERENCES teams (id),
  dedup_key         TEXT NOT NULL,
  type              TEXT NOT NULL CHECK (type IN ('violation', 'anomaly', 'system', 'threshold')),
  kind              TEXT NOT NULL,         -- ... webhook_disabled for system alerts, the limit's kind for thresholds
  severity          TEXT NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
  status            TEXT NOT NULL CHECK (status IN ('open', 'resolved')),
  agent_id          TEXT NOT NULL,         -- empty for system alerts
  policy_id         TEXT,
  window_start      INTEGER,
  window_end        INTEGER,
  observed          TEXT,
  limit_value       TEXT,
  subject           TEXT,                  -- for webhook_disabled: the endpoint id
  details           TEXT NOT NULL,
  message           TEXT NOT NULL,
  sample_event_ids  TEXT NOT NULL,
  count             INTEGER NOT NULL,
  first_seen        INTEGER NOT NULL,
  last_seen         INTEGER NOT NULL,
  created_at        INTEGER NOT NULL,
  updated_at        INTEGER NOT NULL,
  resolved_at       INTEGER,
  resolution        TEXT
);
INSERT INTO alerts_rebuilt SELECT * FROM alerts;
DROP TABLE alerts;
ALTER TABLE alerts_rebuilt RENAME TO alerts;
CREATE UNIQUE INDEX alerts_open_once ON alerts (team_id, dedup_key) WHERE status = 'open';
CREATE INDEX alerts_by_team ON alerts (team_id, created_at DESC, id DESC);
-- Open threshold alerts by the end of their window: the sweep that resolves them when it ends.
CREATE INDEX alerts_threshold_open ON alerts (window_end) WHERE status = 'open' AND type = 'threshold';
