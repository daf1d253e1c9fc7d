-- Webhook endpoints: where a team's alert events are delivered. `standard` endpoints sign each
-- delivery (Standard Webhooks) with their secret; after a rotation the previous secret signs too,
-- until previous_secret_until. `slack` endpoints get Slack incoming-webhook messages, unsigned.
-- Secrets are kept in clear: signing needs them (protect DATA_DIR as you protect the keys it signs).
CREATE TABLE webhook_endpoints (
  id                     TEXT PRIMARY KEY,                    -- whk_…
  team_id                TEXT NOT NULL REFERENCES teams (id),
  url                    TEXT NOT NULL,
  description            TEXT,
  events                 TEXT NOT NULL,                       -- JSON array of event types
  format                 TEXT NOT NULL CHECK (format IN ('standard', 'slack')),
  active                 INTEGER NOT NULL DEFAULT 1,
  secret                 TEXT,                                -- whsec_…; NULL for slack
  previous_secret        TEXT,                                -- the secret before the last rotation
  previous_secret_until  INTEGER,                             -- Unix ms: until then it signs too
  disabled_at            INTEGER,                             -- set when deliveries failed for 24 hours
  disabled_reason        TEXT,
  created_at             INTEGER NOT NULL,
  updated_at             INTEGER NOT NULL
);
CREATE INDEX webhook_endpoints_by_team ON webhook_endpoints (team_id, created_at);
