-- Alerts of type `system`: notices from the service itself (a webhook endpoint disabled after
-- failing for 24 hours). SQLite cannot change a CHECK constraint, so the table is rebuilt as it was
-- with the wider check, rows and indexes included.
CREATE TABLE alerts_rebuilt (
  id                TEXT PRIMARY KEY,
  team_id           TEXT NOT NULL REFERENCES teams (id),
  dedup_key         TEXT NOT NULL,
  type              TEXT NOT NULL CHECK (type IN ('violation', 'anomaly', 'system')),
  kind              TEXT NOT NULL,         -- ... and webhook_disabled for system alerts
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

-- The webhook outbox and delivery log: one row per event per endpoint, written in the same
-- transaction as the alert change that causes it; the dispatcher sends it in the background.
CREATE TABLE webhook_deliveries (
  seq              INTEGER PRIMARY KEY AUTOINCREMENT,  -- order; the delivery log pages by it
  id               TEXT NOT NULL UNIQUE,               -- dlv_…
  team_id          TEXT NOT NULL,
  endpoint_id      TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
  event_id         TEXT NOT NULL,                      -- evt_…: the same for every endpoint; receivers drop copies by it
  event_type       TEXT NOT NULL,
  payload          TEXT NOT NULL,                      -- the event as JSON: {type, id, timestamp, data}
  status           TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts         INTEGER NOT NULL DEFAULT 0,
  next_attempt_at  INTEGER,                            -- Unix ms; NULL once delivered or failed
  last_attempt_at  INTEGER,
  last_status_code INTEGER,                            -- HTTP status of the last attempt; NULL: no answer
  last_latency_ms  INTEGER,
  last_error       TEXT,                               -- timeout, network error, or what a non-2xx answer said
  response_body    TEXT,                               -- the last answer's body, truncated
  created_at       INTEGER NOT NULL,
  delivered_at     INTEGER
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, seq);

-- Since when an endpoint has failed every attempt (NULL: its last attempt succeeded, or none).
ALTER TABLE webhook_endpoints ADD COLUMN failing_since INTEGER;
