-- Ask a person, allow only what is known (issue 32): a policy's third action `approve` with its
-- approval timeout and its allowlist; authorizations that wait for a person (`pending`) and who
-- decided them; alerts of type `approval`. SQLite cannot change a CHECK constraint, so the three
-- tables are rebuilt as they were with the wider checks. policy_agents refers to policies (ON
-- DELETE CASCADE), so its rows are set aside while policies is rebuilt, never cascaded away.

CREATE TABLE policy_agents_kept AS SELECT policy_id, team_id, external_id FROM policy_agents;
DROP TABLE policy_agents;
CREATE TABLE policies_rebuilt (
  id                  TEXT PRIMARY KEY,          -- "pol_" + 20 random base32 characters
  team_id             TEXT NOT NULL REFERENCES teams (id),
  name                TEXT NOT NULL,
  limits              TEXT NOT NULL,             -- JSON array of {kind, amount | count, endpoint?}
  action              TEXT NOT NULL CHECK (action IN ('flag', 'block', 'approve')),
  timezone            TEXT,                      -- IANA zone of daily windows; NULL = UTC
  active              INTEGER NOT NULL CHECK (active IN (0, 1)),
  created_at          INTEGER NOT NULL,          -- Unix ms
  updated_at          INTEGER NOT NULL,          -- Unix ms
  scope               TEXT NOT NULL DEFAULT 'agent' CHECK (scope IN ('agent', 'pool')),
  match_filter        TEXT,                      -- JSON {categories?, networks?, assets?, endpoints?, tags?}; NULL: every record
  notify_at           TEXT NOT NULL DEFAULT '[]',
  starts_at           INTEGER,
  approval_timeout_s  INTEGER,                   -- approve: how long an authorization waits for a person; NULL: 900
  allow_list          TEXT                       -- JSON {payees?, networks?, assets?, endpoints?}; NULL: no allowlist
);
INSERT INTO policies_rebuilt (id, team_id, name, limits, action, timezone, active, created_at, updated_at, scope, match_filter, notify_at, starts_at)
  SELECT id, team_id, name, limits, action, timezone, active, created_at, updated_at, scope, match_filter, notify_at, starts_at FROM policies;
DROP TABLE policies;
ALTER TABLE policies_rebuilt RENAME TO policies;
CREATE INDEX policies_by_team ON policies (team_id, created_at DESC, id);
CREATE TABLE policy_agents (
  policy_id    TEXT NOT NULL REFERENCES policies (id) ON DELETE CASCADE,
  team_id      TEXT NOT NULL,
  external_id  TEXT NOT NULL,
  PRIMARY KEY (policy_id, external_id)
) WITHOUT ROWID;
INSERT INTO policy_agents SELECT policy_id, team_id, external_id FROM policy_agents_kept;
DROP TABLE policy_agents_kept;
CREATE INDEX policy_agents_by_agent ON policy_agents (team_id, external_id);

-- pending: an approve policy's limit would be broken; its amount is held (expires_at is when the
-- wait ends: past it, it reads as declined) until a person approves (then held, expires_at from
-- the approval plus hold_s) or denies it.
CREATE TABLE authorizations_rebuilt (
  id               TEXT PRIMARY KEY,
  team_id          TEXT NOT NULL REFERENCES teams (id),
  agent_id         TEXT NOT NULL,
  endpoint         TEXT NOT NULL,
  domain           TEXT NOT NULL,
  amount           TEXT NOT NULL,
  asset            TEXT,
  network          TEXT,
  payee_address    TEXT,
  decision         TEXT NOT NULL CHECK (decision IN ('approved', 'declined', 'pending')),
  state            TEXT NOT NULL CHECK (state IN ('held', 'captured', 'voided', 'declined', 'pending')),
  checks           TEXT NOT NULL,
  reasons          TEXT NOT NULL,
  idempotency_key  TEXT,
  created_at       INTEGER NOT NULL,
  expires_at       INTEGER NOT NULL,
  captured_amount  TEXT,
  captured_at      INTEGER,
  captured_by      TEXT,
  voided_at        INTEGER,
  category         TEXT,
  tags             TEXT,
  hold_s           INTEGER,                -- the hold asked for (expires_in_s): an approval holds this long from its decision
  pending_until    INTEGER,                -- Unix ms: when an unanswered wait ends (declined); NULL: never pending
  decided_at       INTEGER,                -- Unix ms of the person's decision, or of the wait's end
  decided_by       TEXT,                   -- the deciding key's name; NULL: decided by the policies or the timeout
  decision_note    TEXT
);
INSERT INTO authorizations_rebuilt (id, team_id, agent_id, endpoint, domain, amount, asset, network, payee_address, decision, state, checks, reasons,
                                    idempotency_key, created_at, expires_at, captured_amount, captured_at, captured_by, voided_at, category, tags)
  SELECT id, team_id, agent_id, endpoint, domain, amount, asset, network, payee_address, decision, state, checks, reasons,
         idempotency_key, created_at, expires_at, captured_amount, captured_at, captured_by, voided_at, category, tags FROM authorizations;
DROP TABLE authorizations;
ALTER TABLE authorizations_rebuilt RENAME TO authorizations;
CREATE UNIQUE INDEX authorizations_idempotency ON authorizations (team_id, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX authorizations_team_created ON authorizations (team_id, created_at DESC, id DESC);
CREATE INDEX authorizations_team_agent ON authorizations (team_id, agent_id, created_at DESC);
-- Holds still counting (held, or pending a person) are read back at start-up by this.
CREATE INDEX authorizations_live ON authorizations (expires_at) WHERE state IN ('held', 'pending');
-- Pending ones whose wait has ended: the sweep that writes them declined.
CREATE INDEX authorizations_pending ON authorizations (expires_at) WHERE state = 'pending';

CREATE TABLE alerts_rebuilt (
  id                TEXT PRIMARY KEY,
  team_id           TEXT NOT NULL REFERENCES teams (id),
  dedup_key         TEXT NOT NULL,
  type              TEXT NOT NULL CHECK (type IN ('violation', 'anomaly', 'system', 'threshold', 'approval')),
  kind              TEXT NOT NULL,         -- ... the limit's kind for thresholds and approvals, not_allowed for an allowlist
  severity          TEXT NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
  status            TEXT NOT NULL CHECK (status IN ('open', 'resolved')),
  agent_id          TEXT NOT NULL,         -- empty for system alerts
  policy_id         TEXT,
  window_start      INTEGER,
  window_end        INTEGER,
  observed          TEXT,
  limit_value       TEXT,
  subject           TEXT,                  -- for webhook_disabled: the endpoint id; for approvals: the authorization id
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
CREATE INDEX alerts_threshold_open ON alerts (window_end) WHERE status = 'open' AND type = 'threshold';
