-- When an agent last spent: set by ingest after each stored batch (the largest event time seen),
-- so the agents list can be ordered by activity without a ClickHouse scan of every agent.
ALTER TABLE agents ADD COLUMN last_event_at INTEGER; -- Unix ms of the agent's latest event; NULL before the first
CREATE INDEX agents_by_activity ON agents (team_id, coalesce(last_event_at, -1) DESC, external_id);

-- Budget policies. Limits are kept as the JSON the user sent (validated), amounts as decimal strings.
CREATE TABLE policies (
  id          TEXT PRIMARY KEY,          -- "pol_" + 20 random base32 characters
  team_id     TEXT NOT NULL REFERENCES teams (id),
  name        TEXT NOT NULL,
  limits      TEXT NOT NULL,             -- JSON array of {kind, amount, endpoint?}
  action      TEXT NOT NULL CHECK (action IN ('flag', 'block')),
  timezone    TEXT,                      -- IANA zone of daily windows; NULL = UTC
  active      INTEGER NOT NULL CHECK (active IN (0, 1)),
  created_at  INTEGER NOT NULL,          -- Unix ms
  updated_at  INTEGER NOT NULL           -- Unix ms
);
CREATE INDEX policies_by_team ON policies (team_id, created_at DESC, id);

-- The agents a policy names (external ids; they need not have been seen yet). A policy without rows
-- here applies to every agent of its team.
CREATE TABLE policy_agents (
  policy_id    TEXT NOT NULL REFERENCES policies (id) ON DELETE CASCADE,
  team_id      TEXT NOT NULL,
  external_id  TEXT NOT NULL,
  PRIMARY KEY (policy_id, external_id)
) WITHOUT ROWID;
CREATE INDEX policy_agents_by_agent ON policy_agents (team_id, external_id);
