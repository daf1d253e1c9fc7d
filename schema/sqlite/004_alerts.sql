-- Alerts: policy breaches, client-reported blocks and flags, anomalies. One open alert per
-- breach: further occurrences update it (count, last seen, latest observed value).
CREATE TABLE alerts (
  id                TEXT PRIMARY KEY,      -- "alr_" + 20 random base32 characters
  team_id           TEXT NOT NULL REFERENCES teams (id),
  dedup_key         TEXT NOT NULL,         -- what makes two occurrences the same breach (agent, policy, limit, window / anomaly, subject)
  type              TEXT NOT NULL CHECK (type IN ('violation', 'anomaly')),
  kind              TEXT NOT NULL,         -- limit kind (per_call, per_hour, daily, per_endpoint), client_blocked, client_flagged, spike, new_payee, loop
  severity          TEXT NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
  status            TEXT NOT NULL CHECK (status IN ('open', 'resolved')),
  agent_id          TEXT NOT NULL,
  policy_id         TEXT,                  -- the breached policy; NULL for anomalies and client reports
  window_start      INTEGER,               -- Unix ms; NULL when no window applies
  window_end        INTEGER,
  observed          TEXT,                  -- latest observed value (decimal string: spend, amount or a call count)
  limit_value       TEXT,                  -- the limit or threshold it was compared with
  subject           TEXT,                  -- what the alert is about besides the agent: endpoint pattern, URL, payee, domain
  details           TEXT NOT NULL,         -- JSON object of kind-specific facts (spike factor and baseline, late window, ...)
  message           TEXT NOT NULL,
  sample_event_ids  TEXT NOT NULL,         -- JSON array, at most 10 event ids, first occurrences first
  count             INTEGER NOT NULL,
  first_seen        INTEGER NOT NULL,      -- event times, Unix ms
  last_seen         INTEGER NOT NULL,
  created_at        INTEGER NOT NULL,
  updated_at        INTEGER NOT NULL,
  resolved_at       INTEGER,
  resolution        TEXT
);
-- At most one open alert per breach; a resolved one does not block a new one.
CREATE UNIQUE INDEX alerts_open_once ON alerts (team_id, dedup_key) WHERE status = 'open';
CREATE INDEX alerts_by_team ON alerts (team_id, created_at DESC, id DESC);

-- Payees each agent has paid, so a first payment to a new payee stands out across restarts.
CREATE TABLE agent_payees (
  team_id     TEXT NOT NULL,
  agent_id    TEXT NOT NULL,
  payee       TEXT NOT NULL,
  first_seen  INTEGER NOT NULL,            -- event time, Unix ms
  PRIMARY KEY (team_id, agent_id, payee)
) WITHOUT ROWID;
