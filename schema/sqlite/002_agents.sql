-- Agents of a team. Created through the API, or discovered: the first event of an unknown agent_id
-- creates its row (name = the id), so agents seen in events are listed like created ones.
CREATE TABLE agents (
  team_id        TEXT NOT NULL REFERENCES teams (id),
  external_id    TEXT NOT NULL,            -- the agent_id of events; the id users see
  name           TEXT NOT NULL,
  authorized_by  TEXT,                     -- who authorised the agent; NULL when discovered
  created_at     INTEGER NOT NULL,         -- Unix ms
  created_via    TEXT NOT NULL CHECK (created_via IN ('events', 'api')),
  PRIMARY KEY (team_id, external_id)
) WITHOUT ROWID;
