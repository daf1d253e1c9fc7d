-- The (team, time) indexes of the newest-first lists, authorizations and alerts, keyed in
-- ascending time, as in SQLite's 022: the lists read them backwards (an index scan backward, no
-- sort). A B-tree page that takes rows at the right end of a range of keys splits so that the page
-- left behind stays full (PostgreSQL detects such localized ascending inserts); one that takes
-- them at the left end, as a DESC key does for each new row, leaves half-empty pages behind.
DROP INDEX authorizations_team_created;
CREATE INDEX authorizations_team_created ON authorizations (team_id, created_at, id);
DROP INDEX alerts_by_team;
CREATE INDEX alerts_by_team ON alerts (team_id, created_at, id);
-- The agent's list orders by time and then id: with the id in the index it needs no sort.
DROP INDEX authorizations_team_agent;
CREATE INDEX authorizations_team_agent ON authorizations (team_id, agent_id, created_at, id);
-- The alerts' lists by agent and by status (open ones) get indexes of their own: without them the
-- team's whole history was read for an agent or a status it seldom has.
CREATE INDEX alerts_by_agent ON alerts (team_id, agent_id, created_at, id);
CREATE INDEX alerts_by_status ON alerts (team_id, status, created_at, id);
