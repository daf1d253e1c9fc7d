-- The (team, time) indexes of the newest-first lists, authorizations and alerts, keyed in
-- ascending time: the lists read them backwards, which SQLite does as cheaply (the same search, no
-- sort). Keyed DESC, every new row went in at the left end of its range, and SQLite's page split
-- leaves the pages behind such an insert half empty: twice the pages on disk and in the cache, and
-- more of them rewritten into the WAL at each commit. Ascending, a new row goes in at the right end
-- of its range, where the pages behind it stay full (issue 33, docs/performance.md: the team's
-- index of authorizations took 36 pages per 1,000 rows, half of each unused; now 20).
DROP INDEX authorizations_team_created;
CREATE INDEX authorizations_team_created ON authorizations (team_id, created_at, id);
DROP INDEX alerts_by_team;
CREATE INDEX alerts_by_team ON alerts (team_id, created_at, id);
-- The agent's list (`GET /authorizations?agent=`) orders by time and then id: without the id in
-- the index, the planner preferred to walk the whole team's list and skip other agents' rows
-- (60 ms for an agent with 6 of a team's 300,000; now 0.07 ms).
DROP INDEX authorizations_team_agent;
CREATE INDEX authorizations_team_agent ON authorizations (team_id, agent_id, created_at, id);
-- The alerts' lists by agent (the dashboard's agent page) and by status (open ones) had no index
-- of their own either: the team's whole history was walked for an agent or a status it seldom has
-- (65 ms for 20 open alerts among 300,000; now 0.15 ms). Occurrences of an open alert update its
-- count and times, which neither index holds.
CREATE INDEX alerts_by_agent ON alerts (team_id, agent_id, created_at, id);
CREATE INDEX alerts_by_status ON alerts (team_id, status, created_at, id);
